using System.Text.Json.Nodes;
using Microsoft.Data.Sqlite;

namespace AgentGraph.Sdk.Outbox;

/// <summary>
/// The outbox on Microsoft.Data.Sqlite, with the TypeScript SDK's table layout: WAL, synchronous=FULL, an exclusive
/// lock held while open (one process owns the file), every state change one guarded UPDATE.
/// </summary>
public sealed class SqliteOutboxStore : IOutboxStore
{
    private readonly SqliteConnection _db;
    private readonly SemaphoreSlim _gate = new(1, 1);

    /// <summary>
    /// The schema, forward-only: migration <c>n</c> (1-based) runs once, when the file's <c>PRAGMA user_version</c>
    /// is below <c>n</c>, and the version is raised in the same transaction. Files written before versioning have
    /// version 0 and the table already: the first step is idempotent (IF NOT EXISTS) for them.
    /// </summary>
    internal static readonly string[] Migrations =
    [
        """
        CREATE TABLE IF NOT EXISTS outbox_entries (
          seq INTEGER PRIMARY KEY AUTOINCREMENT,
          id TEXT NOT NULL UNIQUE,
          room TEXT NOT NULL,
          operation TEXT NOT NULL,
          variables TEXT NOT NULL,
          idempotency_key TEXT NOT NULL UNIQUE,
          state TEXT NOT NULL CHECK (state IN ('QUEUED', 'SENDING', 'RETRYABLE', 'SENT', 'POISON', 'EXPIRED')),
          attempts INTEGER NOT NULL DEFAULT 0,
          next_attempt_at REAL,
          last_error_code TEXT,
          last_error_message TEXT,
          created_at REAL NOT NULL,
          updated_at REAL NOT NULL,
          expires_at REAL NOT NULL,
          first_attempt_at REAL
        );
        CREATE INDEX IF NOT EXISTS outbox_entries_pending ON outbox_entries (room, seq)
          WHERE state IN ('QUEUED', 'SENDING', 'RETRYABLE');
        """,
        // 2: poison after MaxFailedDeliveries failed deliveries; entries already in the file start at 0.
        "ALTER TABLE outbox_entries ADD COLUMN failed_deliveries INTEGER NOT NULL DEFAULT 0;",
    ];

    private SqliteOutboxStore(SqliteConnection db) => _db = db;

    /// <summary>Opens (creating) the outbox file and takes its exclusive lock.</summary>
    public static SqliteOutboxStore Open(string path, bool synchronousFull = true)
    {
        var db = SqliteFiles.Open(path, synchronousFull);
        try
        {
            SqliteFiles.Migrate(db, Migrations, path);
        }
        catch
        {
            db.Dispose();
            throw;
        }
        return new SqliteOutboxStore(db);
    }

    private static OutboxEntry Read(SqliteDataReader r) => new()
    {
        Seq = r.GetInt64(r.GetOrdinal("seq")),
        Id = r.GetString(r.GetOrdinal("id")),
        Room = r.GetString(r.GetOrdinal("room")),
        Operation = r.GetString(r.GetOrdinal("operation")),
        Variables = JsonNode.Parse(r.GetString(r.GetOrdinal("variables")))!.AsObject(),
        IdempotencyKey = r.GetString(r.GetOrdinal("idempotency_key")),
        State = Enum.Parse<OutboxState>(r.GetString(r.GetOrdinal("state"))),
        Attempts = r.GetInt32(r.GetOrdinal("attempts")),
        FailedDeliveries = r.GetInt32(r.GetOrdinal("failed_deliveries")),
        NextAttemptAt = r.IsDBNull(r.GetOrdinal("next_attempt_at")) ? null : r.GetDouble(r.GetOrdinal("next_attempt_at")),
        LastError = r.IsDBNull(r.GetOrdinal("last_error_code"))
            ? null
            : new OutboxErrorInfo(r.GetString(r.GetOrdinal("last_error_code")), r.IsDBNull(r.GetOrdinal("last_error_message")) ? "" : r.GetString(r.GetOrdinal("last_error_message"))),
        CreatedAt = r.GetDouble(r.GetOrdinal("created_at")),
        UpdatedAt = r.GetDouble(r.GetOrdinal("updated_at")),
        ExpiresAt = r.GetDouble(r.GetOrdinal("expires_at")),
        FirstAttemptAt = r.IsDBNull(r.GetOrdinal("first_attempt_at")) ? null : r.GetDouble(r.GetOrdinal("first_attempt_at")),
    };

    private async Task<T> Locked<T>(Func<T> action, CancellationToken cancellationToken)
    {
        await _gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            return action();
        }
        finally
        {
            _gate.Release();
        }
    }

    private List<OutboxEntry> Query(string sql, params object?[] args)
    {
        using var cmd = SqliteFiles.Command(_db, sql, args);
        using var r = cmd.ExecuteReader();
        var list = new List<OutboxEntry>();
        while (r.Read()) list.Add(Read(r));
        return list;
    }

    /// <inheritdoc/>
    public Task<OutboxEntry> AddAsync(string id, string room, string operation, JsonObject variables, string key, double createdAt, double expiresAt, CancellationToken cancellationToken = default) =>
        Locked(() =>
        {
            NonQuery(
                """
                INSERT INTO outbox_entries (id, room, operation, variables, idempotency_key, state, created_at, updated_at, expires_at)
                VALUES ($1, $2, $3, $4, $5, 'QUEUED', $6, $6, $7)
                """, id, room, operation, variables.ToJsonString(), key, createdAt, expiresAt);
            return Query("SELECT * FROM outbox_entries WHERE id = $1", id)[0];
        }, cancellationToken);

    // Changes run as plain statements (ExecuteNonQuery) and are read back with a SELECT: an UPDATE ... RETURNING
    // read through SqliteDataReader was seen to publish its change late, so RETURNING is not used.
    private int NonQuery(string sql, params object?[] args)
    {
        using var cmd = SqliteFiles.Command(_db, sql, args);
        return cmd.ExecuteNonQuery();
    }

    /// <inheritdoc/>
    public Task<IReadOnlyList<OutboxEntry>> ListAsync(IReadOnlyCollection<OutboxState>? states = null, CancellationToken cancellationToken = default) =>
        Locked<IReadOnlyList<OutboxEntry>>(() => states is null
            ? Query("SELECT * FROM outbox_entries ORDER BY seq")
            : Query($"SELECT * FROM outbox_entries WHERE state IN ({string.Join(", ", states.Select(s => $"'{s}'"))}) ORDER BY seq"), cancellationToken);

    /// <inheritdoc/>
    public Task<IReadOnlyList<OutboxEntry>> HeadsAsync(CancellationToken cancellationToken = default) => Locked<IReadOnlyList<OutboxEntry>>(() => Query(
        """
        SELECT e.* FROM outbox_entries e
          JOIN (SELECT MIN(seq) AS seq FROM outbox_entries WHERE state IN ('QUEUED', 'SENDING', 'RETRYABLE') GROUP BY room) h
            ON e.seq = h.seq
          ORDER BY e.seq
        """), cancellationToken);

    /// <inheritdoc/>
    public Task<int> RecoverAsync(double now, CancellationToken cancellationToken = default) => Locked(() =>
    {
        using var cmd = SqliteFiles.Command(_db, "UPDATE outbox_entries SET state = 'QUEUED', updated_at = $1 WHERE state = 'SENDING'", now);
        return cmd.ExecuteNonQuery();
    }, cancellationToken);

    /// <inheritdoc/>
    public Task<IReadOnlyList<OutboxEntry>> ExpireAsync(double now, CancellationToken cancellationToken = default) => Locked<IReadOnlyList<OutboxEntry>>(() =>
    {
        var due = Query("SELECT * FROM outbox_entries WHERE state IN ('QUEUED', 'RETRYABLE') AND expires_at <= $1 ORDER BY seq", now);
        if (due.Count == 0) return due;
        using var tx = _db.BeginTransaction();
        foreach (var e in due)
            NonQuery("UPDATE outbox_entries SET state = 'EXPIRED', next_attempt_at = NULL, updated_at = $1 WHERE id = $2 AND state IN ('QUEUED', 'RETRYABLE')", now, e.Id);
        tx.Commit();
        return due.Select(e => Query("SELECT * FROM outbox_entries WHERE id = $1", e.Id)[0]).ToList();
    }, cancellationToken);

    private Task<OutboxEntry> Move(CancellationToken cancellationToken, string id, string[] from, OutboxState to, string set, double now, params object?[] args) => Locked(() =>
    {
        var all = new List<object?> { to.ToString(), now, id };
        all.AddRange(args);
        var changed = NonQuery(
            $"UPDATE outbox_entries SET state = $1, updated_at = $2{(set.Length > 0 ? ", " + set : "")} WHERE id = $3 AND state IN ({string.Join(", ", from.Select(s => $"'{s}'"))})",
            [.. all]);
        if (changed == 1) return Query("SELECT * FROM outbox_entries WHERE id = $1", id)[0];
        using var cmd = SqliteFiles.Command(_db, "SELECT state FROM outbox_entries WHERE id = $1", id);
        var actual = cmd.ExecuteScalar() as string;
        throw new OutboxStateException(id, $"{string.Join("/", from)} → {to}", actual is null ? null : Enum.Parse<OutboxState>(actual));
    }, cancellationToken);

    /// <inheritdoc/>
    public Task<OutboxEntry> MarkSendingAsync(string id, double now, CancellationToken cancellationToken = default) =>
        Move(cancellationToken, id, ["QUEUED", "RETRYABLE"], OutboxState.SENDING, "attempts = attempts + 1, next_attempt_at = NULL, first_attempt_at = COALESCE(first_attempt_at, $2)", now);

    /// <inheritdoc/>
    public Task<OutboxEntry> MarkSentAsync(string id, double now, CancellationToken cancellationToken = default) =>
        Move(cancellationToken, id, ["SENDING"], OutboxState.SENT, "last_error_code = NULL, last_error_message = NULL", now);

    /// <inheritdoc/>
    public Task<OutboxEntry> MarkRetryableAsync(string id, double now, double nextAttemptAt, OutboxErrorInfo error, bool failedDelivery = false, CancellationToken cancellationToken = default) =>
        Move(cancellationToken, id, ["SENDING"], OutboxState.RETRYABLE, "next_attempt_at = $4, last_error_code = $5, last_error_message = $6, failed_deliveries = failed_deliveries + $7", now, nextAttemptAt, error.Code, error.Message, failedDelivery ? 1 : 0);

    /// <inheritdoc/>
    public Task<OutboxEntry> MarkPoisonAsync(string id, double now, OutboxErrorInfo error, bool failedDelivery = false, CancellationToken cancellationToken = default) =>
        Move(cancellationToken, id, ["SENDING"], OutboxState.POISON, "last_error_code = $4, last_error_message = $5, failed_deliveries = failed_deliveries + $6", now, error.Code, error.Message, failedDelivery ? 1 : 0);

    /// <inheritdoc/>
    public Task<OutboxEntry> MarkExpiredAsync(string id, double now, OutboxErrorInfo error, CancellationToken cancellationToken = default) =>
        Move(cancellationToken, id, ["QUEUED", "RETRYABLE"], OutboxState.EXPIRED, "next_attempt_at = NULL, last_error_code = $4, last_error_message = $5", now, error.Code, error.Message);

    /// <inheritdoc/>
    public Task<OutboxEntry> RequeueAsync(string id, double now, CancellationToken cancellationToken = default) =>
        Move(cancellationToken, id, ["SENDING"], OutboxState.QUEUED, "next_attempt_at = NULL", now);

    /// <inheritdoc/>
    public Task<OutboxEntry> ReviveAsync(string id, double now, double expiresAt, CancellationToken cancellationToken = default) =>
        Move(cancellationToken, id, ["POISON", "EXPIRED"], OutboxState.QUEUED, "next_attempt_at = NULL, last_error_code = NULL, last_error_message = NULL, failed_deliveries = 0, expires_at = $4", now, expiresAt);

    /// <inheritdoc/>
    public async ValueTask DisposeAsync()
    {
        await _gate.WaitAsync().ConfigureAwait(false);
        try
        {
            await _db.DisposeAsync().ConfigureAwait(false);
        }
        finally
        {
            _gate.Release();
        }
    }
}

/// <summary>Opening the SQLite file behind the outbox and inbox: WAL, synchronous FULL, exclusive lock, no pooling.</summary>
public static class SqliteFiles
{
    /// <summary>Opens a file and takes its write lock (kept until closed: one process owns the file).</summary>
    public static SqliteConnection Open(string path, bool synchronousFull = true)
    {
        var db = new SqliteConnection(new SqliteConnectionStringBuilder { DataSource = path, Pooling = false, DefaultTimeout = 1 }.ToString());
        db.Open();
        try
        {
            Exec(db, $"PRAGMA locking_mode = EXCLUSIVE; PRAGMA journal_mode = WAL; PRAGMA synchronous = {(synchronousFull ? "FULL" : "NORMAL")}; PRAGMA busy_timeout = 1000; BEGIN IMMEDIATE; COMMIT;");
        }
        catch (SqliteException error) when (error.SqliteErrorCode is 5 or 6)
        {
            db.Dispose();
            throw new InvalidOperationException(
                $"The SQLite file {path} is in use by another process (it holds the file's exclusive lock). One process owns an outbox/inbox file: stop the other one, or give this process its own file.", error);
        }
        return db;
    }

    /// <summary>
    /// Forward-only migrations: runs <paramref name="migrations"/>[i] for every version i + 1 above the file's
    /// <c>PRAGMA user_version</c>, each in one transaction with the version raised. A file from a newer SDK (a
    /// higher version than this one knows) is refused rather than written with an older schema.
    /// </summary>
    public static void Migrate(SqliteConnection db, IReadOnlyList<string> migrations, string path)
    {
        ArgumentNullException.ThrowIfNull(db);
        ArgumentNullException.ThrowIfNull(migrations);
        using var read = db.CreateCommand();
        read.CommandText = "PRAGMA user_version";
        var version = Convert.ToInt32(read.ExecuteScalar(), System.Globalization.CultureInfo.InvariantCulture);
        if (version > migrations.Count)
            throw new InvalidOperationException(
                $"The SQLite file {path} has schema version {version}; this SDK knows versions up to {migrations.Count}. It was written by a newer SDK: open it with that version (or a newer one).");
        for (var i = version; i < migrations.Count; i++)
        {
            using var tx = db.BeginTransaction();
            using (var cmd = db.CreateCommand())
            {
                cmd.Transaction = tx;
#pragma warning disable CA2100 // migrations are constants of this assembly
                cmd.CommandText = $"{migrations[i]}\nPRAGMA user_version = {i + 1};";
#pragma warning restore CA2100
                cmd.ExecuteNonQuery();
            }
            tx.Commit();
        }
    }

    /// <summary>Runs SQL without results.</summary>
    public static void Exec(SqliteConnection db, string sql)
    {
        ArgumentNullException.ThrowIfNull(db);
        using var cmd = db.CreateCommand();
        cmd.CommandText = sql;
        cmd.ExecuteNonQuery();
    }

    /// <summary>A command with positional parameters $1, $2, ...</summary>
    public static SqliteCommand Command(SqliteConnection db, string sql, params object?[] args)
    {
        ArgumentNullException.ThrowIfNull(db);
        ArgumentNullException.ThrowIfNull(args);
        var cmd = db.CreateCommand();
#pragma warning disable CA2100 // SQL text is built from constants only; values are parameters
        cmd.CommandText = sql;
#pragma warning restore CA2100
        for (var i = 0; i < args.Length; i++) cmd.Parameters.AddWithValue($"${i + 1}", args[i] ?? DBNull.Value);
        return cmd;
    }
}

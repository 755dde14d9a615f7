using System.Text.Json.Nodes;
using AgentGraph.Sdk.Outbox;
using Microsoft.Data.Sqlite;

namespace AgentGraph.Sdk.Inbox;

/// <summary>AVAILABLE → LEASED → PROCESSED, or back to AVAILABLE, or QUARANTINED at the last attempt.</summary>
public enum InboxState
{
    /// <summary>Leasable (from AvailableAt).</summary>
    AVAILABLE,
    /// <summary>Handed out until LeaseUntil.</summary>
    LEASED,
    /// <summary>Done.</summary>
    PROCESSED,
    /// <summary>Failed maxAttempts times: will not be processed.</summary>
    QUARANTINED,
}

/// <summary>A message as a stream delivered it.</summary>
/// <param name="Stream">The stream (cursors and dedupe are per stream).</param>
/// <param name="Id">Unique within the stream.</param>
/// <param name="Payload">JSON payload.</param>
/// <param name="Seq">Position in the stream, if any.</param>
/// <param name="Cursor">The resume cursor after this message (default the seq).</param>
public sealed record IncomingMessage(string Stream, string Id, JsonNode Payload, long? Seq = null, string? Cursor = null);

/// <summary>A stored message.</summary>
public sealed record InboxMessage(
    string Stream, string Id, long? Seq, JsonNode? Payload, InboxState State, int Attempts, double AvailableAt,
    string? LeaseToken, double? LeaseUntil, OutboxErrorInfo? LastError, double ReceivedAt, double? SettledAt, double? AcknowledgedAt);

/// <summary>A message handed out for processing; pass it back to CompleteAsync or FailAsync.</summary>
public sealed record Lease(string Stream, string Id, long? Seq, JsonNode? Payload, int Attempt, string Token, double LeaseUntil);

/// <summary>What the app tells the server about a settled message.</summary>
public sealed record Acknowledgement(string Stream, string Id, long? Seq, string Outcome, OutboxErrorInfo? Error, double At);

/// <summary>The outcome of FailAsync: RETRY (available again at AvailableAt) or QUARANTINED.</summary>
public sealed record FailResult(string Outcome, int Attempts, double AvailableAt, Acknowledgement? Acknowledgement);

/// <summary>Complete/fail with a lease that is no longer the message's lease.</summary>
public sealed class LeaseLostException(string stream, string id) : Exception(
    $"The lease on inbox message {stream}/{id} was lost (it expired and the message was leased again, or it was already settled); " +
    "this result was not recorded. Keep processing within the lease (60 s by default).");

/// <summary>
/// The inbox (a port of the TypeScript SDK's inbox): receive stores a message and advances the stream's cursor in one
/// transaction (duplicates by id or seq dropped); lease hands out the oldest available message for LeaseMs; complete
/// → PROCESSED; fail → available again or QUARANTINED at MaxAttempts; a lease that expired MaxAttempts times is
/// quarantined (LEASE_EXPIRED); acknowledgements stay pending until confirmed. Stored in SQLite (one file, one owner).
/// </summary>
public sealed class InboxStore : IAsyncDisposable
{
    private readonly SqliteConnection _db;
    private readonly SemaphoreSlim _gate = new(1, 1);
    private readonly TimeProvider _time;
    private readonly double _leaseMs;
    private readonly int _maxAttempts;
    private readonly Func<int, double> _retryDelayMs;
    private readonly Func<string> _newToken;

    private const string Migration = """
        CREATE TABLE IF NOT EXISTS inbox_streams (stream TEXT PRIMARY KEY, cursor TEXT, last_seq INTEGER, updated_at REAL NOT NULL);
        CREATE TABLE IF NOT EXISTS inbox_messages (
          position INTEGER PRIMARY KEY AUTOINCREMENT,
          stream TEXT NOT NULL,
          message_id TEXT NOT NULL,
          seq INTEGER,
          payload TEXT NOT NULL,
          state TEXT NOT NULL CHECK (state IN ('AVAILABLE', 'LEASED', 'PROCESSED', 'QUARANTINED')),
          attempts INTEGER NOT NULL DEFAULT 0,
          available_at REAL NOT NULL,
          lease_token TEXT,
          lease_until REAL,
          last_error_code TEXT,
          last_error_message TEXT,
          received_at REAL NOT NULL,
          settled_at REAL,
          acknowledged_at REAL,
          UNIQUE (stream, message_id)
        );
        """;

    /// <summary>Opens the inbox in a file.</summary>
    public InboxStore(string path, TimeProvider? time = null, double leaseMs = 60_000, int maxAttempts = 3,
        Func<int, double>? retryDelayMs = null, Func<string>? newToken = null)
    {
        if (!(leaseMs > 0)) throw new ArgumentException("Inbox: leaseMs must be positive.", nameof(leaseMs));
        if (maxAttempts < 1) throw new ArgumentException("Inbox: maxAttempts must be a positive integer.", nameof(maxAttempts));
        _db = SqliteFiles.Open(path);
        SqliteFiles.Exec(_db, Migration);
        _time = time ?? TimeProvider.System;
        _leaseMs = leaseMs;
        _maxAttempts = maxAttempts;
        _retryDelayMs = retryDelayMs ?? (_ => 0);
        _newToken = newToken ?? (() => Guid.NewGuid().ToString());
    }

    private double Now() => Clock.NowMs(_time);

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

    private int NonQuery(string sql, params object?[] args)
    {
        using var cmd = SqliteFiles.Command(_db, sql, args);
        return cmd.ExecuteNonQuery();
    }

    private List<InboxMessage> Query(string sql, params object?[] args)
    {
        using var cmd = SqliteFiles.Command(_db, sql, args);
        using var r = cmd.ExecuteReader();
        var list = new List<InboxMessage>();
        while (r.Read())
        {
            double? D(string c) => r.IsDBNull(r.GetOrdinal(c)) ? null : r.GetDouble(r.GetOrdinal(c));
            string? S(string c) => r.IsDBNull(r.GetOrdinal(c)) ? null : r.GetString(r.GetOrdinal(c));
            list.Add(new InboxMessage(
                S("stream")!, S("message_id")!, r.IsDBNull(r.GetOrdinal("seq")) ? null : r.GetInt64(r.GetOrdinal("seq")),
                JsonNode.Parse(S("payload")!), Enum.Parse<InboxState>(S("state")!), r.GetInt32(r.GetOrdinal("attempts")),
                D("available_at")!.Value, S("lease_token"), D("lease_until"),
                S("last_error_code") is { } code ? new OutboxErrorInfo(code, S("last_error_message") ?? "") : null,
                D("received_at")!.Value, D("settled_at"), D("acknowledged_at")));
        }
        return list;
    }

    private InboxMessage Get(string stream, string id) =>
        Query("SELECT * FROM inbox_messages WHERE stream = $1 AND message_id = $2", stream, id)[0];

    /// <summary>The stream's resume cursor (null before its first message).</summary>
    public Task<string?> CursorAsync(string stream, CancellationToken cancellationToken = default) => Locked(() =>
    {
        using var cmd = SqliteFiles.Command(_db, "SELECT cursor FROM inbox_streams WHERE stream = $1", stream);
        return cmd.ExecuteScalar() as string;
    }, cancellationToken);

    /// <summary>Stores a delivered message; "duplicate" when seen before (same id, or seq at or below the last).</summary>
    public Task<string> ReceiveAsync(IncomingMessage message, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(message);
        if (string.IsNullOrEmpty(message.Stream) || string.IsNullOrEmpty(message.Id))
            throw new ArgumentException("Inbox.Receive: stream and id must be non-empty strings.", nameof(message));
        if (message.Seq is < 0) throw new ArgumentException("Inbox.Receive: seq must be a non-negative integer.", nameof(message));
        var now = Now();
        return Locked(() =>
        {
            using var tx = _db.BeginTransaction();
            using var last = SqliteFiles.Command(_db, "SELECT last_seq FROM inbox_streams WHERE stream = $1", message.Stream);
            var lastSeq = last.ExecuteScalar() is long l ? (long?)l : null;
            if (message.Seq is { } seq && lastSeq is { } ls && seq <= ls) return "duplicate";
            var inserted = NonQuery(
                """
                INSERT INTO inbox_messages (stream, message_id, seq, payload, state, available_at, received_at)
                VALUES ($1, $2, $3, $4, 'AVAILABLE', $5, $5) ON CONFLICT (stream, message_id) DO NOTHING
                """, message.Stream, message.Id, message.Seq, message.Payload.ToJsonString(), now);
            if (inserted == 0) return "duplicate";
            var cursor = message.Cursor ?? message.Seq?.ToString(System.Globalization.CultureInfo.InvariantCulture);
            NonQuery(
                """
                INSERT INTO inbox_streams (stream, cursor, last_seq, updated_at) VALUES ($1, $2, $3, $4)
                ON CONFLICT (stream) DO UPDATE SET
                  cursor = COALESCE(excluded.cursor, inbox_streams.cursor),
                  last_seq = CASE WHEN excluded.last_seq IS NULL THEN inbox_streams.last_seq
                                  WHEN inbox_streams.last_seq IS NULL THEN excluded.last_seq
                                  ELSE MAX(inbox_streams.last_seq, excluded.last_seq) END,
                  updated_at = excluded.updated_at
                """, message.Stream, cursor, message.Seq, now);
            tx.Commit();
            return "accepted";
        }, cancellationToken);
    }

    /// <summary>Leases the oldest available message (quarantining expired-too-often ones first), or null.</summary>
    public Task<Lease?> LeaseAsync(string? stream = null, CancellationToken cancellationToken = default)
    {
        var token = _newToken();
        var now = Now();
        return Locked(() =>
        {
            using var tx = _db.BeginTransaction();
            NonQuery(
                """
                UPDATE inbox_messages SET state = 'QUARANTINED', lease_token = NULL, lease_until = NULL, settled_at = $1,
                  last_error_code = 'LEASE_EXPIRED', last_error_message = $2
                WHERE state = 'LEASED' AND lease_until <= $1 AND attempts >= $3
                """, now, $"Processing did not finish within the lease {_maxAttempts} times (the processor stopped or hung).", _maxAttempts);
            var candidates = Query(
                $"SELECT * FROM inbox_messages WHERE ((state = 'AVAILABLE' AND available_at <= $1) OR (state = 'LEASED' AND lease_until <= $1)) {(stream is null ? "" : "AND stream = $2")} ORDER BY position LIMIT 1",
                stream is null ? [now] : [now, stream]);
            if (candidates.Count == 0)
            {
                tx.Commit();
                return (Lease?)null;
            }
            var m = candidates[0];
            NonQuery("UPDATE inbox_messages SET state = 'LEASED', attempts = attempts + 1, lease_token = $1, lease_until = $2 WHERE stream = $3 AND message_id = $4",
                token, now + _leaseMs, m.Stream, m.Id);
            tx.Commit();
            var leased = Get(m.Stream, m.Id);
            return new Lease(leased.Stream, leased.Id, leased.Seq, leased.Payload, leased.Attempts, token, leased.LeaseUntil!.Value);
        }, cancellationToken);
    }

    private static Acknowledgement AcknowledgementOf(InboxMessage m) => new(
        m.Stream, m.Id, m.Seq, m.State.ToString(), m.State == InboxState.QUARANTINED ? m.LastError : null, m.SettledAt ?? m.ReceivedAt);

    /// <summary>The handler succeeded: PROCESSED. Throws LeaseLostException if the lease was lost.</summary>
    public Task<Acknowledgement> CompleteAsync(Lease lease, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(lease);
        var now = Now();
        return Locked(() =>
        {
            var changed = NonQuery(
                "UPDATE inbox_messages SET state = 'PROCESSED', lease_token = NULL, lease_until = NULL, settled_at = $1 WHERE stream = $2 AND message_id = $3 AND state = 'LEASED' AND lease_token = $4",
                now, lease.Stream, lease.Id, lease.Token);
            if (changed == 0) throw new LeaseLostException(lease.Stream, lease.Id);
            return AcknowledgementOf(Get(lease.Stream, lease.Id));
        }, cancellationToken);
    }

    /// <summary>The handler failed: available again, or QUARANTINED at the last attempt.</summary>
    public Task<FailResult> FailAsync(Lease lease, OutboxErrorInfo error, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(lease);
        ArgumentNullException.ThrowIfNull(error);
        var now = Now();
        var quarantine = lease.Attempt >= _maxAttempts;
        var availableAt = now + Math.Max(0, _retryDelayMs(lease.Attempt));
        return Locked(() =>
        {
            var changed = quarantine
                ? NonQuery(
                    "UPDATE inbox_messages SET state = 'QUARANTINED', lease_token = NULL, lease_until = NULL, settled_at = $1, last_error_code = $2, last_error_message = $3 WHERE stream = $4 AND message_id = $5 AND state = 'LEASED' AND lease_token = $6",
                    now, error.Code, error.Message, lease.Stream, lease.Id, lease.Token)
                : NonQuery(
                    "UPDATE inbox_messages SET state = 'AVAILABLE', lease_token = NULL, lease_until = NULL, available_at = $1, last_error_code = $2, last_error_message = $3 WHERE stream = $4 AND message_id = $5 AND state = 'LEASED' AND lease_token = $6",
                    availableAt, error.Code, error.Message, lease.Stream, lease.Id, lease.Token);
            if (changed == 0) throw new LeaseLostException(lease.Stream, lease.Id);
            return quarantine
                ? new FailResult("QUARANTINED", lease.Attempt, now, AcknowledgementOf(Get(lease.Stream, lease.Id)))
                : new FailResult("RETRY", lease.Attempt, availableAt, null);
        }, cancellationToken);
    }

    /// <summary>Acknowledgements not yet confirmed delivered, oldest first.</summary>
    public Task<IReadOnlyList<Acknowledgement>> PendingAcknowledgementsAsync(CancellationToken cancellationToken = default) => Locked<IReadOnlyList<Acknowledgement>>(() =>
        Query("SELECT * FROM inbox_messages WHERE state IN ('PROCESSED', 'QUARANTINED') AND acknowledged_at IS NULL ORDER BY position")
            .Select(AcknowledgementOf).ToList(), cancellationToken);

    /// <summary>The app delivered this acknowledgement to the server.</summary>
    public Task AcknowledgedAsync(string stream, string id, CancellationToken cancellationToken = default)
    {
        var now = Now();
        return Locked(() =>
        {
            var changed = NonQuery(
                "UPDATE inbox_messages SET acknowledged_at = COALESCE(acknowledged_at, $1) WHERE stream = $2 AND message_id = $3 AND state IN ('PROCESSED', 'QUARANTINED')",
                now, stream, id);
            if (changed == 0) throw new InvalidOperationException($"Inbox message {stream}/{id} is not settled (PROCESSED or QUARANTINED): nothing to acknowledge.");
            return true;
        }, cancellationToken);
    }

    /// <summary>Every stored message in receive order.</summary>
    public Task<IReadOnlyList<InboxMessage>> ListAsync(CancellationToken cancellationToken = default) =>
        Locked<IReadOnlyList<InboxMessage>>(() => Query("SELECT * FROM inbox_messages ORDER BY position"), cancellationToken);

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

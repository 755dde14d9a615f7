using AgentGraph.Sdk.Outbox;
using Microsoft.Data.Sqlite;

namespace AgentGraph.Sdk.Intents;

/// <summary>
/// The replay cache in SQLite: survives restarts (a cache that forgets on restart lets a captured intent run twice).
/// One transaction per call: forget expired jtis, then insert the new one or report a replay.
/// </summary>
public sealed class SqliteReplayCache : IReplayCache, IAsyncDisposable
{
    private readonly SqliteConnection _db;
    private readonly SemaphoreSlim _gate = new(1, 1);

    /// <summary>Opens (creating) the cache file and takes its lock.</summary>
    public SqliteReplayCache(string path)
    {
        _db = SqliteFiles.Open(path);
        SqliteFiles.Exec(_db, "CREATE TABLE IF NOT EXISTS intent_replay (jti TEXT PRIMARY KEY, keep_until REAL NOT NULL)");
    }

    /// <inheritdoc/>
    public async ValueTask<bool> RememberAsync(string jti, double keepUntil, double now, CancellationToken cancellationToken = default)
    {
        await _gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            using var tx = _db.BeginTransaction();
            using (var purge = SqliteFiles.Command(_db, "DELETE FROM intent_replay WHERE keep_until <= $1", now)) purge.ExecuteNonQuery();
            using var insert = SqliteFiles.Command(_db, "INSERT INTO intent_replay (jti, keep_until) VALUES ($1, $2) ON CONFLICT (jti) DO NOTHING", jti, keepUntil);
            var fresh = insert.ExecuteNonQuery() == 1;
            tx.Commit();
            return fresh;
        }
        finally
        {
            _gate.Release();
        }
    }

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

using AgentGraph.Sdk.Outbox;
using Microsoft.Data.Sqlite;
using Xunit;

namespace AgentGraph.Sdk.Tests.Outbox;

public sealed class SqliteOutboxStoreTests
{
    [Fact]
    public async Task EveryMoveIsPersistedAndGuardedByItsSourceState()
    {
        var dir = Directory.CreateTempSubdirectory("outbox-store-");
        var file = Path.Combine(dir.FullName, "o.db");
        var store = SqliteOutboxStore.Open(file);
        await store.AddAsync("e1", "A", "PostMessage", new() { ["body"] = "x" }, "k1", 0, 1000);
        var sending = await store.MarkSendingAsync("e1", 1);
        Assert.Equal((OutboxState.SENDING, 1), (sending.State, sending.Attempts));
        await store.MarkRetryableAsync("e1", 2, 100, new OutboxErrorInfo("TIMEOUT", "t"));
        var listed = Assert.Single(await store.ListAsync());
        Assert.Equal(OutboxState.RETRYABLE, listed.State);
        Assert.Equal(100, listed.NextAttemptAt);
        await Assert.ThrowsAsync<OutboxStateException>(() => store.MarkSentAsync("e1", 3));
        await store.MarkSendingAsync("e1", 4);
        await store.DisposeAsync();
        // Reopen (as after a crash): SENDING goes back to QUEUED with its key.
        store = SqliteOutboxStore.Open(file);
        Assert.Equal(1, await store.RecoverAsync(5));
        var recovered = Assert.Single(await store.ListAsync());
        Assert.Equal((OutboxState.QUEUED, 2, "k1"), (recovered.State, recovered.Attempts, recovered.IdempotencyKey));
        await store.DisposeAsync();
        dir.Delete(true);
    }

    // The table as SDKs before schema versioning wrote it (user_version 0, no failed_deliveries column).
    private const string UnversionedSchema = """
        CREATE TABLE outbox_entries (
          seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, room TEXT NOT NULL, operation TEXT NOT NULL,
          variables TEXT NOT NULL, idempotency_key TEXT NOT NULL UNIQUE,
          state TEXT NOT NULL CHECK (state IN ('QUEUED', 'SENDING', 'RETRYABLE', 'SENT', 'POISON', 'EXPIRED')),
          attempts INTEGER NOT NULL DEFAULT 0, next_attempt_at REAL, last_error_code TEXT, last_error_message TEXT,
          created_at REAL NOT NULL, updated_at REAL NOT NULL, expires_at REAL NOT NULL, first_attempt_at REAL
        );
        CREATE INDEX outbox_entries_pending ON outbox_entries (room, seq) WHERE state IN ('QUEUED', 'SENDING', 'RETRYABLE');
        INSERT INTO outbox_entries (id, room, operation, variables, idempotency_key, state, attempts, next_attempt_at, last_error_code, last_error_message, created_at, updated_at, expires_at, first_attempt_at)
        VALUES ('e1', 'A', 'PostMessage', '{"body":"one"}', 'k1', 'RETRYABLE', 2, 500, 'INTERNAL_SERVER_ERROR', 'boom', 0, 400, 1000, 100),
               ('e2', 'A', 'PostMessage', '{"body":"two"}', 'k2', 'QUEUED', 0, NULL, NULL, NULL, 10, 10, 1000, NULL),
               ('e3', 'B', 'PostMessage', '{"body":"three"}', 'k3', 'POISON', 1, NULL, 'VALIDATION_FAILED', 'bad', 20, 30, 1000, 30);
        """;

    [Fact]
    public async Task AnOutboxFileWithTheUnversionedSchemaOpensKeepsItsEntriesAndCountsFromZero()
    {
        var dir = Directory.CreateTempSubdirectory("outbox-migrate-");
        var file = Path.Combine(dir.FullName, "old.db");
        using (var old = new SqliteConnection(new SqliteConnectionStringBuilder { DataSource = file, Pooling = false }.ToString()))
        {
            old.Open();
            SqliteFiles.Exec(old, UnversionedSchema);
        }
        var store = SqliteOutboxStore.Open(file);
        var entries = await store.ListAsync();
        Assert.Equal(["k1", "k2", "k3"], entries.Select(e => e.IdempotencyKey));
        Assert.Equal([OutboxState.RETRYABLE, OutboxState.QUEUED, OutboxState.POISON], entries.Select(e => e.State));
        Assert.Equal([2, 0, 1], entries.Select(e => e.Attempts));
        Assert.All(entries, e => Assert.Equal(0, e.FailedDeliveries));
        Assert.Equal(("INTERNAL_SERVER_ERROR", "boom"), (entries[0].LastError!.Code, entries[0].LastError!.Message));
        Assert.Equal("one", (string?)entries[0].Variables["body"]);
        Assert.Equal((500d, 100d), (entries[0].NextAttemptAt!.Value, entries[0].FirstAttemptAt!.Value));
        // The new column is written from now on, and the file is at the newest version (a reopen migrates nothing).
        await store.MarkSendingAsync("e1", 600);
        Assert.Equal(1, (await store.MarkRetryableAsync("e1", 700, 900, new OutboxErrorInfo("INTERNAL_SERVER_ERROR", "again"), failedDelivery: true)).FailedDeliveries);
        await store.DisposeAsync();
        store = SqliteOutboxStore.Open(file);
        Assert.Equal(1, (await store.ListAsync())[0].FailedDeliveries);
        await store.DisposeAsync();
        using (var check = new SqliteConnection(new SqliteConnectionStringBuilder { DataSource = file, Pooling = false }.ToString()))
        {
            check.Open();
            using var cmd = check.CreateCommand();
            cmd.CommandText = "PRAGMA user_version";
            Assert.Equal((long)SqliteOutboxStore.Migrations.Length, (long)cmd.ExecuteScalar()!);
        }
        dir.Delete(true);
    }

    [Fact]
    public async Task AFileFromANewerSchemaIsRefusedNotDowngraded()
    {
        var dir = Directory.CreateTempSubdirectory("outbox-newer-");
        var file = Path.Combine(dir.FullName, "new.db");
        await SqliteOutboxStore.Open(file).DisposeAsync();
        using (var db = new SqliteConnection(new SqliteConnectionStringBuilder { DataSource = file, Pooling = false }.ToString()))
        {
            db.Open();
            SqliteFiles.Exec(db, $"PRAGMA user_version = {SqliteOutboxStore.Migrations.Length + 1}");
        }
        var error = Assert.Throws<InvalidOperationException>(() => SqliteOutboxStore.Open(file));
        Assert.Contains("newer SDK", error.Message, StringComparison.Ordinal);
        dir.Delete(true);
    }
}

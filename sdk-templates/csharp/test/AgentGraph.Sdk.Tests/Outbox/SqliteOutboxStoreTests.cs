using AgentGraph.Sdk.Outbox;
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
}

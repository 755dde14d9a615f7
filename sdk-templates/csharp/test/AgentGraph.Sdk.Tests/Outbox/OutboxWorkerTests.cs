using AgentGraph.Sdk.Outbox;
using Microsoft.Extensions.Time.Testing;
using Xunit;

namespace AgentGraph.Sdk.Tests.Outbox;

public sealed class OutboxWorkerTests
{
    [Fact]
    public async Task EnqueueWaitsForRoomUnderMaxPendingAndTheBackgroundWorkerDrains()
    {
        var dir = Directory.CreateTempSubdirectory("outbox-worker-");
        var release = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var sent = new List<string>();
        await using var outbox = await OutboxWorker.OpenAsync(new OutboxOptions
        {
            Store = SqliteOutboxStore.Open(Path.Combine(dir.FullName, "o.db")),
            TimeProvider = new FakeTimeProvider(),
            MaxPending = 2,
            Send = async (entry, _) =>
            {
                await release.Task;
                lock (sent) sent.Add(entry.IdempotencyKey);
            },
        });
        outbox.Start();
        await outbox.EnqueueAsync(new EnqueueInput("A", "PostMessage", IdempotencyKey: "k1"));
        await outbox.EnqueueAsync(new EnqueueInput("A", "PostMessage", IdempotencyKey: "k2"));
        var third = outbox.EnqueueAsync(new EnqueueInput("A", "PostMessage", IdempotencyKey: "k3"));
        Assert.False(third.IsCompleted); // two pending: the third waits (nothing sent yet, the first send is held)
        release.SetResult();
        await third.WaitAsync(TimeSpan.FromSeconds(10));
        await outbox.StopAsync();
        await outbox.DrainAsync().WaitAsync(TimeSpan.FromSeconds(10));
        Assert.Equal(["k1", "k2", "k3"], sent);
        Assert.All(await outbox.ListAsync(), e => Assert.Equal(OutboxState.SENT, e.State));
    }

    [Fact]
    public async Task ReviveResetsFailedDeliveriesAndTheExportCarriesThem()
    {
        var dir = Directory.CreateTempSubdirectory("outbox-poison-");
        var time = new FakeTimeProvider(DateTimeOffset.FromUnixTimeMilliseconds(1_700_000_000_000));
        var failures = 2; // the first two sends fail on the server; the third (after revive) succeeds
        await using var outbox = await OutboxWorker.OpenAsync(new OutboxOptions
        {
            Store = SqliteOutboxStore.Open(Path.Combine(dir.FullName, "o.db")),
            TimeProvider = time,
            MaxFailedDeliveries = 2,
            DelayFor = (_, _) => 0,
            Send = (_, _) => failures-- > 0
                ? throw new AgentGraphException(new AgentGraphErrorInit { Code = "HTTP_ERROR", Message = "500 from the server", Retryable = true, Status = 500 })
                : Task.CompletedTask,
        });
        var entry = await outbox.EnqueueAsync(new EnqueueInput("A", "PostMessage", IdempotencyKey: "k1"));
        await outbox.DrainAsync().WaitAsync(TimeSpan.FromSeconds(10));
        var dead = Assert.Single(await outbox.DeadLettersAsync());
        Assert.Equal((OutboxState.POISON, 2, 2, "HTTP_ERROR"), (dead.State, dead.Attempts, dead.FailedDeliveries, dead.LastError?.Code));
        var export = System.Text.Json.Nodes.JsonNode.Parse(await outbox.ExportDeadLettersAsync())!;
        Assert.Equal(2, (int)export["entries"]![0]!["failedDeliveries"]!);
        Assert.Equal("HTTP_ERROR", (string?)export["entries"]![0]!["lastError"]!["code"]);
        Assert.Equal("2023-11-14T22:13:20.000Z", (string?)export["exportedAt"]);

        var revived = await outbox.ReviveAsync(entry.Id);
        Assert.Equal((OutboxState.QUEUED, 0), (revived.State, revived.FailedDeliveries));
        await outbox.DrainAsync().WaitAsync(TimeSpan.FromSeconds(10));
        var sent = Assert.Single(await outbox.ListAsync());
        Assert.Equal((OutboxState.SENT, 3, 0), (sent.State, sent.Attempts, sent.FailedDeliveries));
        dir.Delete(true);
    }

    [Fact]
    public async Task MaxFailedDeliveriesBelowOneIsRefused()
    {
        var dir = Directory.CreateTempSubdirectory("outbox-options-");
        await using var store = SqliteOutboxStore.Open(Path.Combine(dir.FullName, "o.db"));
        var error = await Assert.ThrowsAsync<ArgumentException>(() => OutboxWorker.OpenAsync(new OutboxOptions
        {
            Store = store,
            MaxFailedDeliveries = 0,
            Send = (_, _) => Task.CompletedTask,
        }));
        Assert.Contains("MaxFailedDeliveries must be at least 1", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task StopAsyncStopsWaitingForAHangingSendWhenItsTokenIsCancelled()
    {
        var dir = Directory.CreateTempSubdirectory("outbox-stop-");
        var started = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var store = SqliteOutboxStore.Open(Path.Combine(dir.FullName, "o.db"));
        var outbox = await OutboxWorker.OpenAsync(new OutboxOptions
        {
            Store = store,
            TimeProvider = new FakeTimeProvider(),
            Send = (_, _) =>
            {
                started.TrySetResult();
                return new TaskCompletionSource().Task; // never settles, and ignores its token
            },
        });
        outbox.Start();
        await outbox.EnqueueAsync(new EnqueueInput("A", "PostMessage", IdempotencyKey: "k1"));
        await started.Task.WaitAsync(TimeSpan.FromSeconds(10));
        using var cancel = new CancellationTokenSource(TimeSpan.FromMilliseconds(100));
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => outbox.StopAsync(cancellationToken: cancel.Token));
        var sending = Assert.Single(await outbox.ListAsync([OutboxState.SENDING], CancellationToken.None));
        Assert.Equal("k1", sending.IdempotencyKey); // still SENDING: the next open puts it back to QUEUED with its key
        await store.DisposeAsync(); // the hanging send is abandoned, as after a crash
        dir.Delete(true);
    }
}

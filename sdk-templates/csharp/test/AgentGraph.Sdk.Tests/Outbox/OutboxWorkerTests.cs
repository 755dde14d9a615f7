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
}

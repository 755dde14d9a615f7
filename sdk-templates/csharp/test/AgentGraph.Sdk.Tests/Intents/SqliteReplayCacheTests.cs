using AgentGraph.Sdk.Intents;
using Xunit;

namespace AgentGraph.Sdk.Tests.Intents;

public sealed class SqliteReplayCacheTests
{
    [Fact]
    public async Task AReplayIsRefusedAcrossARestartUntilItsKeepUntilPasses()
    {
        var dir = Directory.CreateTempSubdirectory("replay-");
        var file = Path.Combine(dir.FullName, "replay.db");
        await using (var cache = new SqliteReplayCache(file))
        {
            Assert.True(await cache.RememberAsync("i-1", keepUntil: 1000, now: 0));
            Assert.False(await cache.RememberAsync("i-1", keepUntil: 1000, now: 10));
        }
        await using (var reopened = new SqliteReplayCache(file))
        {
            Assert.False(await reopened.RememberAsync("i-1", keepUntil: 1000, now: 999));
            Assert.True(await reopened.RememberAsync("i-1", keepUntil: 2000, now: 1000)); // expired: forgotten
        }
        dir.Delete(true);
    }
}

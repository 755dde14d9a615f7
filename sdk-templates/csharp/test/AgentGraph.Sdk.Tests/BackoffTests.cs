using Microsoft.Extensions.Time.Testing;
using Polly;
using Polly.Retry;
using Xunit;

namespace AgentGraph.Sdk.Tests;

/// <summary>The SDK's backoff is Polly v8's DecorrelatedJitterBackoffV2: same random numbers, same delays.</summary>
public sealed class BackoffTests
{
    private static readonly double[] Randoms = [0.5, 0.25, 0.75, 0.1, 0.9, 0.0, 0.999, 0.33];

    /// <summary>Runs Polly's own retry strategy (exponential + jitter) on a FakeTimeProvider and records its delays.</summary>
    private static async Task<List<TimeSpan>> PollyDelays(TimeSpan baseDelay, TimeSpan maxDelay)
    {
        var index = 0;
        var delays = new List<TimeSpan>();
        var time = new FakeTimeProvider();
        var options = new RetryStrategyOptions
        {
            MaxRetryAttempts = Randoms.Length,
            BackoffType = DelayBackoffType.Exponential,
            UseJitter = true,
            Delay = baseDelay,
            MaxDelay = maxDelay,
            ShouldHandle = _ => ValueTask.FromResult(true),
            OnRetry = args =>
            {
                delays.Add(args.RetryDelay);
                return ValueTask.CompletedTask;
            },
        };
        typeof(RetryStrategyOptions<object>).GetProperty("Randomizer", System.Reflection.BindingFlags.Instance | System.Reflection.BindingFlags.NonPublic | System.Reflection.BindingFlags.Public)!
            .SetValue(options, (Func<double>)(() => Randoms[index++]));
        var pipeline = new ResiliencePipelineBuilder { TimeProvider = time }.AddRetry(options).Build();
        var run = pipeline.ExecuteAsync(_ => ValueTask.CompletedTask).AsTask();
        while (!run.IsCompleted)
        {
            time.Advance(TimeSpan.FromMinutes(1));
            await Task.Yield();
        }
        await run;
        return delays;
    }

    [Theory]
    [InlineData(200, 30_000)]
    [InlineData(1000, 30_000)]
    [InlineData(200, 500)]
    public async Task SameDelaysAsPollyForTheSameRandomNumbers(int baseMs, int maxMs)
    {
        var polly = await PollyDelays(TimeSpan.FromMilliseconds(baseMs), TimeSpan.FromMilliseconds(maxMs));
        var index = 0;
        var ours = new DecorrelatedJitterBackoff(baseMs, maxMs, () => Randoms[index++]);
        var mine = Enumerable.Range(0, Randoms.Length).Select(attempt => TimeSpan.FromTicks((long)Math.Round(ours.Next(attempt) * TimeSpan.TicksPerMillisecond))).ToList();
        Assert.Equal(polly, mine);
    }

    [Fact]
    public void TheFirstDelayOfTheVectorsComment()
    {
        // call-timeout-then-success-same-key: r = 0.5 → 1794809 ticks = 179.4809 ms.
        Assert.Equal(179.4809, new DecorrelatedJitterBackoff(200, 30_000, () => 0.5).Next(0), 6);
    }
}

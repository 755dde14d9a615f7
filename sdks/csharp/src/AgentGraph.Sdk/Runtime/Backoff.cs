namespace AgentGraph.Sdk;

/// <summary>
/// Decorrelated-jitter backoff, exactly Polly v8's <c>DecorrelatedJitterBackoffV2</c> (Polly.Core RetryHelper), so
/// all three SDKs sleep the same delays for the same random numbers. For retry <c>attempt</c> (0 first) and base
/// delay f: <c>t = attempt + r; next = 2^t · tanh(√(4t)); delay = (next − prev) · (1/1.4) · f</c> in ticks,
/// truncated, capped at TimeSpan.MaxValue; then capped at <c>maxDelay</c> as Polly's GetRetryDelay does.
/// A unit test checks it against Polly's own retry strategy (UseJitter, Exponential) with the same numbers.
/// </summary>
public sealed class DecorrelatedJitterBackoff(int baseDelayMs, double? maxDelayMs, Func<double> random)
{
    private const double PFactor = 4.0;
    private const double RpScalingFactor = 1 / 1.4;
    private const double MaxTimeSpanDouble = (double)long.MaxValue - 1000;
    private double _prev;

    /// <summary>The delay before retry <paramref name="attempt"/>, in milliseconds (draws one random number).</summary>
    public double Next(int attempt)
    {
        if (baseDelayMs == 0) return 0;
        double targetTicksFirstDelay = TimeSpan.FromMilliseconds(baseDelayMs).Ticks;
        double t = attempt + random();
        double next = Math.Pow(2, t) * Math.Tanh(Math.Sqrt(PFactor * t));
        double ms;
        if (double.IsInfinity(next))
        {
            _prev = next;
            ms = MaxTimeSpanDouble / TimeSpan.TicksPerMillisecond;
        }
        else
        {
            double formulaIntrinsicValue = next - _prev;
            _prev = next;
            ms = (long)Math.Min(formulaIntrinsicValue * RpScalingFactor * targetTicksFirstDelay, MaxTimeSpanDouble) / (double)TimeSpan.TicksPerMillisecond;
        }
        return maxDelayMs is { } max && ms > max ? max : ms;
    }
}

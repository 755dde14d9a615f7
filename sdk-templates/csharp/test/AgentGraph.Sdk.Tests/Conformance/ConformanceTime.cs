namespace AgentGraph.Sdk.Tests.Conformance;

using Timeout = System.Threading.Timeout;

/// <summary>
/// The conformance suite's fake clock as a TimeProvider: a timer records its due time as a sleep, moves the time
/// forward by exactly that much and fires at once (no real waiting), so expected delays and budgets are exact.
/// <see cref="Advance"/> moves time without recording a sleep (scripted request latency).
/// </summary>
internal sealed class ConformanceTime(double startMs) : TimeProvider
{
    private long _ticks = DateTime.UnixEpoch.Ticks + (long)Math.Round(startMs * TimeSpan.TicksPerMillisecond);
    private readonly object _gate = new();

    public List<double> Sleeps { get; } = [];

    public override DateTimeOffset GetUtcNow()
    {
        lock (_gate) return new DateTimeOffset(_ticks, TimeSpan.Zero);
    }

    public double NowMs => AgentGraph.Sdk.Clock.NowMs(this);

    public void Advance(double ms)
    {
        if (!(ms >= 0)) throw new ArgumentOutOfRangeException(nameof(ms), $"Advance needs a non-negative number, got {ms}");
        lock (_gate) _ticks += (long)Math.Round(ms * TimeSpan.TicksPerMillisecond);
    }

    public override ITimer CreateTimer(TimerCallback callback, object? state, TimeSpan dueTime, TimeSpan period)
    {
        var timer = new Timer(this, callback, state);
        timer.Change(dueTime, period);
        return timer;
    }

    private sealed class Timer(ConformanceTime time, TimerCallback callback, object? state) : ITimer
    {
        private bool _disposed;

        public bool Change(TimeSpan dueTime, TimeSpan period)
        {
            if (_disposed || dueTime == Timeout.InfiniteTimeSpan) return !_disposed;
            lock (time._gate)
            {
                time.Sleeps.Add(dueTime.Ticks / (double)TimeSpan.TicksPerMillisecond);
                time._ticks += dueTime.Ticks;
            }
            ThreadPool.QueueUserWorkItem(_ =>
            {
                if (!_disposed) callback(state);
            });
            return true;
        }

        public void Dispose() => _disposed = true;

        public ValueTask DisposeAsync()
        {
            _disposed = true;
            return ValueTask.CompletedTask;
        }
    }
}

/// <summary>A random source that returns a vector's numbers in order and fails loudly when they run out.</summary>
internal sealed class ScriptedRandom(IReadOnlyList<double> values, string file)
{
    public int Consumed { get; private set; }

    public double Next()
    {
        if (Consumed >= values.Count)
            throw new InvalidOperationException($"{file}: the SDK drew random number #{Consumed + 1} but the vector lists {values.Count}");
        return values[Consumed++];
    }
}

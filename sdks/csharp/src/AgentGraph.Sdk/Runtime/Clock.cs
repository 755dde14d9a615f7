namespace AgentGraph.Sdk;

/// <summary>Epoch milliseconds from a TimeProvider (with sub-millisecond ticks), as every SDK counts time.</summary>
public static class Clock
{
    /// <summary>Milliseconds since the Unix epoch, as a double (tick precision).</summary>
    public static double NowMs(TimeProvider time)
    {
        ArgumentNullException.ThrowIfNull(time);
        return (time.GetUtcNow().UtcTicks - DateTime.UnixEpoch.Ticks) / (double)TimeSpan.TicksPerMillisecond;
    }

    /// <summary>A DateTimeOffset from epoch milliseconds.</summary>
    public static DateTimeOffset FromMs(double ms) => new(DateTime.UnixEpoch.Ticks + (long)Math.Round(ms * TimeSpan.TicksPerMillisecond), TimeSpan.Zero);
}

/// <summary>
/// Waits on a TimeProvider for exactly a TimeSpan (tick precision). Task.Delay(TimeSpan, TimeProvider) truncates to
/// whole milliseconds, which would move the jitter delays the conformance vectors pin to the tick.
/// </summary>
public static class TimeProviderDelay
{
    /// <summary>Completes after <paramref name="delay"/> on <paramref name="time"/>, or cancels.</summary>
    public static Task WaitAsync(TimeProvider time, TimeSpan delay, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(time);
        if (cancellationToken.IsCancellationRequested) return Task.FromCanceled(cancellationToken);
        if (delay <= TimeSpan.Zero) return Task.CompletedTask;
        var done = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var registration = cancellationToken.Register(() => done.TrySetCanceled(cancellationToken));
        var timer = time.CreateTimer(_ => done.TrySetResult(), null, Timeout.InfiniteTimeSpan, Timeout.InfiniteTimeSpan);
        timer.Change(delay, Timeout.InfiniteTimeSpan);
        return done.Task.ContinueWith(
            t =>
            {
                registration.Dispose();
                timer.Dispose();
                return t;
            },
            CancellationToken.None, TaskContinuationOptions.ExecuteSynchronously, TaskScheduler.Default).Unwrap();
    }
}

namespace AgentGraph.Sdk;

/// <summary>The retry budget and waits of one logical call (defaults: 5 attempts, 30 s, 200 ms, 30 s, 60 s).</summary>
public sealed record RetrySettings
{
    /// <summary>Requests per logical call, the first included.</summary>
    public int MaxAttempts { get; init; } = 5;
    /// <summary>Time from the start of a call after which no wait may end, in ms.</summary>
    public double BudgetMs { get; init; } = 30_000;
    /// <summary>Median first backoff delay of the decorrelated-jitter formula, whole ms.</summary>
    public int BaseDelayMs { get; init; } = 200;
    /// <summary>Upper bound of one backoff delay (Polly's MaxDelay), in ms.</summary>
    public double MaxDelayMs { get; init; } = 30_000;
    /// <summary>Longest server-requested wait the client obeys; a longer one ends the call at once.</summary>
    public double MaxRetryAfterMs { get; init; } = 60_000;

    internal RetrySettings Validated()
    {
        static void Check(string name, double value, double min)
        {
            if (!double.IsFinite(value) || value < min)
                throw new ArgumentException($"AgentGraphClient: retry.{name} must be a number ≥ {min}, got {value}.");
        }
        Check(nameof(MaxAttempts), MaxAttempts, 1);
        Check(nameof(BudgetMs), BudgetMs, 0);
        Check(nameof(BaseDelayMs), BaseDelayMs, 0);
        Check(nameof(MaxDelayMs), MaxDelayMs, 0);
        Check(nameof(MaxRetryAfterMs), MaxRetryAfterMs, 0);
        return this;
    }
}

/// <summary>The part of the <c>capabilities</c> query the runtime reads (null: absent).</summary>
public sealed record Capabilities
{
    /// <summary>The server's payload cap in bytes.</summary>
    public long? MaxPayloadBytes { get; init; }
    /// <summary>Replaces <see cref="RetrySettings.MaxAttempts"/>.</summary>
    public int? RetryMaxAttempts { get; init; }
    /// <summary>Replaces <see cref="RetrySettings.BudgetMs"/>.</summary>
    public double? RetryBudgetMs { get; init; }
    /// <summary>The polling interval of the stream fallback.</summary>
    public double? PollIntervalMs { get; init; }
    /// <summary>Whether the server wants client telemetry.</summary>
    public bool? TelemetryEnabled { get; init; }

    /// <summary>The query that reads them.</summary>
    public const string Document =
        "query Capabilities { capabilities { limits { maxPayloadBytes } " +
        "client { retryMaxAttempts retryBudgetMs pollIntervalMs telemetryEnabled } } }";
}

/// <summary>The settings in effect: defaults ← options ← capabilities (the server's word wins).</summary>
public sealed record EffectiveSettings(RetrySettings Retry, long MaxPayloadBytes, TimeSpan Timeout)
{
    /// <summary>Default local payload cap: 5 MiB.</summary>
    public const long DefaultMaxPayloadBytes = 5 * 1024 * 1024;
    /// <summary>Default per-attempt timeout: 10 s.</summary>
    public static readonly TimeSpan DefaultTimeout = TimeSpan.FromSeconds(10);

    /// <summary>From capabilities: the stream fallback's polling interval.</summary>
    public double? PollIntervalMs { get; init; }

    /// <summary>The settings after applying the server's capabilities (absent or invalid values left alone).</summary>
    public EffectiveSettings Apply(Capabilities capabilities)
    {
        ArgumentNullException.ThrowIfNull(capabilities);
        static bool Positive(double? v) => v is { } d && double.IsFinite(d) && d > 0;
        var retry = Retry;
        if (Positive(capabilities.RetryMaxAttempts)) retry = retry with { MaxAttempts = capabilities.RetryMaxAttempts!.Value };
        if (Positive(capabilities.RetryBudgetMs)) retry = retry with { BudgetMs = capabilities.RetryBudgetMs!.Value };
        return this with
        {
            Retry = retry,
            MaxPayloadBytes = Positive(capabilities.MaxPayloadBytes) ? capabilities.MaxPayloadBytes!.Value : MaxPayloadBytes,
            PollIntervalMs = Positive(capabilities.PollIntervalMs) ? capabilities.PollIntervalMs : PollIntervalMs,
        };
    }
}

namespace AgentGraph.Sdk;

/// <summary>What to do after a failed attempt.</summary>
public abstract record RetryDecision
{
    /// <summary>Refresh the token and resend at once.</summary>
    public sealed record Refresh : RetryDecision;
    /// <summary>Wait this long, then resend.</summary>
    public sealed record Wait(double DelayMs) : RetryDecision;
    /// <summary>Throw the error with this reason.</summary>
    public sealed record GiveUp(string Reason) : RetryDecision;
}

/// <summary>The state of one logical call the decision reads.</summary>
/// <param name="Attempts">Requests sent so far.</param>
/// <param name="Retries">Waits so far (the backoff's attempt index).</param>
/// <param name="Refreshed">Whether the token was already refreshed in this call.</param>
/// <param name="CanRefresh">Whether a token provider exists.</param>
/// <param name="MayRetry">Queries, and mutations carrying an idempotency key.</param>
/// <param name="StartedAtMs">Clock time the call started.</param>
public sealed record RetryState(int Attempts, int Retries, bool Refreshed, bool CanRefresh, bool MayRetry, double StartedAtMs);

/// <summary>
/// The retry decision as one pure function (a line-by-line port of the TypeScript SDK's retry.ts): refresh once on
/// UNAUTHENTICATED; give up when not retryable, not idempotent or out of attempts (no random drawn); else draw the
/// jitter delay, replace it by the server's wait (above the cap: give up), and give up if it would end past the budget.
/// </summary>
public static class RetryPolicy
{
    /// <summary>Decides after <paramref name="error"/>.</summary>
    public static RetryDecision Decide(
        AgentGraphException error, RetryState state, RetrySettings settings, DecorrelatedJitterBackoff backoff, double nowMs)
    {
        ArgumentNullException.ThrowIfNull(error);
        ArgumentNullException.ThrowIfNull(state);
        ArgumentNullException.ThrowIfNull(settings);
        ArgumentNullException.ThrowIfNull(backoff);
        if (Classify.WantsTokenRefresh(error))
        {
            if (state.Refreshed || !state.CanRefresh) return new RetryDecision.GiveUp(GiveUpReasons.Unauthenticated);
            if (state.Attempts >= settings.MaxAttempts) return new RetryDecision.GiveUp(GiveUpReasons.Attempts);
            return new RetryDecision.Refresh();
        }
        if (!error.Retryable) return new RetryDecision.GiveUp(GiveUpReasons.NotRetryable);
        if (!state.MayRetry) return new RetryDecision.GiveUp(GiveUpReasons.NotIdempotent);
        if (state.Attempts >= settings.MaxAttempts) return new RetryDecision.GiveUp(GiveUpReasons.Attempts);
        var delayMs = backoff.Next(state.Retries);
        if (error.RetryAfterMs is { } requested)
        {
            if (requested > settings.MaxRetryAfterMs) return new RetryDecision.GiveUp(GiveUpReasons.RetryAfterCap);
            delayMs = requested;
        }
        if (nowMs - state.StartedAtMs + delayMs > settings.BudgetMs) return new RetryDecision.GiveUp(GiveUpReasons.Budget);
        return new RetryDecision.Wait(delayMs);
    }
}

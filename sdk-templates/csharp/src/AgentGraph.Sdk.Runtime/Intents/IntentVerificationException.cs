namespace AgentGraph.Sdk.Intents;

/// <summary>
/// Why an intent was refused; <c>Code</c> is <c>INTENT_&lt;Reason&gt;</c> (MALFORMED, WRONG_TYP, ALG_NOT_ALLOWED,
/// UNKNOWN_KID, FORGED_SIGNATURE, WRONG_ISSUER, WRONG_AUDIENCE, EXPIRED, NOT_YET_VALID, MISSING_CLAIM,
/// INVALID_CLAIM, REPLAYED, JWKS_UNAVAILABLE). Only JWKS_UNAVAILABLE is retryable. The message never holds the token.
/// </summary>
public sealed class IntentVerificationException(string reason, string message, string? claim = null, Exception? cause = null)
    : AgentGraphException(new AgentGraphErrorInit
    {
        Code = $"INTENT_{reason}",
        Message = $"Intent refused ({reason}): {message}",
        Retryable = reason == "JWKS_UNAVAILABLE",
        Cause = cause,
    })
{
    /// <summary>The reason (the code without <c>INTENT_</c>).</summary>
    public string Reason { get; } = reason;

    /// <summary>The claim concerned, when one is.</summary>
    public string? Claim { get; } = claim;
}

/// <summary>Seen <c>jti</c>s, kept until the intent can no longer be valid (exp + skew).</summary>
public interface IReplayCache
{
    /// <summary>Records <paramref name="jti"/> until <paramref name="keepUntil"/> and returns true, or false for a replay.</summary>
    ValueTask<bool> RememberAsync(string jti, double keepUntil, double now, CancellationToken cancellationToken = default);
}

/// <summary>An in-memory replay cache (tests; a process that must survive restarts needs a persistent one).</summary>
public sealed class MemoryReplayCache : IReplayCache
{
    private readonly Dictionary<string, double> _seen = new(StringComparer.Ordinal);

    /// <inheritdoc/>
    public ValueTask<bool> RememberAsync(string jti, double keepUntil, double now, CancellationToken cancellationToken = default)
    {
        cancellationToken.ThrowIfCancellationRequested();
        lock (_seen)
        {
            foreach (var key in _seen.Where(p => p.Value <= now).Select(p => p.Key).ToList()) _seen.Remove(key);
            if (_seen.ContainsKey(jti)) return ValueTask.FromResult(false);
            _seen[jti] = keepUntil;
            return ValueTask.FromResult(true);
        }
    }
}

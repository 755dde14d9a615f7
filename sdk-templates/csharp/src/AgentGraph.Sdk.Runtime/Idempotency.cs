namespace AgentGraph.Sdk;

/// <summary>
/// Idempotency keys: one per logical call, sent unchanged on every attempt as the <c>idempotencyKey</c> variable and
/// the <c>Idempotency-Key</c> header. A caller that must survive restarts (the outbox) persists its key and passes it.
/// </summary>
public static class Idempotency
{
    /// <summary>The variable every mutation declares for its key.</summary>
    public const string Variable = "idempotencyKey";
    /// <summary>The header.</summary>
    public const string Header = "Idempotency-Key";

    /// <summary>A random UUID.</summary>
    public static string RandomKey() => Guid.NewGuid().ToString();

    /// <summary>The key of one call: the caller's (option or variable), else a new one. Two different keys throw.</summary>
    public static string Resolve(string? fromOptions, string? fromVariables, Func<string> newKey)
    {
        ArgumentNullException.ThrowIfNull(newKey);
        var variableKey = string.IsNullOrEmpty(fromVariables) ? null : fromVariables;
        if (fromOptions is not null && variableKey is not null && fromOptions != variableKey)
            throw new ArgumentException("The call got two different idempotency keys (CallOptions.IdempotencyKey and the idempotencyKey variable). Pass one.");
        var key = fromOptions ?? variableKey ?? newKey();
        if (string.IsNullOrEmpty(key)) throw new ArgumentException("The idempotency key must be a non-empty string.");
        return key;
    }
}

using System.Collections;
using Microsoft.Extensions.Logging;

namespace AgentGraph.Sdk;

/// <summary>
/// One metadata-only log entry (per attempt, retry wait, privacy drop and finished call). Built field by field from
/// metadata — never from headers, tokens, idempotency keys, variables or bodies — so a logger cannot leak them.
/// Logged as structured state (each property a key/value pair).
/// </summary>
public sealed record SdkLogEntry : IReadOnlyList<KeyValuePair<string, object?>>
{
    /// <summary>attempt | retry | call | privacy-drop.</summary>
    public required string Event { get; init; }
    /// <summary>Always POST.</summary>
    public string Method { get; init; } = "POST";
    /// <summary>The operation name.</summary>
    public required string Operation { get; init; }
    /// <summary>query | mutation.</summary>
    public required string Kind { get; init; }
    /// <summary>Requests sent so far for the call.</summary>
    public int Attempts { get; init; }
    /// <summary>The attempt's round trip, or the call so far.</summary>
    public double LatencyMs { get; init; }
    /// <summary>Request body size.</summary>
    public long Bytes { get; init; }
    /// <summary>HTTP status of the last answer.</summary>
    public int? Status { get; init; }
    /// <summary>Error code of the last failure.</summary>
    public string? Code { get; init; }
    /// <summary>Size of the last response body.</summary>
    public long? ResponseBytes { get; init; }
    /// <summary>retry: the wait before the next attempt.</summary>
    public double? DelayMs { get; init; }
    /// <summary>call, failed: why the client stopped.</summary>
    public string? GiveUpReason { get; init; }
    /// <summary>privacy-drop: the variable paths removed.</summary>
    public IReadOnlyList<string>? Dropped { get; init; }

    private List<KeyValuePair<string, object?>> Pairs() =>
    [
        new("event", Event), new("method", Method), new("operation", Operation), new("kind", Kind),
        new("attempts", Attempts), new("latencyMs", LatencyMs), new("bytes", Bytes), new("status", Status),
        new("code", Code), new("responseBytes", ResponseBytes), new("delayMs", DelayMs),
        new("giveUpReason", GiveUpReason), new("dropped", Dropped is null ? null : string.Join(",", Dropped)),
        new("{OriginalFormat}", "agentgraph {event} {operation} attempts={attempts} status={status} code={code}"),
    ];

    /// <inheritdoc/>
    public int Count => Pairs().Count;
    /// <inheritdoc/>
    public KeyValuePair<string, object?> this[int index] => Pairs()[index];
    /// <inheritdoc/>
    public IEnumerator<KeyValuePair<string, object?>> GetEnumerator() => Pairs().GetEnumerator();
    IEnumerator IEnumerable.GetEnumerator() => GetEnumerator();

    /// <inheritdoc/>
    public override string ToString() =>
        $"agentgraph {Event} {Operation} attempts={Attempts} status={Status} code={Code} latencyMs={LatencyMs} bytes={Bytes}" +
        (DelayMs is null ? "" : $" delayMs={DelayMs}") + (GiveUpReason is null ? "" : $" giveUp={GiveUpReason}");

    internal static void Write(ILogger logger, SdkLogEntry entry)
    {
        var level = entry.Code is null ? LogLevel.Debug : LogLevel.Information;
        if (!logger.IsEnabled(level)) return;
        logger.Log(level, new EventId(4100, entry.Event), entry, null, static (s, _) => s.ToString());
    }
}

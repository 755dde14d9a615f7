using System.Text.Json.Nodes;

namespace AgentGraph.Sdk;

/// <summary>Why the retry loop stopped and threw (set on the thrown error), as the conformance vectors spell it.</summary>
public static class GiveUpReasons
{
    /// <summary>The error is not retryable (or the call failed locally: privacy gate, payload cap).</summary>
    public const string NotRetryable = "not-retryable";
    /// <summary>The error is retryable but the operation is not: a keyless mutation is never resent.</summary>
    public const string NotIdempotent = "not-idempotent";
    /// <summary>UNAUTHENTICATED after the one token refresh, a failed refresh, or no token provider.</summary>
    public const string Unauthenticated = "unauthenticated";
    /// <summary><c>MaxAttempts</c> requests were sent.</summary>
    public const string Attempts = "attempts";
    /// <summary>The next wait would end after <c>BudgetMs</c> from the start of the call.</summary>
    public const string Budget = "budget";
    /// <summary>The server asked to wait longer than <c>MaxRetryAfterMs</c>.</summary>
    public const string RetryAfterCap = "retry-after-cap";
}

/// <summary>One entry of a GraphQL response's <c>errors</c>.</summary>
/// <param name="Message">The error message.</param>
/// <param name="Path">The response path, when given.</param>
/// <param name="Extensions">The error's extensions, when given.</param>
public sealed record GraphQLErrorShape(string Message, JsonArray? Path, JsonObject? Extensions);

/// <summary>What every AgentGraph error is made from.</summary>
public sealed record AgentGraphErrorInit
{
    /// <summary>A table code, or NETWORK_ERROR, TIMEOUT, PRIVACY_REFUSED, INVALID_RESPONSE, HTTP_ERROR, GRAPHQL_ERROR.</summary>
    public required string Code { get; init; }
    /// <summary>What went wrong and what to do.</summary>
    public required string Message { get; init; }
    /// <summary>Whether resending the same request (same idempotency key) can succeed.</summary>
    public required bool Retryable { get; init; }
    /// <summary>HTTP status of the answer, when there was one.</summary>
    public int? Status { get; init; }
    /// <summary>The wait the server asked for, in milliseconds.</summary>
    public double? RetryAfterMs { get; init; }
    /// <summary>The server's correlation id.</summary>
    public string? CorrelationId { get; init; }
    /// <summary>Response path of the first GraphQL error.</summary>
    public JsonArray? Path { get; init; }
    /// <summary>Every GraphQL error of the response.</summary>
    public IReadOnlyList<GraphQLErrorShape>? Errors { get; init; }
    /// <summary>Partial data that came with field errors.</summary>
    public JsonNode? PartialData { get; init; }
    /// <summary>The underlying exception.</summary>
    public Exception? Cause { get; init; }
}

/// <summary>
/// What every failed call throws. The server's codes (schemas/errors.json) each get a generated subclass
/// (<c>RATE_LIMITED</c> → <c>RateLimitedException</c>); the client's own failures have fixed classes.
/// </summary>
public class AgentGraphException : Exception
{
    /// <summary>Creates the error.</summary>
    public AgentGraphException(AgentGraphErrorInit init)
        : base((init ?? throw new ArgumentNullException(nameof(init))).Message, init.Cause)
    {
        Code = init.Code;
        Retryable = init.Retryable;
        Status = init.Status;
        RetryAfterMs = init.RetryAfterMs;
        CorrelationId = init.CorrelationId;
        ErrorPath = init.Path;
        Errors = init.Errors ?? [];
        PartialData = init.PartialData;
    }

    /// <summary>A code from the error table, or the client's own (NETWORK_ERROR, TIMEOUT, ...).</summary>
    public string Code { get; }
    /// <summary>Whether retrying the same request (same idempotency key) can succeed.</summary>
    public bool Retryable { get; }
    /// <summary>HTTP status of the answer, when there was one.</summary>
    public int? Status { get; }
    /// <summary>The wait the server asked for (<c>extensions.retryAfterMs</c>, else <c>Retry-After</c>), in ms.</summary>
    public double? RetryAfterMs { get; }
    /// <summary>The server's correlation id: quote it in reports.</summary>
    public string? CorrelationId { get; }
    /// <summary>Response path of the first GraphQL error.</summary>
    public JsonArray? ErrorPath { get; }
    /// <summary>Every error of the response (the first one gave the code and message).</summary>
    public IReadOnlyList<GraphQLErrorShape> Errors { get; }
    /// <summary>Partial data that came with field errors, if any.</summary>
    public JsonNode? PartialData { get; }
    /// <summary>Requests sent for the logical call (set by the client when it gives up).</summary>
    public int Attempts { get; internal set; } = 1;
    /// <summary>Why the client stopped retrying (<see cref="GiveUpReasons"/>), set when it gives up.</summary>
    public string? GiveUpReason { get; internal set; }
}

/// <summary>The request never got an HTTP answer (connection refused or reset, DNS, TLS). Retryable.</summary>
public sealed class NetworkException(string message, Exception? cause = null)
    : AgentGraphException(new AgentGraphErrorInit { Code = "NETWORK_ERROR", Message = message, Retryable = true, Cause = cause });

/// <summary>No complete answer within the per-attempt timeout. Retryable (the key makes a resend safe).</summary>
public sealed class AttemptTimeoutException(string message, Exception? cause = null)
    : AgentGraphException(new AgentGraphErrorInit { Code = "TIMEOUT", Message = message, Retryable = true, Cause = cause });

/// <summary>The answer was not a GraphQL response (not JSON, or neither <c>data</c> nor <c>errors</c>).</summary>
public sealed class InvalidResponseException(AgentGraphErrorInit init) : AgentGraphException(init);

/// <summary>One variable the privacy gate refused: the path and the rule, never the value.</summary>
/// <param name="Path">Concrete variable path, e.g. <c>input.items[2].note</c>.</param>
/// <param name="Reason"><c>class:&lt;DataClass&gt;</c> for a forbidden required field, else the detector id.</param>
public sealed record PrivacyRefusal(string Path, string Reason);

/// <summary>The privacy gate refused the call before anything was serialized or sent. Not retryable.</summary>
public sealed class PrivacyException(string operation, IReadOnlyList<PrivacyRefusal> refusals)
    : AgentGraphException(new AgentGraphErrorInit
    {
        Code = "PRIVACY_REFUSED",
        Retryable = false,
        Message = $"The privacy gate refused {operation}: {string.Join(", ", refusals.Select(r => $"{r.Path} ({r.Reason})"))}. " +
                  "Nothing was sent. Remove these values, or allow their data class in the client's privacy policy if sending them is intended.",
    })
{
    /// <summary>Every refused value, in document order.</summary>
    public IReadOnlyList<PrivacyRefusal> Refusals { get; } = refusals;
}

/// <summary>One row of schemas/errors.json.</summary>
/// <param name="Code">The code.</param>
/// <param name="Http">Its HTTP analogue.</param>
/// <param name="Retry">never | refresh-once | backoff | after | resend-document.</param>
/// <param name="Description">What it means.</param>
public sealed record ErrorCodeEntry(string Code, int Http, string Retry, string Description);

/// <summary>
/// The error table turned into lookups and exception factories. Generated code builds one from schemas/errors.json
/// with a factory per code (its generated exception class).
/// </summary>
public sealed class ErrorRegistry
{
    private readonly Dictionary<string, ErrorCodeEntry> _entries = new(StringComparer.Ordinal);
    private readonly Dictionary<int, string> _byStatus = [];
    private readonly IReadOnlyDictionary<string, Func<AgentGraphErrorInit, AgentGraphException>> _factories;

    /// <summary>Creates the registry.</summary>
    public ErrorRegistry(
        IEnumerable<ErrorCodeEntry> codes,
        IReadOnlyDictionary<string, Func<AgentGraphErrorInit, AgentGraphException>>? factories = null)
    {
        ArgumentNullException.ThrowIfNull(codes);
        var statusCodes = new Dictionary<int, List<string>>();
        foreach (var entry in codes)
        {
            _entries[entry.Code] = entry;
            if (!statusCodes.TryGetValue(entry.Http, out var list)) statusCodes[entry.Http] = list = [];
            list.Add(entry.Code);
        }
        // A status stands for a code only when exactly one code has it (409 and 400 are ambiguous).
        foreach (var (status, list) in statusCodes)
            if (list.Count == 1) _byStatus[status] = list[0];
        _factories = factories ?? new Dictionary<string, Func<AgentGraphErrorInit, AgentGraphException>>();
    }

    /// <summary>The table row of a code, if the table knows it.</summary>
    public ErrorCodeEntry? Entry(string code) => _entries.GetValueOrDefault(code);

    /// <summary>The one table code whose HTTP analogue is <paramref name="status"/>, if exactly one has it.</summary>
    public string? CodeForStatus(int status) => _byStatus.TryGetValue(status, out var code) ? code : null;

    /// <summary>The exception for a code: its generated class, else <see cref="AgentGraphException"/>.</summary>
    public AgentGraphException Create(AgentGraphErrorInit init)
    {
        ArgumentNullException.ThrowIfNull(init);
        return _factories.TryGetValue(init.Code, out var factory) ? factory(init) : new AgentGraphException(init);
    }

    /// <summary><c>RATE_LIMITED</c> → <c>RateLimited</c> (generated classes add <c>Exception</c>).</summary>
    public static string PascalCase(string code) =>
        string.Concat((code ?? "").ToLowerInvariant().Split('_', StringSplitOptions.RemoveEmptyEntries)
            .Select(p => char.ToUpperInvariant(p[0]) + p[1..]));
}

using System.Text.Json.Nodes;

namespace AgentGraph.Sdk;

/// <summary>One HTTP answer: status, headers (lower-case names), the body parsed as JSON (null if not JSON).</summary>
public sealed record HttpAnswer(int Status, IReadOnlyDictionary<string, string> Headers, JsonNode? Body, long Bytes)
{
    /// <summary>A header value by lower-case name.</summary>
    public string? Header(string name) => Headers.TryGetValue(name, out var v) ? v : null;
}

/// <summary>
/// Retry classification (docs/architecture.md#error-codes): an answer carrying errors → a typed exception and whether a resend can
/// succeed. A table code decides by its retry column (backoff, after retry); no code: the status decides (408, 429,
/// 5xx retry); several errors: the first gives code and class, retryable only if all are; no GraphQL body: the one
/// table code with that status, else HTTP_ERROR.
/// </summary>
public static class Classify
{
    /// <summary>408, 429 and 5xx may be retried.</summary>
    public static bool StatusIsRetryable(int status) => status == 408 || status == 429 || (status >= 500 && status <= 599);

    /// <summary>Whether one GraphQL error, answered with <paramref name="status"/>, may be retried.</summary>
    public static bool ErrorIsRetryable(ErrorRegistry registry, string? code, int status)
    {
        ArgumentNullException.ThrowIfNull(registry);
        var entry = code is null ? null : registry.Entry(code);
        return entry is not null ? entry.Retry is "backoff" or "after" : StatusIsRetryable(status);
    }

    /// <summary>UNAUTHENTICATED, or a bare 401: refresh the token once.</summary>
    public static bool WantsTokenRefresh(AgentGraphException error) =>
        error.Code == "UNAUTHENTICATED" || (error.Status == 401 && error.Errors.Count == 0);

    /// <summary>The GraphQL errors of a body, or null when it has none.</summary>
    public static List<GraphQLErrorShape>? GraphQLErrorsOf(JsonNode? body)
    {
        if (body is not JsonObject obj || obj["errors"] is not JsonArray { Count: > 0 } errors) return null;
        return errors.Select(e =>
        {
            var entry = e as JsonObject;
            var message = entry?["message"] is JsonValue v && v.TryGetValue<string>(out var s) ? s : "Unknown error";
            return new GraphQLErrorShape(message, entry?["path"] as JsonArray, entry?["extensions"] as JsonObject);
        }).ToList();
    }

    private static string? CodeOf(GraphQLErrorShape e) =>
        e.Extensions?["code"] is JsonValue v && v.TryGetValue<string>(out var s) ? s : null;

    /// <summary>
    /// The server's requested wait: <c>extensions.retryAfterMs</c> of the first error when a non-negative number,
    /// else the <c>Retry-After</c> header.
    /// </summary>
    public static double? RequestedDelayMs(IReadOnlyList<GraphQLErrorShape> errors, HttpAnswer answer, double nowMs)
    {
        ArgumentNullException.ThrowIfNull(errors);
        ArgumentNullException.ThrowIfNull(answer);
        if (errors.Count > 0 && errors[0].Extensions?["retryAfterMs"] is JsonValue v && v.TryGetValue<double>(out var ms)
            && double.IsFinite(ms) && ms >= 0)
            return ms;
        return RetryAfter.Parse(answer.Header("retry-after"), nowMs);
    }

    /// <summary>The error a failed answer stands for (it has errors, or a non-2xx status, or no data).</summary>
    public static AgentGraphException ErrorFromAnswer(ErrorRegistry registry, HttpAnswer answer, double nowMs)
    {
        ArgumentNullException.ThrowIfNull(registry);
        ArgumentNullException.ThrowIfNull(answer);
        var status = answer.Status;
        var errors = GraphQLErrorsOf(answer.Body);
        if (errors is not null)
        {
            var first = errors[0];
            var code = CodeOf(first) ?? (status >= 400 ? registry.CodeForStatus(status) ?? "HTTP_ERROR" : "GRAPHQL_ERROR");
            var retryable = errors.All(e => ErrorIsRetryable(registry, CodeOf(e) ?? code, status));
            var correlationId = first.Extensions?["correlationId"] is JsonValue c && c.TryGetValue<string>(out var cs)
                ? cs
                : answer.Header("x-correlation-id");
            var data = answer.Body is JsonObject o ? o["data"] : null;
            return registry.Create(new AgentGraphErrorInit
            {
                Code = code,
                Message = first.Message,
                Retryable = retryable,
                Status = status,
                Errors = errors,
                RetryAfterMs = RequestedDelayMs(errors, answer, nowMs),
                CorrelationId = correlationId,
                Path = first.Path,
                PartialData = data,
            });
        }
        var retryAfterMs = RetryAfter.Parse(answer.Header("retry-after"), nowMs);
        var corr = answer.Header("x-correlation-id");
        if (status >= 200 && status < 300)
        {
            return new InvalidResponseException(new AgentGraphErrorInit
            {
                Code = "INVALID_RESPONSE",
                Retryable = false,
                Status = status,
                RetryAfterMs = retryAfterMs,
                CorrelationId = corr,
                Message = $"The server answered {status} without a GraphQL response (no \"data\" or \"errors\"). Check the base URL.",
            });
        }
        var retryableStatus = StatusIsRetryable(status);
        return registry.Create(new AgentGraphErrorInit
        {
            Code = registry.CodeForStatus(status) ?? "HTTP_ERROR",
            Retryable = retryableStatus,
            Status = status,
            RetryAfterMs = retryAfterMs,
            CorrelationId = corr,
            Message = $"The server answered HTTP {status} without GraphQL errors{(retryableStatus ? "; retrying may help" : "")}.",
        });
    }
}

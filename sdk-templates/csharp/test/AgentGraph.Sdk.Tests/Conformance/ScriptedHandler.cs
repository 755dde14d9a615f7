using System.Net;
using System.Text;
using System.Text.Json.Nodes;

namespace AgentGraph.Sdk.Tests.Conformance;

/// <summary>
/// The fake network: answers the SDK's requests from the vector's <c>exchanges</c>, in order, and records every
/// difference between what the SDK sent and what the vector expects (it never throws a mismatch at the SDK).
/// </summary>
internal sealed class ScriptedHandler(JsonArray exchanges, ConformanceTime time) : HttpMessageHandler
{
    public List<string> Problems { get; } = [];
    public int Requests { get; private set; }
    public Action AbortCaller { get; set; } = () => { };

    protected override async Task<HttpResponseMessage> SendAsync(HttpRequestMessage request, CancellationToken cancellationToken)
    {
        var index = Requests++;
        if (index >= exchanges.Count)
        {
            Problems.Add($"request #{index + 1} was sent, but the vector scripts only {exchanges.Count}");
            throw new HttpRequestException("conformance: unexpected request");
        }
        var exchange = exchanges[index]!.AsObject();
        await CheckAsync(index, request, exchange["request"] as JsonObject ?? []).ConfigureAwait(false);
        var r = exchange["response"] as JsonObject ?? [];
        if (Json.Bool(r["abortCaller"]) == true) AbortCaller();
        if (Json.Num(r["latencyMs"]) is { } latency && latency > 0) time.Advance(latency);
        cancellationToken.ThrowIfCancellationRequested();
        switch (Json.Str(r["fault"]))
        {
            case "network": throw new HttpRequestException("scripted network fault (connection reset)");
            case "timeout": throw new TaskCanceledException("scripted timeout", new TimeoutException("The operation timed out (scripted)."));
        }
        var text = Json.Str(r["bodyText"]) ?? (r.ContainsKey("body") ? (r["body"]?.ToJsonString() ?? "null") : null);
        var response = new HttpResponseMessage((HttpStatusCode)(int)(Json.Num(r["status"]) ?? 200))
        {
            Content = new ByteArrayContent(text is null ? [] : Encoding.UTF8.GetBytes(text)),
            RequestMessage = request,
        };
        response.Content.Headers.TryAddWithoutValidation("content-type", "application/graphql-response+json; charset=utf-8");
        foreach (var (name, value) in r["headers"] as JsonObject ?? [])
        {
            if (name.Equals("content-type", StringComparison.OrdinalIgnoreCase)) response.Content.Headers.Remove("content-type");
            if (!response.Headers.TryAddWithoutValidation(name, Json.Str(value)))
                response.Content.Headers.TryAddWithoutValidation(name, Json.Str(value));
        }
        return response;
    }

    public IEnumerable<string> FinalProblems()
    {
        foreach (var p in Problems) yield return p;
        if (Requests < exchanges.Count) yield return $"only {Requests} of the {exchanges.Count} scripted requests were sent";
    }

    private static string? HeaderOf(HttpRequestMessage request, string name)
    {
        // NonValidated: the values exactly as the SDK added them (what goes on the wire), not re-formatted by parsing.
        if (request.Headers.NonValidated.TryGetValues(name, out var values)) return string.Join(", ", values);
        if (request.Content is not null && request.Content.Headers.NonValidated.TryGetValues(name, out var cvalues)) return string.Join(", ", cvalues);
        return null;
    }

    private async Task CheckAsync(int index, HttpRequestMessage request, JsonObject want)
    {
        var at = $"request #{index + 1}";
        if (Json.Str(want["method"]) is { } method && request.Method.Method != method)
            Problems.Add($"{at}: method {request.Method}, expected {method}");
        if (Json.Str(want["url"]) is { } url && request.RequestUri?.ToString() != url)
            Problems.Add($"{at}: url {request.RequestUri}, expected {url}");
        foreach (var (name, value) in want["headers"] as JsonObject ?? [])
        {
            var got = HeaderOf(request, name);
            if (value is null && got is not null) Problems.Add($"{at}: header {name} must be absent");
            if (value is not null && got != Json.Str(value)) Problems.Add($"{at}: header {name} is {got}, expected {Json.Str(value)}");
        }
        if (!want.ContainsKey("body") && !want.ContainsKey("variables")) return;
        JsonNode? body;
        try
        {
            body = JsonNode.Parse(request.Content is null ? "" : await request.Content.ReadAsStringAsync().ConfigureAwait(false));
        }
        catch (System.Text.Json.JsonException)
        {
            Problems.Add($"{at}: the body is not JSON");
            return;
        }
        if (want["body"] is { } wantBody) Problems.AddRange(Json.SubsetProblems(wantBody, body, $"{at} body"));
        if (want["variables"] is { } wantVariables)
        {
            var variables = body?["variables"];
            if (!Json.Equal(wantVariables, variables))
                Problems.Add($"{at}: variables {Json.Show(variables)}, expected exactly {Json.Show(wantVariables)}");
        }
    }
}

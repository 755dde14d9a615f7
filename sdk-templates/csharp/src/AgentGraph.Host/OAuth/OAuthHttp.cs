using System.Text.Json;
using System.Text.Json.Nodes;

namespace AgentGraph.Host.OAuth;

/// <summary>One form POST to an OAuth endpoint; the JSON answer, or an <see cref="OAuthException"/>.</summary>
internal static class OAuthHttp
{
    public static async Task<JsonObject> PostFormAsync(
        HttpClient http, Uri endpoint, IEnumerable<KeyValuePair<string, string>> form, CancellationToken cancellationToken)
    {
        using var request = new HttpRequestMessage(HttpMethod.Post, endpoint) { Content = new FormUrlEncodedContent(form) };
        request.Headers.Accept.ParseAdd("application/json");
        using var response = await http.SendAsync(request, cancellationToken).ConfigureAwait(false);
        var text = await response.Content.ReadAsStringAsync(cancellationToken).ConfigureAwait(false);
        JsonObject? body = null;
        try
        {
            body = text.Length == 0 ? null : JsonNode.Parse(text) as JsonObject;
        }
        catch (JsonException)
        {
            // Not JSON: handled below.
        }
        var status = (int)response.StatusCode;
        if (body?["error"] is JsonValue e && e.TryGetValue<string>(out var error))
            throw new OAuthException(error, body["error_description"]?.GetValue<string>(), status);
        if (!response.IsSuccessStatusCode)
            throw new OAuthException("server_error", $"{endpoint.AbsolutePath} answered HTTP {status} without an OAuth error body", status);
        if (body is null && text.Length > 0)
            throw new OAuthException("invalid_response", $"{endpoint.AbsolutePath} answered HTTP {status} with a body that is not a JSON object", status);
        return body ?? new JsonObject();
    }

    public static string RequiredString(JsonObject body, string name, string what)
    {
        if (body[name] is JsonValue v && v.TryGetValue<string>(out var s) && s.Length > 0) return s;
        throw new OAuthException("invalid_response", $"the {what} answer has no {name}", 200);
    }

    public static long? OptionalLong(JsonObject body, string name)
    {
        if (body[name] is not JsonValue v) return null;
        if (v.TryGetValue<long>(out var l)) return l;
        if (v.TryGetValue<double>(out var d) && d >= 0 && d == Math.Floor(d)) return (long)d;
        return null;
    }
}

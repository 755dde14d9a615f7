using System.Net.Http.Headers;
using System.Text;
using System.Text.Json;
using System.Text.Json.Nodes;

namespace AgentGraph.Sdk;

/// <summary>
/// One GraphQL-over-HTTP exchange: POST a JSON body, accept <c>application/graphql-response+json</c> (and legacy
/// <c>application/json</c>), read the whole answer within the per-attempt timeout. Failures without an HTTP answer
/// become <see cref="NetworkException"/> or <see cref="AttemptTimeoutException"/>; the caller's token cancelling
/// becomes <see cref="OperationCanceledException"/>. Any HTTP answer is returned for classification.
/// The per-attempt timeout is a wall-clock guard (the system timer), like the TypeScript SDK's: the injected
/// TimeProvider drives the retry waits and the budget, which tests assert exactly.
/// </summary>
public static class Transport
{
    /// <summary>The Accept header.</summary>
    public const string Accept = "application/graphql-response+json, application/json;q=0.9";

    /// <summary>Sends one request.</summary>
    public static async Task<HttpAnswer> SendAsync(
        HttpClient http, Uri url, IReadOnlyDictionary<string, string> headers, byte[] body, TimeSpan timeout, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(http);
        ArgumentNullException.ThrowIfNull(headers);
        cancellationToken.ThrowIfCancellationRequested();
        using var timeoutSource = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        timeoutSource.CancelAfter(timeout);
        using var request = new HttpRequestMessage(HttpMethod.Post, url);
        request.Content = new ByteArrayContent(body);
        request.Content.Headers.ContentType = new MediaTypeHeaderValue("application/json");
        foreach (var (name, value) in headers)
        {
            if (name.Equals("content-type", StringComparison.OrdinalIgnoreCase)) continue;
            request.Headers.TryAddWithoutValidation(name, value);
        }
        try
        {
            using var response = await http.SendAsync(request, HttpCompletionOption.ResponseContentRead, timeoutSource.Token).ConfigureAwait(false);
            var bytes = await response.Content.ReadAsByteArrayAsync(timeoutSource.Token).ConfigureAwait(false);
            JsonNode? parsed = null;
            if (bytes.Length > 0)
            {
                try
                {
                    parsed = JsonNode.Parse(bytes);
                }
                catch (JsonException)
                {
                    parsed = null;
                }
            }
            var answerHeaders = new Dictionary<string, string>(StringComparer.OrdinalIgnoreCase);
            foreach (var (name, values) in response.Headers.Concat(response.Content.Headers))
                answerHeaders[name.ToLowerInvariant()] = string.Join(", ", values);
            return new HttpAnswer((int)response.StatusCode, answerHeaders, parsed, bytes.Length);
        }
        catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
        {
            throw;
        }
        catch (OperationCanceledException error)
        {
            // Our timer fired, or the handler reported its own timeout (TaskCanceledException with a TimeoutException).
            throw new AttemptTimeoutException(
                $"No complete answer within {timeout.TotalMilliseconds} ms. The request may or may not have been processed; " +
                "a retry with the same idempotency key is safe.", error);
        }
        catch (HttpRequestException error)
        {
            throw new NetworkException($"The request failed before an HTTP answer arrived: {error.Message}", error);
        }
        catch (IOException error)
        {
            throw new NetworkException($"The request failed before an HTTP answer arrived: {error.Message}", error);
        }
    }

    /// <summary>UTF-8 byte count.</summary>
    public static int Utf8Length(string text) => Encoding.UTF8.GetByteCount(text ?? "");
}

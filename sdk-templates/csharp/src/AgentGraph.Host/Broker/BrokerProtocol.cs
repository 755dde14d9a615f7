using System.Text;
using System.Text.Json;
using System.Text.Json.Nodes;
using AgentGraph.Host.OAuth;
using AgentGraph.Host.Tokens;

namespace AgentGraph.Host.Broker;

/// <summary>Options of the token broker.</summary>
public sealed record TokenBrokerOptions
{
    /// <summary>Who may ask.</summary>
    public required BrokerPolicy Policy { get; init; }
    /// <summary>Trades the host's token for the sidecar's.</summary>
    public required ITokenExchanger Exchanger { get; init; }
    /// <summary>The audience used when the request names none (identity's <c>TOKEN_AUDIENCE</c>, default <c>agentgraph</c>).</summary>
    public string DefaultAudience { get; init; } = "agentgraph";
    /// <summary>The scope used when the request names none.</summary>
    public string DefaultScope { get; init; } = "api:read";
    /// <summary>How long a client has to send its request line (default 5 s).</summary>
    public TimeSpan RequestTimeout { get; init; } = TimeSpan.FromSeconds(5);
    /// <summary>Hears each decision (metadata only: pid, uid, executable, allowed, reason).</summary>
    public Action<PeerCredentials?, BrokerDecision>? OnDecision { get; init; }
}

/// <summary>
/// The broker's one-line JSON protocol (README): the client sends one line <c>{"audience"?, "scope"?}</c>, the broker
/// answers one line — <c>{"access_token", "expires_in"}</c> or <c>{"error", "error_description"}</c> — and closes.
/// </summary>
public static class BrokerProtocol
{
    /// <summary>The longest request line accepted, in bytes.</summary>
    public const int MaxRequestBytes = 4096;

    /// <summary>Answers one request line from a peer already decided (the transport-independent part).</summary>
    public static async Task<string> AnswerAsync(TokenBrokerOptions options, BrokerDecision decision, string? line, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(options);
        ArgumentNullException.ThrowIfNull(decision);
        if (!decision.Allowed) return Error("access_denied", $"refused: {decision.Reason}");
        if (line is null) return Error("invalid_request", $"send one JSON line of at most {MaxRequestBytes} bytes, e.g. {{\"scope\":\"api:read\"}}");
        JsonObject? request;
        try
        {
            request = JsonNode.Parse(line) as JsonObject;
        }
        catch (JsonException)
        {
            request = null;
        }
        if (request is null) return Error("invalid_request", "the request line is not a JSON object");
        foreach (var (name, _) in request)
            if (name is not ("audience" or "scope")) return Error("invalid_request", $"unknown member {name}: only audience and scope");
        if (!TryString(request, "audience", out var audience) || !TryString(request, "scope", out var scope))
            return Error("invalid_request", "audience and scope must be non-empty strings when present");
        try
        {
            var token = await options.Exchanger.ExchangeAsync(audience ?? options.DefaultAudience, scope ?? options.DefaultScope, cancellationToken)
                .ConfigureAwait(false);
            // Only these two members: never a refresh token, never the host's own token.
            return new JsonObject { ["access_token"] = token.AccessToken, ["expires_in"] = token.ExpiresIn }.ToJsonString(Json.Compact);
        }
        catch (OAuthException e)
        {
            return Error(e.Error, e.Description ?? "the token exchange failed");
        }
        catch (HttpRequestException)
        {
            return Error("temporarily_unavailable", "identity could not be reached; try again");
        }
    }

    private static bool TryString(JsonObject o, string name, out string? value)
    {
        value = null;
        if (!o.TryGetPropertyValue(name, out var node)) return true;
        if (node is JsonValue v && v.TryGetValue<string>(out var s) && s.Length is > 0 and <= 1000)
        {
            value = s;
            return true;
        }
        return false;
    }

    internal static string Error(string error, string description) =>
        new JsonObject { ["error"] = error, ["error_description"] = description }.ToJsonString(Json.Compact);

    /// <summary>Reads one line (up to <see cref="MaxRequestBytes"/>); null when it is too long or the stream ended first.</summary>
    internal static async Task<string?> ReadLineAsync(Stream stream, CancellationToken cancellationToken)
    {
        var buffer = new byte[MaxRequestBytes + 1];
        var length = 0;
        while (length < buffer.Length)
        {
            var n = await stream.ReadAsync(buffer.AsMemory(length, buffer.Length - length), cancellationToken).ConfigureAwait(false);
            if (n == 0) return null;
            var newline = Array.IndexOf(buffer, (byte)'\n', length, n);
            length += n;
            if (newline >= 0) return newline > MaxRequestBytes ? null : Encoding.UTF8.GetString(buffer, 0, newline);
        }
        return null;
    }

    internal static async Task WriteLineAsync(Stream stream, string line, CancellationToken cancellationToken)
    {
        await stream.WriteAsync(Encoding.UTF8.GetBytes(line + "\n"), cancellationToken).ConfigureAwait(false);
        await stream.FlushAsync(cancellationToken).ConfigureAwait(false);
    }

    /// <summary>Decides, reads, answers, for one accepted connection of any transport.</summary>
    internal static async Task ServeAsync(TokenBrokerOptions options, Stream stream, PeerCredentials? peer, CancellationToken cancellationToken)
    {
        var decision = options.Policy.Decide(peer);
        options.OnDecision?.Invoke(peer, decision);
        using var timeout = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        timeout.CancelAfter(options.RequestTimeout);
        // The line is read from a refused peer too (bounded in size and time, never parsed): closing a socket with
        // unread data resets the connection, and the refusal would not arrive.
        string? line;
        try
        {
            line = await ReadLineAsync(stream, timeout.Token).ConfigureAwait(false);
        }
        catch (OperationCanceledException) when (!cancellationToken.IsCancellationRequested)
        {
            line = null;
        }
        var answer = await AnswerAsync(options, decision, line, cancellationToken).ConfigureAwait(false);
        await WriteLineAsync(stream, answer, cancellationToken).ConfigureAwait(false);
    }
}

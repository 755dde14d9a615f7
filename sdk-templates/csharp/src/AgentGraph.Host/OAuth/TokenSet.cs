using System.Text;
using System.Text.Json.Nodes;
using AgentGraph.Sdk.Intents;

namespace AgentGraph.Host.OAuth;

/// <summary>The desktop's tokens. Never logged.</summary>
/// <param name="AccessToken">The access token (an ES256 JWT for <c>urn:agentgraph:api</c>).</param>
/// <param name="RefreshToken">The refresh token (rotated on every refresh).</param>
/// <param name="ExpiresAt">When the access token expires.</param>
/// <param name="Scope">Granted scopes, space-separated.</param>
public sealed record TokenSet(string AccessToken, string? RefreshToken, DateTimeOffset ExpiresAt, string? Scope)
{
    /// <summary>A token endpoint answer, with <c>expires_in</c> counted from <paramref name="now"/>.</summary>
    internal static TokenSet FromTokenResponse(JsonObject body, DateTimeOffset now, string? previousRefreshToken = null)
    {
        var access = OAuthHttp.RequiredString(body, "access_token", "token");
        var expiresIn = OAuthHttp.OptionalLong(body, "expires_in")
            ?? throw new OAuthException("invalid_response", "the token answer has no expires_in", 200);
        var refresh = body["refresh_token"]?.GetValue<string>() ?? previousRefreshToken;
        return new TokenSet(access, refresh, now.AddSeconds(expiresIn), body["scope"]?.GetValue<string>());
    }

    /// <summary>The claims of a JWT, unverified (the host reads its own token's <c>did</c>; servers verify).</summary>
    public static JsonObject ReadClaims(string jwt)
    {
        ArgumentNullException.ThrowIfNull(jwt);
        var parts = jwt.Split('.');
        if (parts.Length != 3) throw new FormatException("not a compact JWS (three dot-separated parts expected)");
        return JsonNode.Parse(Encoding.UTF8.GetString(Base64Url.Decode(parts[1]))) as JsonObject
            ?? throw new FormatException("the JWT payload is not a JSON object");
    }
}

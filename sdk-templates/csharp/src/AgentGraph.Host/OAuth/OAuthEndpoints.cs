namespace AgentGraph.Host.OAuth;

/// <summary>Identity's OAuth endpoints (RFC 8414 names) and the desktop client's fixed parameters.</summary>
/// <param name="Issuer">The issuer (identity's origin, <c>TOKEN_ISSUER</c>).</param>
/// <param name="TokenEndpoint"><c>/oauth/token</c>.</param>
/// <param name="DeviceAuthorizationEndpoint"><c>/oauth/device_authorization</c> (RFC 8628).</param>
/// <param name="RevocationEndpoint"><c>/oauth/revoke</c> (RFC 7009).</param>
public sealed record OAuthEndpoints(Uri Issuer, Uri TokenEndpoint, Uri DeviceAuthorizationEndpoint, Uri RevocationEndpoint)
{
    /// <summary>The desktop's public client id.</summary>
    public const string DesktopClientId = "agentgraph-desktop";
    /// <summary>What the desktop asks for at enrolment.</summary>
    public const string DesktopScope = "openid offline_access api:read api:write";
    /// <summary>The API resource (RFC 8707).</summary>
    public const string ApiResource = "urn:agentgraph:api";
    /// <summary>RFC 8628's grant type.</summary>
    public const string DeviceCodeGrant = "urn:ietf:params:oauth:grant-type:device_code";
    /// <summary>RFC 8693's grant type.</summary>
    public const string TokenExchangeGrant = "urn:ietf:params:oauth:grant-type:token-exchange";
    /// <summary>RFC 8693's access-token type.</summary>
    public const string AccessTokenType = "urn:ietf:params:oauth:token-type:access_token";

    /// <summary>The endpoints at identity's paths under <paramref name="issuer"/>.</summary>
    public static OAuthEndpoints ForIssuer(Uri issuer)
    {
        ArgumentNullException.ThrowIfNull(issuer);
        if (!issuer.IsAbsoluteUri) throw new ArgumentException("OAuthEndpoints: the issuer must be an absolute URL (identity's origin).", nameof(issuer));
        var root = issuer.AbsoluteUri.TrimEnd('/');
        return new OAuthEndpoints(
            issuer,
            new Uri(root + "/oauth/token"),
            new Uri(root + "/oauth/device_authorization"),
            new Uri(root + "/oauth/revoke"));
    }
}

/// <summary>An OAuth error answer (RFC 6749 §5.2, RFC 8628 §3.5) or a malformed answer.</summary>
public sealed class OAuthException : Exception
{
    /// <summary>Creates the exception.</summary>
    public OAuthException(string error, string? description, int status)
        : base($"OAuth error {error} (HTTP {status}){(description is null ? "" : ": " + description)}")
    {
        Error = error;
        Description = description;
        Status = status;
    }

    /// <summary>The RFC error code, e.g. <c>access_denied</c>, <c>expired_token</c>, <c>invalid_grant</c>.</summary>
    public string Error { get; }
    /// <summary>The server's <c>error_description</c>.</summary>
    public string? Description { get; }
    /// <summary>The HTTP status (0 when the request never got an answer).</summary>
    public int Status { get; }
}

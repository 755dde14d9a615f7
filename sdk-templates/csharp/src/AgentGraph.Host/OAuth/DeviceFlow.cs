using System.Text.Json.Nodes;

namespace AgentGraph.Host.OAuth;

/// <summary>An RFC 8628 device authorization answer: what to show the user, and how to poll.</summary>
/// <param name="DeviceCode">The secret the device polls with (never shown, never logged).</param>
/// <param name="UserCode">The code the user types or confirms, e.g. <c>WDJB-MJHT</c>.</param>
/// <param name="VerificationUri">Where the user goes.</param>
/// <param name="VerificationUriComplete">The same page with the code filled in (for a link or QR code).</param>
/// <param name="ExpiresAt">When the codes expire.</param>
/// <param name="Interval">The minimum wait between polls.</param>
public sealed record DeviceAuthorization(
    string DeviceCode, string UserCode, Uri VerificationUri, Uri? VerificationUriComplete, DateTimeOffset ExpiresAt, TimeSpan Interval);

/// <summary>What the desktop says about itself at enrolment (identity's <c>device_*</c> parameters).</summary>
/// <param name="Name">Shown to the approving user (1 to 100 characters).</param>
/// <param name="Platform"><c>windows</c>, <c>macos</c> or <c>linux</c>.</param>
/// <param name="PublicJwk">The device's public key as JSON (see <see cref="Reports.DeviceKey.PublicJwkJson"/>).</param>
public sealed record DeviceDescription(string Name, string Platform, string PublicJwk)
{
    /// <summary>This machine's platform name as identity spells it.</summary>
    public static string CurrentPlatform =>
        OperatingSystem.IsWindows() ? "windows" : OperatingSystem.IsMacOS() ? "macos" : "linux";
}

/// <summary>
/// The device authorization grant (RFC 8628) for the desktop client: request the codes (with the device's name,
/// platform and public key), show them through a callback, then poll the token endpoint — the first poll one
/// interval after the request, <c>authorization_pending</c> keeps polling, <c>slow_down</c> adds 5 s to the interval
/// for good (§3.5), <c>access_denied</c>, <c>expired_token</c> and anything else end it as an
/// <see cref="OAuthException"/>; the codes' expiry ends it locally as <c>expired_token</c>. Waits run on the injected
/// <see cref="TimeProvider"/>.
/// </summary>
public sealed class DeviceFlowClient
{
    private static readonly TimeSpan SlowDownStep = TimeSpan.FromSeconds(5);
    private readonly OAuthEndpoints _endpoints;
    private readonly HttpClient _http;
    private readonly TimeProvider _time;

    /// <summary>Creates the client; <paramref name="http"/> is not disposed by it.</summary>
    public DeviceFlowClient(OAuthEndpoints endpoints, HttpClient http, TimeProvider? time = null)
    {
        _endpoints = endpoints ?? throw new ArgumentNullException(nameof(endpoints));
        _http = http ?? throw new ArgumentNullException(nameof(http));
        _time = time ?? TimeProvider.System;
    }

    /// <summary>Asks for a device code and a user code (<c>/oauth/device_authorization</c>).</summary>
    public async Task<DeviceAuthorization> StartAsync(DeviceDescription device, string scope = OAuthEndpoints.DesktopScope, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(device);
        var body = await OAuthHttp.PostFormAsync(_http, _endpoints.DeviceAuthorizationEndpoint,
        [
            new("client_id", OAuthEndpoints.DesktopClientId),
            new("scope", scope),
            new("resource", OAuthEndpoints.ApiResource),
            new("device_name", device.Name),
            new("device_platform", device.Platform),
            new("device_jwk", device.PublicJwk),
        ], cancellationToken).ConfigureAwait(false);
        var now = _time.GetUtcNow();
        var complete = body["verification_uri_complete"]?.GetValue<string>();
        var expiresIn = OAuthHttp.OptionalLong(body, "expires_in")
            ?? throw new OAuthException("invalid_response", "the device authorization answer has no expires_in", 200);
        return new DeviceAuthorization(
            OAuthHttp.RequiredString(body, "device_code", "device authorization"),
            OAuthHttp.RequiredString(body, "user_code", "device authorization"),
            new Uri(OAuthHttp.RequiredString(body, "verification_uri", "device authorization")),
            complete is null ? null : new Uri(complete),
            now.AddSeconds(expiresIn),
            TimeSpan.FromSeconds(OAuthHttp.OptionalLong(body, "interval") ?? 5));
    }

    /// <summary>
    /// Polls until the user decides. <paramref name="onPoll"/> hears each answer (<c>authorization_pending</c>,
    /// <c>slow_down</c>, <c>tokens</c>); it never sees a token.
    /// </summary>
    public async Task<TokenSet> PollAsync(DeviceAuthorization authorization, Action<string>? onPoll = null, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(authorization);
        var interval = authorization.Interval;
        while (true)
        {
            await Task.Delay(interval, _time, cancellationToken).ConfigureAwait(false);
            if (_time.GetUtcNow() >= authorization.ExpiresAt)
                throw new OAuthException("expired_token", "the device code expired before the user approved it; start again", 400);
            JsonObject body;
            try
            {
                body = await OAuthHttp.PostFormAsync(_http, _endpoints.TokenEndpoint,
                [
                    new("grant_type", OAuthEndpoints.DeviceCodeGrant),
                    new("device_code", authorization.DeviceCode),
                    new("client_id", OAuthEndpoints.DesktopClientId),
                ], cancellationToken).ConfigureAwait(false);
            }
            catch (OAuthException e) when (e.Error is "authorization_pending")
            {
                onPoll?.Invoke(e.Error);
                continue;
            }
            catch (OAuthException e) when (e.Error is "slow_down")
            {
                onPoll?.Invoke(e.Error);
                interval += SlowDownStep;
                continue;
            }
            onPoll?.Invoke("tokens");
            return TokenSet.FromTokenResponse(body, _time.GetUtcNow());
        }
    }

    /// <summary>Start, show the codes through <paramref name="show"/>, poll: the whole enrolment.</summary>
    public async Task<TokenSet> EnrolAsync(
        DeviceDescription device, Func<DeviceAuthorization, CancellationToken, ValueTask> show,
        Action<string>? onPoll = null, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(show);
        var authorization = await StartAsync(device, cancellationToken: cancellationToken).ConfigureAwait(false);
        await show(authorization, cancellationToken).ConfigureAwait(false);
        return await PollAsync(authorization, onPoll, cancellationToken).ConfigureAwait(false);
    }
}

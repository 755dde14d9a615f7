using AgentGraph.Host.OAuth;
using AgentGraph.Sdk;

namespace AgentGraph.Host.Tokens;

/// <summary>A short-lived token for the sidecar (RFC 8693): the access token and its lifetime only.</summary>
/// <param name="AccessToken">The exchanged access token.</param>
/// <param name="ExpiresIn">Seconds until it expires (at most 300).</param>
/// <param name="Scope">Its scopes.</param>
public sealed record ExchangedToken(string AccessToken, long ExpiresIn, string? Scope);

/// <summary>Trades the host's access token for a sidecar token.</summary>
public interface ITokenExchanger
{
    /// <summary>An RFC 8693 exchange for <paramref name="audience"/> with <paramref name="scope"/> (a subset of the host's).</summary>
    Task<ExchangedToken> ExchangeAsync(string audience, string scope, CancellationToken cancellationToken = default);
}

/// <summary>
/// The enrolled host's tokens: serves the access token to the SDK (<see cref="ITokenProvider"/>), refreshes it
/// 5 minutes before expiry (on demand in <see cref="GetTokenAsync"/>, and on time in <see cref="RunRefreshLoopAsync"/>),
/// one refresh at a time, storing each rotated refresh token atomically before using the new access token;
/// exchanges tokens for the sidecar; signs out by revoking (RFC 7009) and purging the store.
/// </summary>
public sealed class HostTokenManager : ITokenProvider, ITokenExchanger
{
    /// <summary>How long before expiry a token is refreshed.</summary>
    public static readonly TimeSpan RefreshAhead = TimeSpan.FromMinutes(5);
    private readonly OAuthEndpoints _endpoints;
    private readonly HttpClient _http;
    private readonly ITokenStore _store;
    private readonly TimeProvider _time;
    private readonly SemaphoreSlim _refreshing = new(1, 1);
    private HostCredentials _credentials;

    /// <summary>Creates the manager over enrolled credentials (with tokens).</summary>
    public HostTokenManager(OAuthEndpoints endpoints, HttpClient http, ITokenStore store, HostCredentials credentials, TimeProvider? time = null)
    {
        _endpoints = endpoints ?? throw new ArgumentNullException(nameof(endpoints));
        _http = http ?? throw new ArgumentNullException(nameof(http));
        _store = store ?? throw new ArgumentNullException(nameof(store));
        ArgumentNullException.ThrowIfNull(credentials);
        if (credentials.Tokens is null) throw new ArgumentException("HostTokenManager: the credentials hold no tokens; enrol the device first (DeviceFlowClient).", nameof(credentials));
        _credentials = credentials;
        _time = time ?? TimeProvider.System;
    }

    /// <summary>The current credentials.</summary>
    public HostCredentials Credentials => Volatile.Read(ref _credentials);

    private TokenSet Tokens => Credentials.Tokens ?? throw new InvalidOperationException("HostTokenManager: signed out; enrol the device again.");

    /// <summary>When the current token is due for refresh.</summary>
    public DateTimeOffset RefreshDueAt => Tokens.ExpiresAt - RefreshAhead;

    /// <inheritdoc />
    public async ValueTask<string> GetTokenAsync(CancellationToken cancellationToken)
    {
        var tokens = Tokens;
        if (_time.GetUtcNow() < tokens.ExpiresAt - RefreshAhead) return tokens.AccessToken;
        return (await RefreshIfStaleAsync(tokens, cancellationToken).ConfigureAwait(false)).AccessToken;
    }

    /// <inheritdoc />
    public async ValueTask<string> RefreshAsync(CancellationToken cancellationToken) =>
        (await RefreshIfStaleAsync(Tokens, cancellationToken).ConfigureAwait(false)).AccessToken;

    /// <summary>
    /// Refreshes each token 5 minutes before it expires, until cancelled. A failed refresh is thrown (an
    /// <see cref="OAuthException"/> <c>invalid_grant</c> means the grant was revoked: enrol again).
    /// </summary>
    public async Task RunRefreshLoopAsync(CancellationToken cancellationToken)
    {
        while (true)
        {
            var tokens = Tokens;
            var wait = tokens.ExpiresAt - RefreshAhead - _time.GetUtcNow();
            if (wait > TimeSpan.Zero) await Task.Delay(wait, _time, cancellationToken).ConfigureAwait(false);
            await RefreshIfStaleAsync(tokens, cancellationToken).ConfigureAwait(false);
        }
    }

    /// <summary>Refreshes unless another caller already replaced <paramref name="seen"/> (single flight).</summary>
    private async Task<TokenSet> RefreshIfStaleAsync(TokenSet seen, CancellationToken cancellationToken)
    {
        await _refreshing.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            var current = Tokens;
            if (!ReferenceEquals(current, seen)) return current;
            if (current.RefreshToken is null)
                throw new OAuthException("invalid_grant", "no refresh token is stored (offline_access was not granted); enrol again", 0);
            var body = await OAuthHttp.PostFormAsync(_http, _endpoints.TokenEndpoint,
            [
                new("grant_type", "refresh_token"),
                new("refresh_token", current.RefreshToken),
                new("client_id", OAuthEndpoints.DesktopClientId),
            ], CancellationToken.None).ConfigureAwait(false);
            // Not cancellable from here: the old refresh token is spent, the new one must reach the store.
            var next = TokenSet.FromTokenResponse(body, _time.GetUtcNow(), current.RefreshToken);
            var updated = Credentials with { Tokens = next };
            await _store.SaveAsync(updated, CancellationToken.None).ConfigureAwait(false);
            Volatile.Write(ref _credentials, updated);
            return next;
        }
        finally
        {
            _refreshing.Release();
        }
    }

    /// <inheritdoc />
    public async Task<ExchangedToken> ExchangeAsync(string audience, string scope, CancellationToken cancellationToken = default)
    {
        ArgumentException.ThrowIfNullOrEmpty(audience);
        ArgumentException.ThrowIfNullOrEmpty(scope);
        var subject = await GetTokenAsync(cancellationToken).ConfigureAwait(false);
        var body = await OAuthHttp.PostFormAsync(_http, _endpoints.TokenEndpoint,
        [
            new("grant_type", OAuthEndpoints.TokenExchangeGrant),
            new("client_id", OAuthEndpoints.DesktopClientId),
            new("subject_token", subject),
            new("subject_token_type", OAuthEndpoints.AccessTokenType),
            new("requested_token_type", OAuthEndpoints.AccessTokenType),
            new("audience", audience),
            new("resource", OAuthEndpoints.ApiResource),
            new("scope", scope),
        ], cancellationToken).ConfigureAwait(false);
        var expiresIn = OAuthHttp.OptionalLong(body, "expires_in")
            ?? throw new OAuthException("invalid_response", "the token exchange answer has no expires_in", 200);
        return new ExchangedToken(OAuthHttp.RequiredString(body, "access_token", "token exchange"), expiresIn, body["scope"]?.GetValue<string>());
    }

    /// <summary>
    /// Signs out: revokes the refresh token (ends the grant and its access tokens) and the access token (RFC 7009),
    /// then purges the store — also when revocation fails (the error is thrown after the purge).
    /// </summary>
    public async Task SignOutAsync(CancellationToken cancellationToken = default)
    {
        await _refreshing.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            var tokens = Credentials.Tokens;
            Exception? failure = null;
            if (tokens is not null)
            {
                foreach (var (token, hint) in new[] { (tokens.RefreshToken, "refresh_token"), (tokens.AccessToken, "access_token") })
                {
                    if (token is null) continue;
                    try
                    {
                        await OAuthHttp.PostFormAsync(_http, _endpoints.RevocationEndpoint,
                        [
                            new("token", token),
                            new("token_type_hint", hint),
                            new("client_id", OAuthEndpoints.DesktopClientId),
                        ], cancellationToken).ConfigureAwait(false);
                    }
                    catch (Exception e) when (e is OAuthException or HttpRequestException)
                    {
                        failure ??= e;
                    }
                }
            }
            await _store.PurgeAsync(CancellationToken.None).ConfigureAwait(false);
            Volatile.Write(ref _credentials, Credentials with { Tokens = null, DeviceId = null });
            if (failure is not null)
                throw new OAuthException("revocation_failed", $"the store was purged but revocation failed ({failure.Message}); revoke the device from the console", 0);
        }
        finally
        {
            _refreshing.Release();
        }
    }
}

using System.Net;
using System.Text.Json.Nodes;
using AgentGraph.Host.OAuth;
using AgentGraph.Host.Reports;
using AgentGraph.Host.Tokens;

namespace AgentGraph.Host.Tests;

public class TokenManagerTests
{
    private static readonly OAuthEndpoints Endpoints = OAuthEndpoints.ForIssuer(new Uri("https://id.test"));

    private static (HostTokenManager Manager, FileTokenStore Store, ScriptedOAuth OAuth) Make(SignallingTime time, TempDir dir)
    {
        using var key = DeviceKey.Generate();
        var credentials = new HostCredentials(key.Export(), "device-1", new TokenSet("at-0", "rt-0", time.GetUtcNow().AddMinutes(15), "api:read api:write"));
        var store = new FileTokenStore(Path.Combine(dir.Path, "agentgraph", "credentials.json"));
        var oauth = new ScriptedOAuth(time);
        return (new HostTokenManager(Endpoints, new HttpClient(oauth), store, credentials, time), store, oauth);
    }

    [Fact]
    public async Task Serves_the_token_until_5_minutes_before_expiry_then_refreshes_once_and_stores_the_rotation()
    {
        var time = new SignallingTime();
        using var dir = new TempDir();
        var (manager, store, oauth) = Make(time, dir);
        oauth.ThenTokens(1);

        Assert.Equal("at-0", await manager.GetTokenAsync(CancellationToken.None));
        time.Advance(TimeSpan.FromMinutes(10) - TimeSpan.FromTicks(1));
        Assert.Equal("at-0", await manager.GetTokenAsync(CancellationToken.None));
        Assert.Empty(oauth.Requests);

        time.Advance(TimeSpan.FromTicks(1));
        var both = await Task.WhenAll(manager.GetTokenAsync(CancellationToken.None).AsTask(), manager.GetTokenAsync(CancellationToken.None).AsTask());
        Assert.Equal(["at-1", "at-1"], both);
        var refresh = Assert.Single(oauth.Requests);
        Assert.Equal("refresh_token", refresh.Form["grant_type"]);
        Assert.Equal("rt-0", refresh.Form["refresh_token"]);
        Assert.Equal("agentgraph-desktop", refresh.Form["client_id"]);

        var stored = await store.LoadAsync();
        Assert.Equal("rt-1", stored!.Tokens!.RefreshToken);
        Assert.Equal(time.GetUtcNow().AddSeconds(900), stored.Tokens.ExpiresAt);
        Assert.Equal("device-1", stored.DeviceId);
        Assert.Equal(manager.Credentials.DeviceKey, stored.DeviceKey);
    }

    [Fact]
    public async Task The_refresh_loop_refreshes_exactly_5_minutes_before_each_expiry()
    {
        var time = new SignallingTime();
        var t0 = time.GetUtcNow();
        using var dir = new TempDir();
        var (manager, store, oauth) = Make(time, dir);
        oauth.ThenTokens(1).ThenTokens(2);
        using var stop = new CancellationTokenSource();
        var loop = manager.RunRefreshLoopAsync(stop.Token);

        await time.AdvanceWhenArmedAsync(TimeSpan.FromMinutes(10) - TimeSpan.FromSeconds(1));
        Assert.Empty(oauth.Requests);
        time.Advance(TimeSpan.FromSeconds(1));
        // The loop arms its next wait only after the rotated token is stored.
        await time.AdvanceWhenArmedAsync(TimeSpan.FromMinutes(10));
        Assert.True(await time.TimerCreated.WaitAsync(TimeSpan.FromSeconds(10)));
        Assert.Equal([TimeSpan.FromMinutes(10), TimeSpan.FromMinutes(20)], oauth.Requests.Select(r => r.At - t0));
        Assert.Equal(["rt-0", "rt-1"], oauth.Requests.Select(r => r.Form["refresh_token"]));
        Assert.Equal("rt-2", (await store.LoadAsync())!.Tokens!.RefreshToken);
        Assert.Equal("at-2", await manager.GetTokenAsync(CancellationToken.None));

        await stop.CancelAsync();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => loop);
    }

    [Fact]
    public async Task A_revoked_grant_surfaces_as_invalid_grant_and_keeps_the_stored_tokens()
    {
        var time = new SignallingTime();
        using var dir = new TempDir();
        var (manager, store, oauth) = Make(time, dir);
        await store.SaveAsync(manager.Credentials);
        oauth.ThenError("invalid_grant");
        var e = await Assert.ThrowsAsync<OAuthException>(() => manager.RefreshAsync(CancellationToken.None).AsTask());
        Assert.Equal("invalid_grant", e.Error);
        Assert.Equal("rt-0", (await store.LoadAsync())!.Tokens!.RefreshToken);
    }

    [Fact]
    public async Task Exchange_sends_an_RFC_8693_request_and_returns_only_the_access_token_and_lifetime()
    {
        var time = new SignallingTime();
        using var dir = new TempDir();
        var (manager, _, oauth) = Make(time, dir);
        oauth.Then(HttpStatusCode.OK, new JsonObject
        {
            ["access_token"] = "sidecar", ["issued_token_type"] = OAuthEndpoints.AccessTokenType, ["token_type"] = "Bearer",
            ["expires_in"] = 300, ["scope"] = "api:read",
        });
        var token = await manager.ExchangeAsync("agentgraph", "api:read");
        Assert.Equal(new ExchangedToken("sidecar", 300, "api:read"), token);
        var form = Assert.Single(oauth.Requests).Form;
        Assert.Equal(new Dictionary<string, string>
        {
            ["grant_type"] = "urn:ietf:params:oauth:grant-type:token-exchange",
            ["client_id"] = "agentgraph-desktop",
            ["subject_token"] = "at-0",
            ["subject_token_type"] = "urn:ietf:params:oauth:token-type:access_token",
            ["requested_token_type"] = "urn:ietf:params:oauth:token-type:access_token",
            ["audience"] = "agentgraph",
            ["resource"] = "urn:agentgraph:api",
            ["scope"] = "api:read",
        }, form);
    }

    [Fact]
    public async Task Sign_out_revokes_the_refresh_and_access_tokens_and_purges_the_store()
    {
        var time = new SignallingTime();
        using var dir = new TempDir();
        var (manager, store, oauth) = Make(time, dir);
        await store.SaveAsync(manager.Credentials);
        oauth.Then(HttpStatusCode.OK, []).Then(HttpStatusCode.OK, []);
        await manager.SignOutAsync();
        Assert.Equal(["/oauth/revoke", "/oauth/revoke"], oauth.Requests.Select(r => r.Path));
        Assert.Equal([("rt-0", "refresh_token"), ("at-0", "access_token")], oauth.Requests.Select(r => (r.Form["token"], r.Form["token_type_hint"])));
        Assert.False(File.Exists(store.Path));
        Assert.Null(await store.LoadAsync());
        await Assert.ThrowsAsync<InvalidOperationException>(() => manager.GetTokenAsync(CancellationToken.None).AsTask());
    }

    [Fact]
    public async Task Sign_out_purges_even_when_revocation_fails_and_says_so()
    {
        var time = new SignallingTime();
        using var dir = new TempDir();
        var (manager, store, oauth) = Make(time, dir);
        await store.SaveAsync(manager.Credentials);
        oauth.Then(HttpStatusCode.ServiceUnavailable, []).Then(HttpStatusCode.OK, []);
        var e = await Assert.ThrowsAsync<OAuthException>(() => manager.SignOutAsync());
        Assert.Equal("revocation_failed", e.Error);
        Assert.False(File.Exists(store.Path));
    }
}

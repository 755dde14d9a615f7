using System.Net;
using System.Text.Json.Nodes;
using AgentGraph.Host.OAuth;
using AgentGraph.Host.Reports;

namespace AgentGraph.Host.Tests;

public class DeviceFlowTests
{
    private static readonly OAuthEndpoints Endpoints = OAuthEndpoints.ForIssuer(new Uri("https://id.test"));

    private static DeviceAuthorization Authorization(TimeProvider time, int expiresIn = 600, int interval = 5) =>
        new("dc", "BCDF-GHJK", new Uri("https://id.test/device"), new Uri("https://id.test/device?user_code=BCDF-GHJK"),
            time.GetUtcNow().AddSeconds(expiresIn), TimeSpan.FromSeconds(interval));

    [Fact]
    public async Task Start_sends_the_device_parameters_and_shows_the_codes()
    {
        var time = new SignallingTime();
        var oauth = new ScriptedOAuth(time).Then(HttpStatusCode.OK, new JsonObject
        {
            ["device_code"] = "dc", ["user_code"] = "BCDF-GHJK", ["verification_uri"] = "https://id.test/device",
            ["verification_uri_complete"] = "https://id.test/device?user_code=BCDF-GHJK", ["expires_in"] = 600, ["interval"] = 1,
        }).ThenTokens(1);
        using var key = DeviceKey.Generate();
        var flow = new DeviceFlowClient(Endpoints, new HttpClient(oauth), time);
        DeviceAuthorization? shown = null;
        var enrolling = flow.EnrolAsync(new DeviceDescription("Ada’s laptop", "linux", key.PublicJwkJson()), (a, _) =>
        {
            shown = a;
            return ValueTask.CompletedTask;
        });
        await time.AdvanceWhenArmedAsync(TimeSpan.FromSeconds(1));
        var tokens = await enrolling;

        Assert.Equal("BCDF-GHJK", shown!.UserCode);
        Assert.Equal(new Uri("https://id.test/device?user_code=BCDF-GHJK"), shown.VerificationUriComplete);
        Assert.Equal(TimeSpan.FromSeconds(1), shown.Interval);
        var start = oauth.Requests[0];
        Assert.Equal("/oauth/device_authorization", start.Path);
        Assert.Equal("agentgraph-desktop", start.Form["client_id"]);
        Assert.Equal("openid offline_access api:read api:write", start.Form["scope"]);
        Assert.Equal("urn:agentgraph:api", start.Form["resource"]);
        Assert.Equal("Ada’s laptop", start.Form["device_name"]);
        Assert.Equal("linux", start.Form["device_platform"]);
        var jwk = JsonNode.Parse(start.Form["device_jwk"])!.AsObject();
        Assert.Equal(["kty", "crv", "x", "y"], jwk.Select(p => p.Key));
        Assert.Equal(new TokenSet("at-1", "rt-1", time.GetUtcNow().AddSeconds(900), "api:read api:write"), tokens);
    }

    [Fact]
    public async Task Polls_at_the_interval_adds_5_s_per_slow_down_and_returns_the_tokens()
    {
        var time = new SignallingTime();
        var t0 = time.GetUtcNow();
        var oauth = new ScriptedOAuth(time).ThenError("authorization_pending").ThenError("slow_down").ThenError("authorization_pending").ThenTokens(1);
        var heard = new List<string>();
        var polling = new DeviceFlowClient(Endpoints, new HttpClient(oauth), time).PollAsync(Authorization(time), heard.Add);
        foreach (var step in new[] { 5, 5, 10, 10 }) await time.AdvanceWhenArmedAsync(TimeSpan.FromSeconds(step));
        var tokens = await polling;

        Assert.Equal("at-1", tokens.AccessToken);
        Assert.Equal(["authorization_pending", "slow_down", "authorization_pending", "tokens"], heard);
        Assert.Equal([5, 10, 20, 30], oauth.Requests.Select(r => (r.At - t0).TotalSeconds));
        Assert.All(oauth.Requests, r =>
        {
            Assert.Equal("/oauth/token", r.Path);
            Assert.Equal("urn:ietf:params:oauth:grant-type:device_code", r.Form["grant_type"]);
            Assert.Equal("dc", r.Form["device_code"]);
            Assert.Equal("agentgraph-desktop", r.Form["client_id"]);
        });
    }

    [Fact]
    public async Task Two_slow_downs_add_10_s()
    {
        var time = new SignallingTime();
        var t0 = time.GetUtcNow();
        var oauth = new ScriptedOAuth(time).ThenError("slow_down").ThenError("slow_down").ThenTokens(1);
        var polling = new DeviceFlowClient(Endpoints, new HttpClient(oauth), time).PollAsync(Authorization(time, interval: 1));
        foreach (var step in new[] { 1, 6, 11 }) await time.AdvanceWhenArmedAsync(TimeSpan.FromSeconds(step));
        await polling;
        Assert.Equal([1, 7, 18], oauth.Requests.Select(r => (r.At - t0).TotalSeconds));
    }

    [Theory]
    [InlineData("access_denied")]
    [InlineData("expired_token")]
    [InlineData("invalid_grant")]
    public async Task Ends_with_the_servers_error(string error)
    {
        var time = new SignallingTime();
        var oauth = new ScriptedOAuth(time).ThenError(error);
        var polling = new DeviceFlowClient(Endpoints, new HttpClient(oauth), time).PollAsync(Authorization(time));
        await time.AdvanceWhenArmedAsync(TimeSpan.FromSeconds(5));
        var e = await Assert.ThrowsAsync<OAuthException>(() => polling);
        Assert.Equal(error, e.Error);
        Assert.Equal(400, e.Status);
    }

    [Fact]
    public async Task Stops_at_the_codes_expiry_without_another_poll()
    {
        var time = new SignallingTime();
        var oauth = new ScriptedOAuth(time).ThenError("authorization_pending").ThenError("authorization_pending");
        var polling = new DeviceFlowClient(Endpoints, new HttpClient(oauth), time).PollAsync(Authorization(time, expiresIn: 12));
        foreach (var step in new[] { 5, 5, 5 }) await time.AdvanceWhenArmedAsync(TimeSpan.FromSeconds(step));
        var e = await Assert.ThrowsAsync<OAuthException>(() => polling);
        Assert.Equal("expired_token", e.Error);
        Assert.Equal(2, oauth.Requests.Count);
    }
}

using System.Text;
using AgentGraph.Host.Reports;
using AgentGraph.Sdk.Intents;

namespace AgentGraph.Host.Tests;

public class IntentReportTests
{
    [Fact]
    public void Signs_an_ES256_intent_report_with_the_device_key()
    {
        var time = new SignallingTime();
        using var key = DeviceKey.Generate();
        var signer = new IntentReportSigner(key, "device-1", time, () => "jti-1");
        var jws = signer.Sign("intent-1", "https://coordination.test", "FAILED", "disk full");
        var parts = jws.Split('.');
        Assert.Equal(3, parts.Length);
        Assert.Equal("""{"alg":"ES256","typ":"intent-report+jwt"}""", Encoding.UTF8.GetString(Base64Url.Decode(parts[0])));
        Assert.Equal(
            $$"""{"iss":"device-1","aud":"https://coordination.test","jti":"jti-1","iat":{{time.GetUtcNow().ToUnixTimeSeconds()}},"intent":"intent-1","state":"FAILED","reason":"disk full"}""",
            Encoding.UTF8.GetString(Base64Url.Decode(parts[1])));
        var signature = Base64Url.Decode(parts[2]);
        Assert.Equal(64, signature.Length);
        Assert.True(key.VerifyEs256(Encoding.ASCII.GetBytes(parts[0] + "." + parts[1]), signature));

        using var other = DeviceKey.Generate();
        Assert.False(other.VerifyEs256(Encoding.ASCII.GetBytes(parts[0] + "." + parts[1]), signature));
        Assert.DoesNotContain("reason", Encoding.UTF8.GetString(Base64Url.Decode(signer.Sign("i", "a", "EXECUTING").Split('.')[1])));
    }

    [Fact]
    public void The_key_round_trips_through_its_stored_form_and_publishes_only_public_members()
    {
        using var key = DeviceKey.Generate();
        using var again = DeviceKey.FromMaterial(key.Export());
        Assert.Equal(key.PublicJwkJson(), again.PublicJwkJson());
        Assert.Equal(key.Thumbprint(), again.Thumbprint());
        Assert.Equal(["kty", "crv", "x", "y"], key.PublicJwk().Select(p => p.Key));
        Assert.Matches("^[A-Za-z0-9_-]{43}$", key.Thumbprint());
        var signature = again.SignEs256("x"u8);
        Assert.True(key.VerifyEs256("x"u8, signature));
    }

    [Fact]
    public void The_thumbprint_is_RFC_7638()
    {
        // RFC 7638's member order and no whitespace: {"crv","kty","x","y"}; checked against an independent rendering.
        using var key = DeviceKey.Generate();
        var jwk = key.PublicJwk();
        var canonical = $$"""{"crv":"P-256","kty":"EC","x":"{{jwk["x"]}}","y":"{{jwk["y"]}}"}""";
        Assert.Equal(Base64Url.Encode(System.Security.Cryptography.SHA256.HashData(Encoding.UTF8.GetBytes(canonical))), key.Thumbprint());
    }
}

public class IntentReporterTests
{
    private sealed class Recording : HttpMessageHandler
    {
        public List<string> Bodies { get; } = [];

        protected override async Task<HttpResponseMessage> SendAsync(HttpRequestMessage request, CancellationToken cancellationToken)
        {
            Bodies.Add(await request.Content!.ReadAsStringAsync(cancellationToken));
            const string data = """{"data":{"reportIntentState":{"intent":{"id":"intent-1","device":{"id":"device-1","name":"n","platform":"linux","status":"ENROLLED","remoteActionsEnabled":true,"createdAt":"2026-01-01T00:00:00Z","keyThumbprint":"t","publicJwk":"{}"},"requester":{"id":"u","email":"e@x.test","displayName":"d","createdAt":"2026-01-01T00:00:00Z"},"action":"open-app","params":"{}","state":"EXECUTING","seq":1,"createdAt":"2026-01-01T00:00:00Z","expiresAt":"2026-01-01T00:10:00Z","jws":"x"}}}}""";
            return new HttpResponseMessage(System.Net.HttpStatusCode.OK) { Content = new StringContent(data, Encoding.UTF8, "application/json") };
        }
    }

    private static (IntentReporter Reporter, Recording Http, DeviceKey Key) Make()
    {
        var http = new Recording();
        var key = DeviceKey.Generate();
        var options = new AgentGraph.Sdk.AgentGraphClientOptions { BaseUrl = new Uri("https://api.test/graphql"), Handler = http };
        return (new IntentReporter(options, new IntentReportSigner(key, "device-1")), http, key);
    }

    [Fact]
    public async Task Sends_the_signed_report_past_the_content_detectors()
    {
        var (reporter, http, key) = Make();
        using (reporter)
        using (key)
        {
            var r = await reporter.ReportAsync("intent-1", "https://coordination.test", "EXECUTING");
            Assert.Equal("EXECUTING", r.Data.ReportIntentState.Intent.State.ToString());
            var sent = System.Text.Json.Nodes.JsonNode.Parse(Assert.Single(http.Bodies))!;
            var jws = (string)sent["variables"]!["report"]!;
            var parts = jws.Split('.');
            Assert.True(key.VerifyEs256(Encoding.ASCII.GetBytes(parts[0] + "." + parts[1]), Base64Url.Decode(parts[2])));
        }
    }

    [Fact]
    public async Task Refuses_a_reason_holding_a_secret_and_sends_nothing()
    {
        var (reporter, http, key) = Make();
        using (reporter)
        using (key)
        {
            var e = await Assert.ThrowsAsync<ArgumentException>(() =>
                reporter.ReportAsync("intent-1", "https://coordination.test", "FAILED", "login failed for postgres://app:hunter2@db/x"));
            Assert.Contains("url-password", e.Message);
            Assert.DoesNotContain("hunter2", e.Message);
            Assert.Empty(http.Bodies);
        }
    }
}

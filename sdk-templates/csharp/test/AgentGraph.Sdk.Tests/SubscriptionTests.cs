using System.Net;
using System.Net.Sockets;
using System.Text;
using System.Text.Json.Nodes;
using AgentGraph.Sdk.Subscriptions;
using AgentGraph.Sdk.Tests.Conformance;
using Xunit;

namespace AgentGraph.Sdk.Tests;

/// <summary>graphql-sse subscriptions against a loopback SSE server: resume, dedupe, verification, refusal.</summary>
public sealed class SubscriptionTests
{
    private static int FreePort()
    {
        var l = new TcpListener(IPAddress.Loopback, 0);
        l.Start();
        var port = ((IPEndPoint)l.LocalEndpoint).Port;
        l.Stop();
        return port;
    }

    private static async Task Events(HttpListenerResponse r, params string[] frames)
    {
        r.StatusCode = 200;
        r.ContentType = "text/event-stream";
        r.SendChunked = true;
        foreach (var frame in frames)
        {
            var bytes = Encoding.UTF8.GetBytes(frame);
            await r.OutputStream.WriteAsync(bytes);
            await r.OutputStream.FlushAsync();
        }
        r.Close();
    }

    private static string Next(long seq) => $": heartbeat\n\nevent: next\ndata: {{\"data\":{{\"roomMessages\":{{\"seq\":{seq},\"body\":\"m{seq}\"}}}}}}\n\n";

    [Fact]
    public async Task ResumesAfterTheLastSequenceDropsDuplicatesAndEndsOnARefusal()
    {
        var port = FreePort();
        var url = new Uri($"http://127.0.0.1:{port}/graphql");
        using var listener = new HttpListener();
        listener.Prefixes.Add($"http://127.0.0.1:{port}/graphql/stream/");
        listener.Start();
        var cursors = new List<string?>();
        var server = Task.Run(async () =>
        {
            for (var n = 1; n <= 3; n++)
            {
                var ctx = await listener.GetContextAsync();
                using var reader = new StreamReader(ctx.Request.InputStream);
                var body = JsonNode.Parse(await reader.ReadToEndAsync());
                cursors.Add(body?["variables"]?["afterSeq"]?.ToJsonString());
                Assert.Equal("Bearer t-1", ctx.Request.Headers["authorization"]);
                Assert.Equal("text/event-stream", ctx.Request.Headers["accept"]);
                if (n == 1) await Events(ctx.Response, Next(1), Next(2));
                else if (n == 2) await Events(ctx.Response, Next(2), Next(3), Next(4), "event: complete\ndata: \n\n");
                else
                {
                    ctx.Response.StatusCode = 403;
                    ctx.Response.ContentType = "application/graphql-response+json";
                    var bytes = Encoding.UTF8.GetBytes("""{"errors":[{"message":"no","extensions":{"code":"FORBIDDEN"}}]}""");
                    await ctx.Response.OutputStream.WriteAsync(bytes);
                    ctx.Response.Close();
                }
            }
        });
        using var client = new AgentGraphClient(new AgentGraphClientOptions
        {
            BaseUrl = url,
            Errors = ErrorTables.Registry,
            Retry = new RetrySettings { BaseDelayMs = 1, MaxDelayMs = 5 },
        });
        var subscriptions = new SubscriptionClient(client, new StaticTokens());
        var op = new OperationSpec("RoomMessages", "subscription RoomMessages($roomId: ID!, $afterSeq: Int) { roomMessages(roomId: $roomId, afterSeq: $afterSeq) { seq body } }",
            OperationKind.Subscription, false, new Dictionary<string, PrivacyRule>());
        var items = new List<SubscriptionItem>();
        var error = await Assert.ThrowsAsync<ForbiddenException>(async () =>
        {
            await foreach (var item in subscriptions.SubscribeAsync(op, new JsonObject { ["roomId"] = "r1" }, new SubscriptionOptions
            {
                CursorVariable = "afterSeq",
                SeqOf = e => (long)e["seq"]!,
                Select = d => d["roomMessages"],
                Verify = (e, _) => (long)e["seq"]! == 3
                    ? throw new AgentGraphException(new AgentGraphErrorInit { Code = "VERIFICATION_FAILED", Message = "bad", Retryable = false })
                    : Task.CompletedTask,
            }))
            {
                items.Add(item);
            }
        });
        await server;
        Assert.Equal("FORBIDDEN", error.Code);
        Assert.Equal([null, "2", "4"], cursors);
        Assert.Equal(["event:1", "event:2", "rejected:3", "event:4"], items.Select(i => $"{i.Type}:{i.Seq}"));
    }

    [Fact]
    public async Task CreateSubscriptionClientUsesTheClientsTokenProviderAndHeadersWithAFreshTokenOnEveryReconnect()
    {
        var port = FreePort();
        using var listener = new HttpListener();
        listener.Prefixes.Add($"http://127.0.0.1:{port}/graphql/stream/");
        listener.Start();
        var auth = new List<string?>();
        var apps = new List<string?>();
        var server = Task.Run(async () =>
        {
            for (var n = 1; n <= 3; n++)
            {
                var ctx = await listener.GetContextAsync();
                auth.Add(ctx.Request.Headers["authorization"]);
                apps.Add(ctx.Request.Headers["x-app"]);
                if (n < 3) await Events(ctx.Response, Next(n)); // each stream ends after one event: reconnect
                else
                {
                    ctx.Response.StatusCode = 403;
                    ctx.Response.ContentType = "application/graphql-response+json";
                    var bytes = Encoding.UTF8.GetBytes("""{"errors":[{"message":"no","extensions":{"code":"FORBIDDEN"}}]}""");
                    await ctx.Response.OutputStream.WriteAsync(bytes);
                    ctx.Response.Close();
                }
            }
        });
        var tokens = new CountingTokens();
        using var client = new AgentGraphClient(new AgentGraphClientOptions
        {
            BaseUrl = new Uri($"http://127.0.0.1:{port}/graphql"),
            Errors = ErrorTables.Registry,
            TokenProvider = tokens,
            Headers = new Dictionary<string, string> { ["x-app"] = "host" },
            Retry = new RetrySettings { BaseDelayMs = 1, MaxDelayMs = 5 },
        });
        var subscriptions = client.CreateSubscriptionClient();
        Assert.Equal(new Uri($"http://127.0.0.1:{port}/graphql/stream"), subscriptions.StreamUrl);
        var seqs = new List<long>();
        await Assert.ThrowsAsync<ForbiddenException>(async () =>
        {
            await foreach (var item in subscriptions.SubscribeAsync(RoomMessages(), new JsonObject { ["roomId"] = "r1" }, RoomOptions()))
                seqs.Add(item.Seq);
        });
        await server;
        Assert.Equal([1L, 2L], seqs);
        Assert.Equal(["Bearer t-1", "Bearer t-2", "Bearer t-3"], auth);
        Assert.Equal(["host", "host", "host"], apps);
        Assert.Equal(3, tokens.Issued);
    }

    [Fact]
    public async Task ThePrivacyGateRefusesASecretLookingVariableBeforeAnythingIsSent()
    {
        var handler = new CountingHandler();
        using var client = new AgentGraphClient(new AgentGraphClientOptions
        {
            BaseUrl = new Uri("http://127.0.0.1:9/graphql"),
            Errors = ErrorTables.Registry,
            Handler = handler,
            TokenProvider = new StaticTokens(),
        });
        var op = RoomMessages(new Dictionary<string, PrivacyRule> { ["note"] = new(DataClass.Internal, false) });
        var variables = new JsonObject { ["roomId"] = "r1", ["note"] = "use api_key: Zq3xT9vLk2Wm8PbR4nYc7HsJ1dFg6KeUa0VtQi5O for the API" };
        var error = await Assert.ThrowsAsync<PrivacyException>(async () =>
        {
            await foreach (var _ in client.CreateSubscriptionClient().SubscribeAsync(op, variables, RoomOptions()))
            {
            }
        });
        Assert.Equal("PRIVACY_REFUSED", error.Code);
        Assert.Contains(error.Refusals, r => r.Path == "note");
        Assert.DoesNotContain("Zq3xT9vLk2Wm8PbR4nYc7HsJ1dFg6KeUa0VtQi5O", error.Message);
        Assert.Equal(0, handler.Requests);
    }

    private static OperationSpec RoomMessages(Dictionary<string, PrivacyRule>? privacy = null) =>
        new("RoomMessages", "subscription RoomMessages($roomId: ID!, $afterSeq: Int, $note: String) { roomMessages(roomId: $roomId, afterSeq: $afterSeq) { seq body } }",
            OperationKind.Subscription, false, privacy ?? new Dictionary<string, PrivacyRule>());

    private static SubscriptionOptions RoomOptions() => new()
    {
        CursorVariable = "afterSeq",
        SeqOf = e => (long)e["seq"]!,
        Select = d => d["roomMessages"],
    };

    private sealed class CountingTokens : ITokenProvider
    {
        public int Issued;
        public ValueTask<string> GetTokenAsync(CancellationToken cancellationToken) => ValueTask.FromResult($"t-{Interlocked.Increment(ref Issued)}");
        public ValueTask<string> RefreshAsync(CancellationToken cancellationToken) => throw new InvalidOperationException("not asked");
    }

    private sealed class CountingHandler : HttpMessageHandler
    {
        public int Requests;
        protected override Task<HttpResponseMessage> SendAsync(HttpRequestMessage request, CancellationToken cancellationToken)
        {
            Interlocked.Increment(ref Requests);
            return Task.FromResult(new HttpResponseMessage(HttpStatusCode.InternalServerError));
        }
    }

    private sealed class StaticTokens : ITokenProvider
    {
        public ValueTask<string> GetTokenAsync(CancellationToken cancellationToken) => ValueTask.FromResult("t-1");
        public ValueTask<string> RefreshAsync(CancellationToken cancellationToken) => ValueTask.FromResult("t-2");
    }
}

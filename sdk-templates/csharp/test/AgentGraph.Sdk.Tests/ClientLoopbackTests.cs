using System.Net;
using System.Net.Sockets;
using System.Text;
using System.Text.Json.Nodes;
using AgentGraph.Sdk.Tests.Conformance;
using Microsoft.Extensions.Logging;
using Xunit;

namespace AgentGraph.Sdk.Tests;

/// <summary>The client over real HTTP on loopback (HttpListener): headers, key reuse, timeouts, metadata-only logs.</summary>
public sealed class ClientLoopbackTests
{
    private sealed record Seen(string? Authorization, string? Key, string? Accept, JsonNode? Body);

    private sealed class Server : IAsyncDisposable
    {
        private readonly HttpListener _listener = new();
        private readonly Task _loop;
        public List<Seen> Requests { get; } = [];
        public Uri Url { get; }

        public Server(Func<int, HttpListenerResponse, Task> answer)
        {
            var port = FreePort();
            Url = new Uri($"http://127.0.0.1:{port}/graphql/");
            _listener.Prefixes.Add(Url.ToString());
            _listener.Start();
            _loop = Task.Run(async () =>
            {
                while (_listener.IsListening)
                {
                    HttpListenerContext ctx;
                    try
                    {
                        ctx = await _listener.GetContextAsync();
                    }
                    catch (Exception e) when (e is HttpListenerException or ObjectDisposedException)
                    {
                        return;
                    }
                    using var reader = new StreamReader(ctx.Request.InputStream, Encoding.UTF8);
                    var body = JsonNode.Parse(await reader.ReadToEndAsync());
                    int n;
                    lock (Requests)
                    {
                        Requests.Add(new Seen(ctx.Request.Headers["authorization"], ctx.Request.Headers["idempotency-key"], ctx.Request.Headers["accept"], body));
                        n = Requests.Count;
                    }
                    _ = Task.Run(async () =>
                    {
                        try
                        {
                            await answer(n, ctx.Response);
                        }
                        catch (HttpListenerException)
                        {
                        }
                    });
                }
            });
        }

        private static int FreePort()
        {
            var l = new TcpListener(IPAddress.Loopback, 0);
            l.Start();
            var port = ((IPEndPoint)l.LocalEndpoint).Port;
            l.Stop();
            return port;
        }

        public async ValueTask DisposeAsync()
        {
            _listener.Stop();
            _listener.Close();
            await _loop;
        }
    }

    private static async Task Json(HttpListenerResponse response, int status, string json, (string, string)? header = null)
    {
        response.StatusCode = status;
        response.ContentType = "application/graphql-response+json";
        if (header is { } h) response.Headers[h.Item1] = h.Item2;
        var bytes = Encoding.UTF8.GetBytes(json);
        await response.OutputStream.WriteAsync(bytes);
        response.Close();
    }

    private sealed class Tokens : ITokenProvider
    {
        public ValueTask<string> GetTokenAsync(CancellationToken cancellationToken) => ValueTask.FromResult("secret-token-1");
        public ValueTask<string> RefreshAsync(CancellationToken cancellationToken) => ValueTask.FromResult("secret-token-2");
    }

    private sealed class ListLogger : ILogger
    {
        public List<string> Lines { get; } = [];
        public IDisposable? BeginScope<TState>(TState state) where TState : notnull => null;
        public bool IsEnabled(LogLevel logLevel) => true;
        public void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter)
        {
            var pairs = state as IEnumerable<KeyValuePair<string, object?>> ?? [];
            lock (Lines) Lines.Add(formatter(state, exception) + " | " + string.Join(";", pairs.Select(p => $"{p.Key}={p.Value}")));
        }
    }

    private static readonly OperationSpec CreateRoom = new(
        "CreateRoom",
        "mutation CreateRoom($input: CreateRoomInput!, $idempotencyKey: ID!) { createRoom(input: $input, idempotencyKey: $idempotencyKey) { room { id } } }",
        OperationKind.Mutation, true, new Dictionary<string, PrivacyRule> { ["input.name"] = new(DataClass.Internal, true) });

    [Fact]
    public async Task AMutationIsRetriedWithTheSameKeyAndLogsHoldOnlyMetadata()
    {
        await using var server = new Server((n, r) => n == 1
            ? Json(r, 503, """{"errors":[{"message":"busy","extensions":{"code":"SERVICE_UNAVAILABLE","retryAfterMs":5}}]}""")
            : Json(r, 200, """{"data":{"createRoom":{"room":{"id":"room-1"}}}}"""));
        var logger = new ListLogger();
        using var client = new AgentGraphClient(new AgentGraphClientOptions
        {
            BaseUrl = server.Url,
            Errors = ErrorTables.Registry,
            TokenProvider = new Tokens(),
            Logger = logger,
            NewKey = () => "key-abc-123",
        });
        var result = await client.ExecuteAsync(CreateRoom, new JsonObject { ["input"] = new JsonObject { ["name"] = "ops-room" } });
        Assert.Equal("room-1", (string?)result.Data["createRoom"]!["room"]!["id"]);
        Assert.Equal(2, result.Attempts);
        Assert.Equal(2, server.Requests.Count);
        Assert.All(server.Requests, s =>
        {
            Assert.Equal("Bearer secret-token-1", s.Authorization);
            Assert.Equal("key-abc-123", s.Key);
            Assert.Equal("application/graphql-response+json, application/json;q=0.9", s.Accept);
            Assert.Equal("key-abc-123", (string?)s.Body!["variables"]!["idempotencyKey"]);
        });
        var log = string.Join("\n", logger.Lines);
        Assert.Contains("event=retry", log, StringComparison.Ordinal);
        Assert.Contains("code=SERVICE_UNAVAILABLE", log, StringComparison.Ordinal);
        Assert.Contains("delayMs=5", log, StringComparison.Ordinal);
        foreach (var secret in new[] { "secret-token", "key-abc-123", "ops-room" }) Assert.DoesNotContain(secret, log, StringComparison.Ordinal);
    }

    [Fact]
    public async Task ASlowAnswerTimesOutAndAQueryIsRetried()
    {
        await using var server = new Server(async (n, r) =>
        {
            // The first answer never comes within the timeout; the second is immediate. The timeout is
            // wide enough (2 s) that a loaded CI machine still answers the second in time.
            if (n == 1) await Task.Delay(TimeSpan.FromSeconds(60));
            await Json(r, 200, """{"data":{"ok":true}}""");
        });
        using var client = new AgentGraphClient(new AgentGraphClientOptions
        {
            BaseUrl = server.Url,
            Errors = ErrorTables.Registry,
            Timeout = TimeSpan.FromSeconds(2),
            Retry = new RetrySettings { BaseDelayMs = 1 },
        });
        var op = new OperationSpec("Ok", "query Ok { ok }", OperationKind.Query, false, new Dictionary<string, PrivacyRule>());
        var result = await client.ExecuteAsync(op);
        Assert.Equal(2, result.Attempts);
        Assert.Null(server.Requests[0].Key);
    }

    [Fact]
    public async Task ARefusedConnectionIsANetworkErrorAndAKeylessMutationIsNotResent()
    {
        using var client = new AgentGraphClient(new AgentGraphClientOptions
        {
            BaseUrl = new Uri("http://127.0.0.1:1/graphql"),
            Errors = ErrorTables.Registry,
        });
        var op = new OperationSpec("Touch", "mutation Touch { touch }", OperationKind.Mutation, false, new Dictionary<string, PrivacyRule>());
        var error = await Assert.ThrowsAsync<NetworkException>(() => client.ExecuteAsync(op));
        Assert.Equal((1, GiveUpReasons.NotIdempotent), (error.Attempts, error.GiveUpReason));
    }

    [Fact]
    public async Task CancellingTheCallCancelsTheWait()
    {
        await using var server = new Server((_, r) =>
            Json(r, 429, """{"errors":[{"message":"slow down","extensions":{"code":"RATE_LIMITED","retryAfterMs":20000}}]}"""));
        using var client = new AgentGraphClient(new AgentGraphClientOptions { BaseUrl = server.Url, Errors = ErrorTables.Registry });
        var op = new OperationSpec("Ok", "query Ok { ok }", OperationKind.Query, false, new Dictionary<string, PrivacyRule>());
        using var cts = new CancellationTokenSource();
        var call = client.ExecuteAsync(op, cancellationToken: cts.Token);
        while (server.Requests.Count == 0) await Task.Delay(10);
        await cts.CancelAsync();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => call);
        Assert.Single(server.Requests);
    }
}

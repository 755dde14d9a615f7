// The C# SDK's benchmark, Stopwatch-based, one JSON object on stdout:
//   dotnet AgentGraph.Sdk.Bench.dll [--calls 2000] [--rounds 5] [--messages 2000] [--rooms 10]
// 1. SDK overhead per call: a loopback HttpListener answers every POST with the same small GraphQL result; the same
//    query (Viewer) and the same keyed mutation (CreateRoom) are sent N times, one at a time, by (a) a plain
//    HttpClient POST with a hand-built body and the response parsed as JSON, (b) the generated SDK (privacy gate,
//    key creation, Polly pipeline, typed result, metadata logging off). Median of interleaved rounds; µs and CPU µs
//    per call (the server shares the process, so CPU includes its work for both clients alike: the difference is the SDK's).
// 2. Outbox throughput: M messages over R rooms enqueued into a SQLite outbox (a fresh file, synchronous FULL and
//    NORMAL), then drained with a stub send that succeeds at once; messages/s for each phase.
using System.Diagnostics;
using System.Globalization;
using System.Net;
using System.Net.Sockets;
using System.Text;
using System.Text.Json;
using System.Text.Json.Nodes;
using AgentGraph.Sdk;
using AgentGraph.Sdk.Outbox;

var options = ParseArgs(args);
var calls = options.GetValueOrDefault("calls", 2000);
var rounds = options.GetValueOrDefault("rounds", 5);
var messages = options.GetValueOrDefault("messages", 2000);
var rooms = options.GetValueOrDefault("rooms", 10);

var result = new JsonObject
{
    ["calls"] = calls,
    ["rounds"] = rounds,
    ["dotnet"] = Environment.Version.ToString(),
    ["processors"] = Environment.ProcessorCount,
};

await using (var server = LoopbackServer.Start())
{
    using var plain = new HttpClient();
    using var sdk = new AgentGraphSdk(new AgentGraphClientOptions { BaseUrl = server.Url, TokenProvider = new StaticToken() });
    foreach (var mutation in new[] { false, true })
    {
        Func<Task> viaPlain = () => PlainPostAsync(plain, server.Url, mutation);
        Func<Task> viaSdk = mutation
            ? () => sdk.CreateRoomAsync(new CreateRoomInput { Name = "bench" })
            : () => sdk.ViewerAsync();
        // Warm-up (JIT, connection), then interleaved rounds so slow drifts hit both alike.
        await MeasureAsync(viaPlain, calls);
        await MeasureAsync(viaSdk, calls);
        var p = new List<Sample>();
        var s = new List<Sample>();
        for (var r = 0; r < rounds; r++)
        {
            p.Add(await MeasureAsync(viaPlain, calls));
            s.Add(await MeasureAsync(viaSdk, calls));
        }
        double Med(IEnumerable<double> xs) => xs.Order().ElementAt(rounds / 2);
        var plainUs = Med(p.Select(x => x.UsPerCall));
        var sdkUs = Med(s.Select(x => x.UsPerCall));
        var plainCpu = Med(p.Select(x => x.CpuUsPerCall));
        var sdkCpu = Med(s.Select(x => x.CpuUsPerCall));
        result[mutation ? "mutation" : "query"] = new JsonObject
        {
            ["plainHttpClientUsPerCall"] = Math.Round(plainUs, 1),
            ["sdkUsPerCall"] = Math.Round(sdkUs, 1),
            ["sdkExtraUsPerCall"] = Math.Round(sdkUs - plainUs, 1),
            ["plainCpuUsPerCall"] = Math.Round(plainCpu, 1),
            ["sdkCpuUsPerCall"] = Math.Round(sdkCpu, 1),
            ["sdkExtraCpuUsPerCall"] = Math.Round(sdkCpu - plainCpu, 1),
        };
    }
    if (server.Requests == 0) throw new InvalidOperationException("the loopback server saw no request");
}

var outbox = new JsonObject { ["messages"] = messages, ["rooms"] = rooms };
await OutboxThroughputAsync(Math.Min(messages, 200), rooms, true); // warm-up (JIT, SQLite), discarded
foreach (var full in new[] { true, false })
    outbox[full ? "synchronousFull" : "synchronousNormal"] = await OutboxThroughputAsync(messages, rooms, full);
result["outbox"] = outbox;

Console.Out.WriteLine(result.ToJsonString(new JsonSerializerOptions { WriteIndented = true }));
return 0;

static Dictionary<string, int> ParseArgs(string[] args)
{
    var parsed = new Dictionary<string, int>();
    for (var i = 0; i < args.Length; i += 2)
    {
        if (!args[i].StartsWith("--", StringComparison.Ordinal) || i + 1 >= args.Length
            || !int.TryParse(args[i + 1], NumberStyles.None, CultureInfo.InvariantCulture, out var n) || n < 1)
            throw new ArgumentException($"usage: [--calls N] [--rounds N] [--messages N] [--rooms N] (positive integers); got {string.Join(' ', args)}");
        parsed[args[i][2..]] = n;
    }
    return parsed;
}

static async Task PlainPostAsync(HttpClient http, Uri url, bool mutation)
{
    var key = mutation ? Guid.NewGuid().ToString() : null;
    var body = mutation
        ? new JsonObject
        {
            ["query"] = AgentGraphOperations.CreateRoom.Document,
            ["variables"] = new JsonObject { ["input"] = new JsonObject { ["name"] = "bench" }, ["idempotencyKey"] = key },
        }
        : new JsonObject { ["query"] = AgentGraphOperations.Viewer.Document, ["variables"] = new JsonObject() };
    using var request = new HttpRequestMessage(HttpMethod.Post, url) { Content = new StringContent(body.ToJsonString(), Encoding.UTF8, "application/json") };
    request.Headers.TryAddWithoutValidation("accept", "application/graphql-response+json");
    request.Headers.TryAddWithoutValidation("authorization", "Bearer bench-token");
    if (key is not null) request.Headers.TryAddWithoutValidation("idempotency-key", key);
    using var response = await http.SendAsync(request);
    response.EnsureSuccessStatusCode();
    using var doc = JsonDocument.Parse(await response.Content.ReadAsStreamAsync());
}

static async Task<Sample> MeasureAsync(Func<Task> call, int n)
{
    var process = Process.GetCurrentProcess();
    process.Refresh();
    var cpu0 = process.TotalProcessorTime;
    var clock = Stopwatch.StartNew();
    for (var i = 0; i < n; i++) await call();
    clock.Stop();
    process.Refresh();
    var cpu = process.TotalProcessorTime - cpu0;
    return new Sample(clock.Elapsed.TotalMicroseconds / n, cpu.TotalMicroseconds / n);
}

static async Task<JsonObject> OutboxThroughputAsync(int messages, int rooms, bool synchronousFull)
{
    var dir = Directory.CreateTempSubdirectory("agentgraph-outbox-bench-");
    try
    {
        var sent = 0;
        var store = SqliteOutboxStore.Open(Path.Combine(dir.FullName, "outbox.db"), synchronousFull);
        await using var worker = await OutboxWorker.OpenAsync(new OutboxOptions
        {
            Store = store,
            Send = (_, _) =>
            {
                Interlocked.Increment(ref sent);
                return Task.CompletedTask;
            },
        });
        var clock = Stopwatch.StartNew();
        for (var i = 0; i < messages; i++)
            await worker.EnqueueAsync(new EnqueueInput($"room-{i % rooms}", "PostMessage", new JsonObject { ["body"] = $"message {i}" }));
        var enqueueMs = clock.Elapsed.TotalMilliseconds;
        clock.Restart();
        await worker.DrainAsync();
        var drainMs = clock.Elapsed.TotalMilliseconds;
        var left = (await worker.ListAsync([OutboxState.QUEUED, OutboxState.SENDING, OutboxState.RETRYABLE, OutboxState.POISON, OutboxState.EXPIRED])).Count;
        if (sent != messages || left != 0)
            throw new InvalidOperationException($"the outbox sent {sent} of {messages} messages and left {left} unsent");
        return new JsonObject
        {
            ["enqueueMs"] = Math.Round(enqueueMs, 1),
            ["enqueuePerSecond"] = Math.Round(messages / (enqueueMs / 1000)),
            ["drainMs"] = Math.Round(drainMs, 1),
            ["drainPerSecond"] = Math.Round(messages / (drainMs / 1000)),
            ["endToEndPerSecond"] = Math.Round(messages / ((enqueueMs + drainMs) / 1000)),
        };
    }
    finally
    {
        dir.Delete(recursive: true);
    }
}

internal sealed record Sample(double UsPerCall, double CpuUsPerCall);

internal sealed class StaticToken : ITokenProvider
{
    public ValueTask<string> GetTokenAsync(CancellationToken cancellationToken) => ValueTask.FromResult("bench-token");

    public ValueTask<string> RefreshAsync(CancellationToken cancellationToken) => ValueTask.FromResult("bench-token");
}

/// <summary>A loopback HttpListener that answers every POST with the same small result (a mutation's or a query's).</summary>
internal sealed class LoopbackServer : IAsyncDisposable
{
    private static readonly byte[] QueryAnswer = Encoding.UTF8.GetBytes(
        """{"data":{"viewer":{"role":"OWNER","user":{"id":"u1","email":"ada@example.com","displayName":"Ada"},"tenant":{"id":"t1","name":"Bench"}}}}""");
    private static readonly byte[] MutationAnswer = Encoding.UTF8.GetBytes(
        """{"data":{"createRoom":{"room":{"id":"r1","name":"bench","createdAt":"2026-11-29T00:00:00.000Z"}}}}""");
    private readonly HttpListener _listener = new();
    private Task _loop = Task.CompletedTask;
    private int _requests;

    private LoopbackServer(Uri url) => Url = url;

    public Uri Url { get; }

    public int Requests => Volatile.Read(ref _requests);

    public static LoopbackServer Start()
    {
        using var probe = new TcpListener(IPAddress.Loopback, 0);
        probe.Start();
        var port = ((IPEndPoint)probe.LocalEndpoint).Port;
        probe.Stop();
        var server = new LoopbackServer(new Uri($"http://127.0.0.1:{port}/graphql/"));
        server._listener.Prefixes.Add(server.Url.ToString());
        server._listener.Start();
        server._loop = Task.Run(server.LoopAsync);
        return server;
    }

    private async Task LoopAsync()
    {
        while (_listener.IsListening)
        {
            HttpListenerContext ctx;
            try
            {
                ctx = await _listener.GetContextAsync();
            }
            catch (Exception e) when (e is HttpListenerException or ObjectDisposedException or InvalidOperationException)
            {
                return;
            }
            Interlocked.Increment(ref _requests);
            using var reader = new StreamReader(ctx.Request.InputStream, Encoding.UTF8);
            var body = await reader.ReadToEndAsync();
            var answer = body.Contains("mutation", StringComparison.Ordinal) ? MutationAnswer : QueryAnswer;
            ctx.Response.StatusCode = 200;
            ctx.Response.ContentType = "application/graphql-response+json";
            ctx.Response.ContentLength64 = answer.Length;
            await ctx.Response.OutputStream.WriteAsync(answer);
            ctx.Response.Close();
        }
    }

    public async ValueTask DisposeAsync()
    {
        _listener.Stop();
        _listener.Close();
        await _loop;
    }
}

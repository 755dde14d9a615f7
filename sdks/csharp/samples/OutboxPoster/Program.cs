// A client process for the exactly-once test: the generated C# SDK with its durable outbox (Microsoft.Data.Sqlite)
// posts room messages. `enqueue` writes every message into the outbox first (one idempotency key each, persisted),
// then sends; `resume` only sends what the outbox still holds (after the first process was killed). Prints one JSON
// line per SENT entry ({"sent": n}) and {"done": true, ...} at the end.
//
//   dotnet OutboxPoster.dll <baseUrl> <outbox file> <rooms csv> <per room> <enqueue|resume>   (token on stdin)
using System.Text.Json;
using System.Text.Json.Nodes;
using AgentGraph.Sdk;
using AgentGraph.Sdk.Outbox;

if (args.Length != 5)
{
    Console.Error.WriteLine("usage: OutboxPoster <baseUrl> <outbox file> <rooms csv> <per room> <enqueue|resume> (token on stdin)");
    return 2;
}
var (baseUrl, file, rooms, perRoom, mode) = (args[0], args[1], args[2].Split(','), int.Parse(args[3], System.Globalization.CultureInfo.InvariantCulture), args[4]);
var token = (await Console.In.ReadToEndAsync()).Trim();

using var sdk = new AgentGraphSdk(new AgentGraphClientOptions
{
    BaseUrl = new Uri(baseUrl),
    TokenProvider = new StaticTokenProvider(token),
    // Message bodies are PERSONAL (schemas/coordination.graphql); this app's policy allows them to be sent.
    PrivacyPolicy = new PrivacyPolicy(new HashSet<DataClass> { DataClass.Public, DataClass.Internal, DataClass.Personal }),
    Retry = new RetrySettings { BaseDelayMs = 20, MaxDelayMs = 500, MaxAttempts = 5, BudgetMs = 30_000 },
    Timeout = TimeSpan.FromSeconds(10),
});

var sent = 0;
var output = new object();
await using var outbox = await OutboxWorker.OpenAsync(new OutboxOptions
{
    Store = SqliteOutboxStore.Open(file),
    Send = OutboxWorker.SendWithClient(sdk.Client, AgentGraphOperations.ByName),
    Concurrency = rooms.Length,
    // Between outbox-level resends (after the client's own retries gave up): short, the network here is only lossy.
    DelayFor = (_, _) => 50,
    OnChange = entry =>
    {
        if (entry.State != OutboxState.SENT) return;
        lock (output) Console.WriteLine($"{{\"sent\":{++sent}}}");
    },
});
if (mode == "enqueue")
{
    for (var i = 0; i < perRoom; i++)
    {
        foreach (var roomId in rooms)
        {
            await outbox.EnqueueAsync(new EnqueueInput(roomId, "PostMessage", new JsonObject
            {
                ["roomId"] = roomId,
                ["input"] = new JsonObject { ["body"] = $"{roomId}#{i}" },
            }));
        }
    }
}
await outbox.DrainAsync();
var dead = (await outbox.DeadLettersAsync()).Count;
lock (output) Console.WriteLine(JsonSerializer.Serialize(new { done = true, counters = outbox.Counters, dead }));
return 0;

// Follow a room live with the generated C# SDK. `sdk.OnRoomMessageAsync(roomId, afterSeq)` streams with the client's own
// endpoint (<BaseUrl>/stream), HttpClient, headers, privacy gate and token provider, which it asks for a token on
// every connect and reconnect. It resumes after the last message handled (afterSeq), drops duplicates and reconnects
// with backoff when a stream breaks. Prints one JSON line per message (with how many times the token was read so
// far); test/e2e/sdk-subscriptions.test.ts runs it against the platform.
//
//   dotnet RoomSubscriber.dll <baseUrl> <roomId> <count> <token file>
using System.Globalization;
using System.Text.Json;
using AgentGraph.Sdk;

if (args.Length != 4)
{
    Console.Error.WriteLine("usage: RoomSubscriber <baseUrl> <roomId> <count> <token file>");
    return 2;
}
var (baseUrl, roomId, count, tokenFile) = (args[0], args[1], long.Parse(args[2], CultureInfo.InvariantCulture), args[3]);
var tokens = new TokenFile(tokenFile);

using var sdk = new AgentGraphSdk(new AgentGraphClientOptions
{
    BaseUrl = new Uri(baseUrl),
    TokenProvider = tokens,
    // Message bodies are PERSONAL (schemas/coordination.graphql); this app's policy allows them.
    PrivacyPolicy = new PrivacyPolicy(new HashSet<DataClass> { DataClass.Public, DataClass.Internal, DataClass.Personal }),
});
// The generated typed stream: the client's endpoint (<BaseUrl>/stream), token provider, headers and privacy gate.
await foreach (var item in sdk.OnRoomMessageAsync(roomId, afterSeq: 0)) // 0: from the first message; null: live only
{
    Console.WriteLine(JsonSerializer.Serialize(new { seq = item.Seq, body = item.Event!.Body, tokenReads = tokens.Reads }));
    if (item.Seq >= count) break; // leaving the loop closes the stream
}
return 0;

/// <summary>The access token from a file another process keeps fresh (a sidecar, a login): read on every call.</summary>
internal sealed class TokenFile(string path) : ITokenProvider
{
    public int Reads;

    public async ValueTask<string> GetTokenAsync(CancellationToken cancellationToken)
    {
        Interlocked.Increment(ref Reads);
        return (await File.ReadAllTextAsync(path, cancellationToken).ConfigureAwait(false)).Trim();
    }

    public ValueTask<string> RefreshAsync(CancellationToken cancellationToken) => GetTokenAsync(cancellationToken);
}

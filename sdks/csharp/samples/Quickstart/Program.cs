// The generated C# SDK in one program: registration with services.AddAgentGraph (IHttpClientFactory, options), a
// query, a mutation with an idempotency key, a paginated list, enums and typed errors. Every call takes a
// CancellationToken.
//
//   dotnet Quickstart.dll <baseUrl> <access token>
using AgentGraph.Sdk;
using Microsoft.Extensions.DependencyInjection;

if (args.Length != 2)
{
    Console.Error.WriteLine("usage: Quickstart <baseUrl> <access token>");
    return 2;
}
var services = new ServiceCollection();
services.AddAgentGraph(options =>
{
    options.BaseUrl = new Uri(args[0]); // e.g. https://api.example.com/graphql
    options.TokenProvider = new StaticTokenProvider(args[1]); // or register an ITokenProvider in the container
});
await using var provider = services.BuildServiceProvider();
var sdk = provider.GetRequiredService<AgentGraphSdk>();
using var cancel = new CancellationTokenSource(TimeSpan.FromSeconds(30));

// A query returns the typed result record; Raw has the call's metadata (attempts, replayed, key).
var viewer = await sdk.ViewerAsync(cancellationToken: cancel.Token);
Console.WriteLine($"{viewer.Data.Viewer.User.Email} ({viewer.Data.Viewer.Role}) in {viewer.Data.Viewer.Tenant.Name}");

// A mutation with an idempotency key: every retry (and a rerun with the same key) applies it once.
var created = await sdk.CreateRoomAsync(
    new CreateRoomInput { Name = "ops" },
    new CallOptions { IdempotencyKey = "quickstart-create-ops" },
    cancel.Token);
Console.WriteLine($"room {created.Data.CreateRoom.Room.Id}: {created.Raw.Attempts} attempt(s), replayed: {created.Raw.Replayed}");

// Pagination: typed nodes, one request per page as the loop asks for more.
await foreach (var room in sdk.PaginateRoomsAsync(first: 50, cancellationToken: cancel.Token))
    Console.WriteLine($"- {room.Name} ({room.Id})");

// Enums are PascalCase in C#; the schema's names go over the wire.
Console.WriteLine($"{AgentMessageState.Handled} is sent as {AgentMessageState.Handled.WireName()}");

// Errors: one exception class per code (RateLimitedException, ForbiddenException, ...), all AgentGraphException
// with Code, Retryable and Status. The privacy gate refuses before anything is sent: message bodies are PERSONAL,
// which the default policy (Public, Internal) does not allow out of the process.
try
{
    await sdk.PostMessageAsync(created.Data.CreateRoom.Room.Id, new PostMessageInput { Body = "hello" }, cancellationToken: cancel.Token);
}
catch (PrivacyException e)
{
    Console.WriteLine($"{e.Code}: {string.Join(", ", e.Refusals.Select(r => $"{r.Path} ({r.Reason})"))}");
}
catch (RateLimitedException e)
{
    Console.WriteLine($"rate limited; retry after {e.RetryAfterMs} ms");
}
catch (AgentGraphException e)
{
    Console.WriteLine($"{e.Code} (HTTP {e.Status}, retryable: {e.Retryable}): {e.Message}");
}
return 0;

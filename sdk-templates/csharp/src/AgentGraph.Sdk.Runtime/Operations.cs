using System.Text.Json.Nodes;

namespace AgentGraph.Sdk;

/// <summary>The kind of a GraphQL operation.</summary>
public enum OperationKind
{
    /// <summary>A query: always safe to resend.</summary>
    Query,
    /// <summary>A mutation: resent only with an idempotency key.</summary>
    Mutation,
    /// <summary>A subscription (graphql-sse).</summary>
    Subscription,
}

/// <summary>What generated code passes for each operation.</summary>
/// <param name="Name">The operation name.</param>
/// <param name="Document">The exact document sent (its SHA-256 is in schemas/operations.manifest.json).</param>
/// <param name="Kind">Query, mutation or subscription.</param>
/// <param name="Idempotent">A mutation that takes <c>$idempotencyKey</c>, and may therefore be retried.</param>
/// <param name="Privacy">Data class of each variable path.</param>
public sealed record OperationSpec(
    string Name, string Document, OperationKind Kind, bool Idempotent, IReadOnlyDictionary<string, PrivacyRule> Privacy);

/// <summary>Supplies access tokens.</summary>
public interface ITokenProvider
{
    /// <summary>The current access token.</summary>
    ValueTask<string> GetTokenAsync(CancellationToken cancellationToken);
    /// <summary>A new token after the server said UNAUTHENTICATED; called at most once per logical call.</summary>
    ValueTask<string> RefreshAsync(CancellationToken cancellationToken);
}

/// <summary>
/// A token that does not change (a service token from configuration or a secret store). RefreshAsync returns the same
/// token, so a refused one fails the call with UNAUTHENTICATED; implement <see cref="ITokenProvider"/> for tokens that expire.
/// </summary>
public sealed class StaticTokenProvider : ITokenProvider
{
    private readonly string _token;

    /// <summary>Wraps the token (not logged, never sent anywhere but the Authorization header).</summary>
    public StaticTokenProvider(string token)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(token);
        _token = token;
    }

    /// <inheritdoc/>
    public ValueTask<string> GetTokenAsync(CancellationToken cancellationToken) => ValueTask.FromResult(_token);

    /// <inheritdoc/>
    public ValueTask<string> RefreshAsync(CancellationToken cancellationToken) => ValueTask.FromResult(_token);
}

/// <summary>Per-call options.</summary>
public sealed record CallOptions
{
    /// <summary>Use this idempotency key (e.g. an outbox entry's) instead of making one.</summary>
    public string? IdempotencyKey { get; init; }
    /// <summary>Per-attempt timeout for this call.</summary>
    public TimeSpan? Timeout { get; init; }
}

/// <summary>A successful call.</summary>
/// <param name="Data">The response's <c>data</c>.</param>
/// <param name="Extensions">The response's <c>extensions</c>.</param>
/// <param name="Replayed">The server answered with the stored result of an earlier attempt.</param>
/// <param name="Attempts">Requests sent for this call.</param>
/// <param name="IdempotencyKey">The key sent, for idempotent mutations.</param>
public sealed record ExecuteResult(JsonNode Data, JsonObject? Extensions, bool Replayed, int Attempts, string? IdempotencyKey);

using System.Text.Json.Nodes;

namespace AgentGraph.Sdk.Outbox;

/// <summary>QUEUED → SENDING → SENT; RETRYABLE (resent later), POISON (dead letter), EXPIRED (TTL passed).</summary>
public enum OutboxState
{
    /// <summary>Waiting for its turn in its room.</summary>
    QUEUED,
    /// <summary>A send is in flight.</summary>
    SENDING,
    /// <summary>Failed retryably; resent at NextAttemptAt.</summary>
    RETRYABLE,
    /// <summary>Delivered.</summary>
    SENT,
    /// <summary>Failed terminally: the dead-letter list.</summary>
    POISON,
    /// <summary>Not sent within its TTL (or the server's key retention).</summary>
    EXPIRED,
}

/// <summary>The error that moved an entry to RETRYABLE or POISON: code and message only.</summary>
public sealed record OutboxErrorInfo(string Code, string Message);

/// <summary>One outbox entry (times in epoch ms).</summary>
public sealed record OutboxEntry
{
    /// <summary>Unique id.</summary>
    public required string Id { get; init; }
    /// <summary>Enqueue order.</summary>
    public required long Seq { get; init; }
    /// <summary>The ordering key.</summary>
    public required string Room { get; init; }
    /// <summary>The operation name.</summary>
    public required string Operation { get; init; }
    /// <summary>The variables (JSON).</summary>
    public required JsonObject Variables { get; init; }
    /// <summary>Made once at enqueue, sent on every attempt, including after a restart.</summary>
    public required string IdempotencyKey { get; init; }
    /// <summary>The state.</summary>
    public required OutboxState State { get; init; }
    /// <summary>Sends started so far.</summary>
    public required int Attempts { get; init; }
    /// <summary>
    /// Sends the server took and failed on (INTERNAL_SERVER_ERROR or HTTP 500); at the outbox's MaxFailedDeliveries
    /// the entry goes to POISON. Reset to 0 when a dead letter is revived.
    /// </summary>
    public int FailedDeliveries { get; init; }
    /// <summary>RETRYABLE: not before this time.</summary>
    public double? NextAttemptAt { get; init; }
    /// <summary>The last failure.</summary>
    public OutboxErrorInfo? LastError { get; init; }
    /// <summary>Created.</summary>
    public required double CreatedAt { get; init; }
    /// <summary>Last changed.</summary>
    public required double UpdatedAt { get; init; }
    /// <summary>After this a QUEUED or RETRYABLE entry becomes EXPIRED.</summary>
    public required double ExpiresAt { get; init; }
    /// <summary>When the first send started.</summary>
    public double? FirstAttemptAt { get; init; }
}

/// <summary>What the app passes to enqueue.</summary>
/// <param name="Room">The ordering key.</param>
/// <param name="Operation">The operation name.</param>
/// <param name="Variables">The variables.</param>
/// <param name="IdempotencyKey">Only if you made and persisted one yourself.</param>
public sealed record EnqueueInput(string Room, string Operation, JsonObject? Variables = null, string? IdempotencyKey = null);

/// <summary>A move the state machine does not allow (missing entry, or another state).</summary>
public sealed class OutboxStateException(string id, string wanted, OutboxState? actual)
    : Exception(actual is null
        ? $"Outbox entry {id} does not exist (wanted: {wanted})."
        : $"Outbox entry {id} is {actual}; {wanted} is not allowed from there.");

/// <summary>
/// Durable storage of entries: every method is one transaction guarded by the allowed source states. The token cancels
/// waiting for the store; a write that started completes (the worker passes none for its state changes).
/// </summary>
public interface IOutboxStore : IAsyncDisposable
{
    /// <summary>Adds a QUEUED entry.</summary>
    Task<OutboxEntry> AddAsync(string id, string room, string operation, JsonObject variables, string key, double createdAt, double expiresAt, CancellationToken cancellationToken = default);
    /// <summary>Entries in enqueue order, optionally of some states.</summary>
    Task<IReadOnlyList<OutboxEntry>> ListAsync(IReadOnlyCollection<OutboxState>? states = null, CancellationToken cancellationToken = default);
    /// <summary>The head (oldest pending entry) of every room, in enqueue order.</summary>
    Task<IReadOnlyList<OutboxEntry>> HeadsAsync(CancellationToken cancellationToken = default);
    /// <summary>Crash recovery: SENDING → QUEUED (key unchanged). Returns how many.</summary>
    Task<int> RecoverAsync(double now, CancellationToken cancellationToken = default);
    /// <summary>QUEUED/RETRYABLE past expiresAt → EXPIRED.</summary>
    Task<IReadOnlyList<OutboxEntry>> ExpireAsync(double now, CancellationToken cancellationToken = default);
    /// <summary>QUEUED/RETRYABLE → SENDING, attempts + 1.</summary>
    Task<OutboxEntry> MarkSendingAsync(string id, double now, CancellationToken cancellationToken = default);
    /// <summary>SENDING → SENT.</summary>
    Task<OutboxEntry> MarkSentAsync(string id, double now, CancellationToken cancellationToken = default);
    /// <summary>SENDING → RETRYABLE; with <paramref name="failedDelivery"/>, FailedDeliveries + 1.</summary>
    Task<OutboxEntry> MarkRetryableAsync(string id, double now, double nextAttemptAt, OutboxErrorInfo error, bool failedDelivery = false, CancellationToken cancellationToken = default);
    /// <summary>SENDING → POISON; with <paramref name="failedDelivery"/>, FailedDeliveries + 1.</summary>
    Task<OutboxEntry> MarkPoisonAsync(string id, double now, OutboxErrorInfo error, bool failedDelivery = false, CancellationToken cancellationToken = default);
    /// <summary>QUEUED/RETRYABLE → EXPIRED with a reason.</summary>
    Task<OutboxEntry> MarkExpiredAsync(string id, double now, OutboxErrorInfo error, CancellationToken cancellationToken = default);
    /// <summary>SENDING → QUEUED (stopped by the outbox itself).</summary>
    Task<OutboxEntry> RequeueAsync(string id, double now, CancellationToken cancellationToken = default);
    /// <summary>POISON/EXPIRED → QUEUED with a fresh TTL and FailedDeliveries 0.</summary>
    Task<OutboxEntry> ReviveAsync(string id, double now, double expiresAt, CancellationToken cancellationToken = default);
}

using System.Collections.Concurrent;
using System.Text.Json.Nodes;
using System.Threading.Channels;

namespace AgentGraph.Sdk.Outbox;

/// <summary>How a failed send is read: code, message, retryable, the server's wait, the HTTP status if there was one.</summary>
public sealed record SendFailure(string Code, string Message, bool Retryable, double? RetryAfterMs, int? Status = null)
{
    /// <summary>
    /// True when a retryable failure counts toward the poison limit (<see cref="OutboxOptions.MaxFailedDeliveries"/>):
    /// the server took the message and failed on it (code INTERNAL_SERVER_ERROR, or HTTP status 500 under any code).
    /// Offline and "wait" answers (NETWORK_ERROR, TIMEOUT, 502/503/504, RATE_LIMITED, SERVICE_UNAVAILABLE,
    /// IDEMPOTENCY_KEY_IN_PROGRESS) say nothing about the message: they retry until the TTL without counting.
    /// </summary>
    public bool IsFailedDelivery => Retryable && (Code == "INTERNAL_SERVER_ERROR" || Status == 500);
}

/// <summary>Options of <see cref="OutboxWorker"/>.</summary>
public sealed record OutboxOptions
{
    /// <summary>The durable store.</summary>
    public required IOutboxStore Store { get; init; }
    /// <summary>Sends one entry (the client's ExecuteAsync with the entry's key); throws the SDK's errors.</summary>
    public required Func<OutboxEntry, CancellationToken, Task> Send { get; init; }
    /// <summary>Time and the waits between resends.</summary>
    public TimeProvider? TimeProvider { get; init; }
    /// <summary>Time to live (default 7 days).</summary>
    public double TtlMs { get; init; } = 7 * 24 * 60 * 60 * 1000d;
    /// <summary>Rooms sending at the same time (default 4).</summary>
    public int Concurrency { get; init; } = 4;
    /// <summary>Delay before resending after a retryable failure (default 1 s doubling to 5 min, at least Retry-After).</summary>
    public Func<int, SendFailure, double>? DelayFor { get; init; }
    /// <summary>Entry ids.</summary>
    public Func<string>? NewId { get; init; }
    /// <summary>Idempotency keys.</summary>
    public Func<string>? NewKey { get; init; }
    /// <summary>How long the server keeps idempotency keys; older first sends are EXPIRED, not resent.</summary>
    public double? KeyRetentionMs { get; init; }
    /// <summary>Called after every state change the worker makes.</summary>
    public Action<OutboxEntry>? OnChange { get; init; }
    /// <summary>
    /// Backpressure: at most this many pending entries (QUEUED, SENDING, RETRYABLE); EnqueueAsync waits for room
    /// (an entry settling as SENT, POISON or EXPIRED) instead of growing the file without bound. Null: unbounded.
    /// </summary>
    public int? MaxPending { get; init; }
    /// <summary>
    /// Failed deliveries (<see cref="SendFailure.IsFailedDelivery"/>) after which an entry goes to POISON instead of
    /// being resent (default 3, at least 1). Other retryable failures never count: they retry until the TTL.
    /// </summary>
    public int MaxFailedDeliveries { get; init; } = DefaultMaxFailedDeliveries;

    /// <summary>The default of <see cref="MaxFailedDeliveries"/>.</summary>
    public const int DefaultMaxFailedDeliveries = 3;
}

/// <summary>
/// The durable outbox (a port of the TypeScript SDK's outbox.ts): entries persisted with a key made once; rooms are
/// ordering keys whose head blocks only that room; up to <c>Concurrency</c> rooms send at once; retryable failures
/// → RETRYABLE with a delay, others → POISON, and POISON also once the server failed on an entry
/// <c>MaxFailedDeliveries</c> times; TTL → EXPIRED; on open, SENDING → QUEUED with the same key. The
/// worker is woken through a bounded <see cref="Channel{T}"/> (capacity 1, coalescing: enqueues never block on it).
/// </summary>
public sealed class OutboxWorker : IAsyncDisposable
{
    private readonly OutboxOptions _o;
    private readonly TimeProvider _time;
    private readonly Func<int, SendFailure, double> _delayFor;
    private readonly Func<string> _newId;
    private readonly Func<string> _newKey;
    private readonly ConcurrentDictionary<string, Task> _inFlight = new();
    private readonly Channel<bool> _wake = System.Threading.Channels.Channel.CreateBounded<bool>(new BoundedChannelOptions(1) { FullMode = BoundedChannelFullMode.DropWrite });
    private CancellationTokenSource _stopSends = new();
    private Task? _running;
    private volatile bool _stopping;
    private Exception? _storeFailure;
    private SemaphoreSlim? _capacity;
    private int _sends, _sent, _retried, _poisoned, _expired, _enqueued;

    private OutboxWorker(OutboxOptions options)
    {
        _o = options;
        _time = options.TimeProvider ?? TimeProvider.System;
        _delayFor = options.DelayFor ?? ExponentialDelay();
        _newId = options.NewId ?? (() => Guid.NewGuid().ToString());
        _newKey = options.NewKey ?? Idempotency.RandomKey;
        if (options.Concurrency < 1) throw new ArgumentException("Outbox: Concurrency must be a positive integer.", nameof(options));
        if (!(options.TtlMs > 0)) throw new ArgumentException("Outbox: TtlMs must be positive.", nameof(options));
        if (options.MaxFailedDeliveries < 1)
            throw new ArgumentException($"Outbox: MaxFailedDeliveries must be at least 1 (got {options.MaxFailedDeliveries}); it is how many times the server may fail on an entry before it goes to the dead-letter list.", nameof(options));
    }

    /// <summary>SENDING entries put back to QUEUED when the outbox was opened.</summary>
    public int Recovered { get; private set; }

    /// <summary>Counters: enqueued, sends, sent, retried, poisoned, expired, recovered.</summary>
    public IReadOnlyDictionary<string, int> Counters => new Dictionary<string, int>
    {
        ["enqueued"] = _enqueued, ["sends"] = _sends, ["sent"] = _sent, ["retried"] = _retried,
        ["poisoned"] = _poisoned, ["expired"] = _expired, ["recovered"] = Recovered,
    };

    /// <summary>base · 2^(attempt−1) capped at max, at least the server's wait (no jitter: sends are already jittered).</summary>
    public static Func<int, SendFailure, double> ExponentialDelay(double baseMs = 1_000, double maxMs = 300_000) =>
        (attempt, failure) => Math.Max(Math.Min(maxMs, baseMs * Math.Pow(2, Math.Max(0, attempt - 1))), failure.RetryAfterMs ?? 0);

    /// <summary>Opens an outbox on a store: crash recovery (SENDING → QUEUED, same key), then expiry.</summary>
    public static async Task<OutboxWorker> OpenAsync(OutboxOptions options, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(options);
        var outbox = new OutboxWorker(options);
        var now = outbox.Now();
        outbox.Recovered = await options.Store.RecoverAsync(now, cancellationToken).ConfigureAwait(false);
        await outbox.ExpireDueAsync(now).ConfigureAwait(false);
        if (options.MaxPending is { } max)
        {
            if (max < 1) throw new ArgumentException("Outbox: MaxPending must be a positive integer.", nameof(options));
            var pending = (await options.Store.ListAsync([OutboxState.QUEUED, OutboxState.SENDING, OutboxState.RETRYABLE], cancellationToken).ConfigureAwait(false)).Count;
            outbox._capacity = new SemaphoreSlim(Math.Max(0, max - pending), int.MaxValue);
        }
        return outbox;
    }

    private double Now() => Clock.NowMs(_time);

    // Not `_o.OnChange?.Invoke(await store.Move(...))`: `?.` skips evaluating the argument (the store write) when
    // no callback is set.
    private void Changed(OutboxEntry entry)
    {
        if (entry.State is OutboxState.SENT or OutboxState.POISON or OutboxState.EXPIRED) _capacity?.Release();
        _o.OnChange?.Invoke(entry);
    }

    private void Wake() => _wake.Writer.TryWrite(true);

    /// <summary>Persists a new QUEUED entry (its key is made now) and wakes the worker; waits for room under MaxPending.</summary>
    public async Task<OutboxEntry> EnqueueAsync(EnqueueInput input, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(input);
        if (_capacity is not null) await _capacity.WaitAsync(cancellationToken).ConfigureAwait(false);
        OutboxEntry entry;
        try
        {
            if (string.IsNullOrEmpty(input.Room)) throw new ArgumentException("Outbox.Enqueue: room must be a non-empty string.", nameof(input));
            if (string.IsNullOrEmpty(input.Operation)) throw new ArgumentException("Outbox.Enqueue: operation must be a non-empty string.", nameof(input));
            var key = input.IdempotencyKey ?? _newKey();
            var now = Now();
            entry = await _o.Store.AddAsync(_newId(), input.Room, input.Operation, (JsonObject?)input.Variables?.DeepClone() ?? [], key, now, now + _o.TtlMs, cancellationToken).ConfigureAwait(false);
        }
        catch
        {
            _capacity?.Release();
            throw;
        }
        Interlocked.Increment(ref _enqueued);
        Wake();
        return entry;
    }

    /// <summary>Sends until nothing is pending (every entry SENT, POISON or EXPIRED), waiting on the clock for retries.</summary>
    public async Task DrainAsync(CancellationToken cancellationToken = default)
    {
        if (_running is not null) throw new InvalidOperationException("Outbox.Drain: the outbox is already running.");
        BeginRun();
        _running = LoopAsync(false, cancellationToken);
        try
        {
            await _running.ConfigureAwait(false);
        }
        finally
        {
            _running = null;
        }
    }

    /// <summary>Runs in the background until StopAsync.</summary>
    public void Start()
    {
        if (_running is not null) throw new InvalidOperationException("Outbox.Start: the outbox is already running.");
        BeginRun();
        _running = LoopAsync(true, CancellationToken.None);
    }

    /// <summary>
    /// Stops the worker; with <paramref name="abort"/>, in-flight sends are cancelled and requeued. The token stops the
    /// waiting for in-flight sends (OperationCanceledException): the worker is already told to stop, and entries still
    /// sending are put back to QUEUED with their key by the next open (crash recovery).
    /// </summary>
    public async Task StopAsync(bool abort = false, CancellationToken cancellationToken = default)
    {
        _stopping = true;
        if (abort) await _stopSends.CancelAsync().ConfigureAwait(false);
        Wake();
        var running = _running;
        _running = null;
        try
        {
            await Task.WhenAll(_inFlight.Values).WaitAsync(cancellationToken).ConfigureAwait(false);
        }
        catch (Exception error) when (error is not OperationCanceledException || !cancellationToken.IsCancellationRequested)
        {
            // recorded per entry
        }
        if (running is not null) await running.WaitAsync(cancellationToken).ConfigureAwait(false);
    }

    /// <summary>Entries in enqueue order.</summary>
    public Task<IReadOnlyList<OutboxEntry>> ListAsync(IReadOnlyCollection<OutboxState>? states = null, CancellationToken cancellationToken = default) =>
        _o.Store.ListAsync(states, cancellationToken);

    /// <summary>POISON and EXPIRED entries.</summary>
    public Task<IReadOnlyList<OutboxEntry>> DeadLettersAsync(CancellationToken cancellationToken = default) =>
        _o.Store.ListAsync([OutboxState.POISON, OutboxState.EXPIRED], cancellationToken);

    /// <summary>
    /// The dead-letter list as JSON in the TypeScript SDK's shape (camelCase keys, times as ISO 8601, with
    /// <c>failedDeliveries</c> and <c>lastError</c>): POISON entries, and EXPIRED ones unless
    /// <paramref name="includeExpired"/> is false. Holds the entries' variables: it is the app's own data.
    /// </summary>
    public async Task<string> ExportDeadLettersAsync(bool includeExpired = true, CancellationToken cancellationToken = default)
    {
        var entries = await _o.Store.ListAsync(includeExpired ? [OutboxState.POISON, OutboxState.EXPIRED] : [OutboxState.POISON], cancellationToken).ConfigureAwait(false);
        static string Iso(double ms) => DateTimeOffset.FromUnixTimeMilliseconds((long)ms).UtcDateTime.ToString("yyyy-MM-dd'T'HH:mm:ss.fff'Z'", System.Globalization.CultureInfo.InvariantCulture);
        var list = new JsonArray();
        foreach (var e in entries)
        {
            list.Add(new JsonObject
            {
                ["id"] = e.Id, ["seq"] = e.Seq, ["room"] = e.Room, ["operation"] = e.Operation, ["variables"] = e.Variables.DeepClone(),
                ["idempotencyKey"] = e.IdempotencyKey, ["state"] = e.State.ToString(), ["attempts"] = e.Attempts,
                ["failedDeliveries"] = e.FailedDeliveries,
                ["lastError"] = e.LastError is null ? null : new JsonObject { ["code"] = e.LastError.Code, ["message"] = e.LastError.Message },
                ["createdAt"] = Iso(e.CreatedAt), ["updatedAt"] = Iso(e.UpdatedAt), ["expiresAt"] = Iso(e.ExpiresAt),
                ["firstAttemptAt"] = e.FirstAttemptAt is { } first ? Iso(first) : null,
            });
        }
        return new JsonObject { ["exportedAt"] = Iso(Now()), ["entries"] = list }.ToJsonString(new System.Text.Json.JsonSerializerOptions { WriteIndented = true });
    }

    /// <summary>Puts a POISON or EXPIRED entry back in its room's line (same key, fresh TTL, FailedDeliveries 0).</summary>
    public async Task<OutboxEntry> ReviveAsync(string id, CancellationToken cancellationToken = default)
    {
        var now = Now();
        var entry = await _o.Store.ReviveAsync(id, now, now + _o.TtlMs, cancellationToken).ConfigureAwait(false);
        Wake();
        return entry;
    }

    private void BeginRun()
    {
        _stopping = false;
        if (_stopSends.IsCancellationRequested)
        {
            _stopSends.Dispose();
            _stopSends = new CancellationTokenSource();
        }
    }

    private async Task LoopAsync(bool background, CancellationToken cancellationToken)
    {
        for (; ; )
        {
            if (_stopping) return;
            cancellationToken.ThrowIfCancellationRequested();
            if (_storeFailure is { } failure)
            {
                _storeFailure = null;
                throw new InvalidOperationException($"The outbox store failed: {failure.Message}", failure);
            }
            while (_wake.Reader.TryRead(out _))
            {
                // a fresh wake signal per pass, like a new promise
            }
            var now = Now();
            await ExpireDueAsync(now).ConfigureAwait(false);
            var nextDue = await StartDueSendsAsync(now).ConfigureAwait(false);
            var woken = _wake.Reader.WaitToReadAsync(cancellationToken).AsTask();
            if (!_inFlight.IsEmpty)
            {
                await Task.WhenAny([.. _inFlight.Values, woken]).ConfigureAwait(false);
                continue;
            }
            if (nextDue is null)
            {
                if (woken.IsCompleted) continue; // a send finished (or an entry arrived) during this pass
                if (!background) return;
                await woken.ConfigureAwait(false);
                continue;
            }
            var ms = nextDue.Value - Now();
            if (ms <= 0) continue;
            using var cancel = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
            var sleep = TimeProviderDelay.WaitAsync(_time, TimeSpan.FromTicks((long)Math.Round(ms * TimeSpan.TicksPerMillisecond)), cancel.Token);
            await Task.WhenAny(sleep, woken).ConfigureAwait(false);
            await cancel.CancelAsync().ConfigureAwait(false);
        }
    }

    private async Task ExpireDueAsync(double now)
    {
        foreach (var entry in await _o.Store.ExpireAsync(now).ConfigureAwait(false))
        {
            Interlocked.Increment(ref _expired);
            Changed(entry);
        }
    }

    private async Task<double?> StartDueSendsAsync(double now)
    {
        double? nextDue = null;
        foreach (var head in await _o.Store.HeadsAsync().ConfigureAwait(false))
        {
            if (_inFlight.ContainsKey(head.Room) || head.State == OutboxState.SENDING) continue;
            if (_o.KeyRetentionMs is { } retention && head.FirstAttemptAt is { } first && now - first > retention)
            {
                var expired = await _o.Store.MarkExpiredAsync(head.Id, now, new OutboxErrorInfo(
                    "IDEMPOTENCY_WINDOW_PASSED",
                    $"First sent {Math.Round((now - first) / 1000)} s ago, longer than the server keeps idempotency keys: a resend could apply it twice. Check the server's state, then revive or drop it.")).ConfigureAwait(false);
                Interlocked.Increment(ref _expired);
                Changed(expired);
                continue;
            }
            var dueAt = head.State == OutboxState.RETRYABLE ? head.NextAttemptAt ?? now : now;
            if (dueAt > now)
            {
                nextDue = nextDue is null ? dueAt : Math.Min(nextDue.Value, dueAt);
                continue;
            }
            if (_inFlight.Count >= _o.Concurrency)
            {
                nextDue = nextDue is null ? now : Math.Min(nextDue.Value, now);
                continue;
            }
            var room = head.Room;
            var started = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            var sending = Task.Run(async () =>
            {
                await started.Task.ConfigureAwait(false);
                try
                {
                    await SendOneAsync(head).ConfigureAwait(false);
                }
                catch (Exception error)
                { _storeFailure ??= error; // a store failure ends the run (the loop rethrows it)
                }
                finally
                {
                    // Free the room before waking the loop, so the next pass can start the room's next entry.
                    _inFlight.TryRemove(room, out _);
                    Wake();
                }
            });
            _inFlight[room] = sending;
            started.SetResult();
        }
        return nextDue;
    }

    /// <summary>How a thrown error is read: SDK errors carry code/retryable/retryAfterMs; anything else is a bug → POISON.</summary>
    public static SendFailure DescribeFailure(Exception error)
    {
        ArgumentNullException.ThrowIfNull(error);
        var message = error.Message.Length > 500 ? error.Message[..500] + "…" : error.Message;
        return error is AgentGraphException e
            ? new SendFailure(e.Code, message, e.Retryable, e.RetryAfterMs, e.Status)
            : new SendFailure("UNKNOWN_ERROR", message, false, null);
    }

    private async Task SendOneAsync(OutboxEntry head)
    {
        OutboxEntry entry;
        try
        {
            entry = await _o.Store.MarkSendingAsync(head.Id, Now()).ConfigureAwait(false);
        }
        catch (OutboxStateException)
        {
            return; // moved meanwhile (revived, expired): nothing to send
        }
        Interlocked.Increment(ref _sends);
        Changed(entry);
        SendFailure? failure = null;
        var token = _stopSends.Token;
        try
        {
            await _o.Send(entry, token).ConfigureAwait(false);
        }
        catch (Exception error)
        {
            failure = DescribeFailure(error);
        }
        var now = Now();
        if (failure is null)
        {
            Interlocked.Increment(ref _sent);
            Changed(await _o.Store.MarkSentAsync(entry.Id, now).ConfigureAwait(false));
        }
        else if (token.IsCancellationRequested)
        {
            Changed(await _o.Store.RequeueAsync(entry.Id, now).ConfigureAwait(false));
        }
        else if (failure.Retryable && failure.IsFailedDelivery && entry.FailedDeliveries + 1 >= _o.MaxFailedDeliveries)
        {
            // The server took it and failed on it MaxFailedDeliveries times: the dead-letter list, with the last error.
            Interlocked.Increment(ref _poisoned);
            Changed(await _o.Store.MarkPoisonAsync(entry.Id, now, new OutboxErrorInfo(failure.Code, failure.Message), failedDelivery: true).ConfigureAwait(false));
        }
        else if (failure.Retryable)
        {
            var delay = Math.Max(0, _delayFor(entry.Attempts, failure));
            Interlocked.Increment(ref _retried);
            Changed(await _o.Store.MarkRetryableAsync(entry.Id, now, now + delay, new OutboxErrorInfo(failure.Code, failure.Message), failure.IsFailedDelivery).ConfigureAwait(false));
        }
        else
        {
            Interlocked.Increment(ref _poisoned);
            Changed(await _o.Store.MarkPoisonAsync(entry.Id, now, new OutboxErrorInfo(failure.Code, failure.Message)).ConfigureAwait(false));
        }
    }

    /// <summary>Stops and closes the store.</summary>
    public async ValueTask DisposeAsync()
    {
        await StopAsync().ConfigureAwait(false);
        await _o.Store.DisposeAsync().ConfigureAwait(false);
        _stopSends.Dispose();
    }

    /// <summary>
    /// The usual send function: the client's ExecuteAsync with the entry's persisted key, so every send of an entry
    /// carries the key made at enqueue. Unknown or non-idempotent operations go to the dead-letter list.
    /// </summary>
    public static Func<OutboxEntry, CancellationToken, Task> SendWithClient(AgentGraphClient client, IReadOnlyDictionary<string, OperationSpec> operations)
    {
        ArgumentNullException.ThrowIfNull(client);
        ArgumentNullException.ThrowIfNull(operations);
        return async (entry, token) =>
        {
            if (!operations.TryGetValue(entry.Operation, out var op) || op.Kind != OperationKind.Mutation || !op.Idempotent)
                throw new AgentGraphException(new AgentGraphErrorInit
                {
                    Code = "OUTBOX_UNKNOWN_OPERATION",
                    Retryable = false,
                    Message = op is null
                        ? $"Outbox entry {entry.Id}: no operation named {entry.Operation} was given to SendWithClient."
                        : $"Outbox entry {entry.Id}: {entry.Operation} is not an idempotent mutation; only those go through the outbox.",
                });
            await client.ExecuteAsync(op, entry.Variables, new CallOptions { IdempotencyKey = entry.IdempotencyKey }, token).ConfigureAwait(false);
        };
    }
}

using System.Net.Http.Headers;
using System.Net.ServerSentEvents;
using System.Runtime.CompilerServices;
using System.Text;
using System.Text.Json;
using System.Text.Json.Nodes;

namespace AgentGraph.Sdk.Subscriptions;

/// <summary>How one subscription resumes, selects and verifies its events.</summary>
public sealed record SubscriptionOptions
{
    /// <summary>The variable carrying the last sequence handled (e.g. <c>afterSeq</c>).</summary>
    public required string CursorVariable { get; init; }
    /// <summary>The sequence of an event (strictly increasing per stream).</summary>
    public required Func<JsonNode, long> SeqOf { get; init; }
    /// <summary>The event inside a <c>next</c> payload's data (e.g. <c>data => data["roomMessages"]</c>).</summary>
    public required Func<JsonNode, JsonNode?> Select { get; init; }
    /// <summary>Resume after this sequence (e.g. the inbox cursor); null: start live.</summary>
    public long? After { get; init; }
    /// <summary>Verifies an event (e.g. the intent verifier); a throw yields a rejected item and the stream goes on.</summary>
    public Func<JsonNode, CancellationToken, Task>? Verify { get; init; }
    /// <summary>Silence (not even a heartbeat byte) after which the stream is dropped and reopened (default 45 s).</summary>
    public TimeSpan IdleTimeout { get; init; } = TimeSpan.FromSeconds(45);
}

/// <summary>One item of a subscription: an event (strictly increasing Seq, each once) or a rejected one.</summary>
/// <param name="Type"><c>event</c> or <c>rejected</c>.</param>
/// <param name="Seq">Its sequence.</param>
/// <param name="Event">The selected event.</param>
/// <param name="Error">Why it was rejected.</param>
public sealed record SubscriptionItem(string Type, long Seq, JsonNode Event, AgentGraphException? Error);

/// <summary>One typed item of a subscription (<see cref="SubscriptionClient.SubscribeAsync{T}"/>).</summary>
/// <param name="Type"><c>event</c> or <c>rejected</c>.</param>
/// <param name="Seq">Its sequence.</param>
/// <param name="Event">The event as <typeparamref name="T"/> (default for a rejected item).</param>
/// <param name="Error">Why it was rejected (verification failed).</param>
public sealed record SubscriptionItem<T>(string Type, long Seq, T? Event, AgentGraphException? Error);

/// <summary>
/// graphql-sse subscriptions (distinct connections, PROTOCOL.md) on <see cref="SseParser"/>: POST the operation to
/// <c>&lt;BaseUrl&gt;/stream</c> with <c>Accept: text/event-stream</c> and the bearer token; each drop (end,
/// <c>complete</c>, reset, idle timeout, retryable refusal) reconnects after the client's decorrelated-jitter backoff
/// (a server wait replaces it, capped) with the resume variable set to the last sequence handled; duplicates and
/// out-of-order events are dropped; UNAUTHENTICATED refreshes the token once (again after progress); other refusals
/// end the iteration with the typed error. The variables pass the client's privacy gate (policy and detectors) before
/// anything is sent: a refused one throws <see cref="PrivacyException"/> (PRIVACY_REFUSED). The token provider is the
/// client's unless one is given here, asked for a fresh token on every connect and reconnect; the client's extra
/// headers go on every stream request. (The TypeScript SDK's polling fallback is not ported yet.)
/// </summary>
public sealed class SubscriptionClient(AgentGraphClient client, ITokenProvider? tokens = null, Func<double>? random = null)
{
    private readonly Func<double> _random = random ?? Random.Shared.NextDouble;
    private readonly ITokenProvider? _tokens = tokens ?? client.TokenProvider;

    /// <summary>The stream URL: the GraphQL endpoint + <c>/stream</c>.</summary>
    public Uri StreamUrl { get; } = new(client.BaseUrl.ToString().TrimEnd('/') + "/stream");

    /// <summary>
    /// <see cref="SubscribeAsync(OperationSpec, JsonObject?, SubscriptionOptions, CancellationToken)"/> with each event
    /// deserialized as <typeparamref name="T"/> (the generated event records, with the generated code's JSON options).
    /// </summary>
    public async IAsyncEnumerable<SubscriptionItem<T>> SubscribeAsync<T>(
        OperationSpec op, JsonObject? variables, SubscriptionOptions options, JsonSerializerOptions? json = null,
        [EnumeratorCancellation] CancellationToken cancellationToken = default)
    {
        await foreach (var item in SubscribeAsync(op, variables, options, cancellationToken).ConfigureAwait(false))
            yield return new SubscriptionItem<T>(item.Type, item.Seq, item.Type == "event" ? item.Event.Deserialize<T>(json) : default, item.Error);
    }

    /// <summary>Streams an operation's events until cancelled or refused.</summary>
    public async IAsyncEnumerable<SubscriptionItem> SubscribeAsync(
        OperationSpec op, JsonObject? variables, SubscriptionOptions options,
        [EnumeratorCancellation] CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(op);
        ArgumentNullException.ThrowIfNull(options);
        // The privacy gate, before anything is sent (as ExecuteAsync does).
        var gated = PrivacyGate.Apply(op.Name, variables ?? [], op.Privacy, client.PrivacyPolicy, client.Detectors);
        if (gated.Dropped.Count > 0)
            SdkLogEntry.Write(client.Logger, new SdkLogEntry { Event = "privacy-drop", Operation = op.Name, Kind = "subscription", Dropped = gated.Dropped });
        var settings = client.Settings.Retry;
        var time = client.TimeProvider;
        var last = options.After;
        var failures = 0;
        var refreshed = false;
        string? token = null;
        var backoff = new DecorrelatedJitterBackoff(settings.BaseDelayMs, settings.MaxDelayMs, _random);
        for (; ; )
        {
            cancellationToken.ThrowIfCancellationRequested();
            var vars = (JsonObject)gated.Variables.DeepClone();
            if (last is { } after) vars[options.CursorVariable] = after;
            var body = new JsonObject { ["query"] = op.Document, ["operationName"] = op.Name, ["variables"] = vars }.ToJsonString();
            // A fresh token on every connect, unless the refresh just made one.
            token ??= _tokens is null ? null : await _tokens.GetTokenAsync(cancellationToken).ConfigureAwait(false);
            using var request = new HttpRequestMessage(HttpMethod.Post, StreamUrl) { Content = new StringContent(body, Encoding.UTF8, "application/json") };
            request.Headers.Accept.Add(new MediaTypeWithQualityHeaderValue("text/event-stream"));
            if (client.Headers is not null) foreach (var (k, v) in client.Headers) request.Headers.TryAddWithoutValidation(k, v);
            if (token is not null) request.Headers.TryAddWithoutValidation("authorization", $"Bearer {token}");
            token = null;
            AgentGraphException? dropped = null;
            var delivered = false;
            HttpResponseMessage? response = null;
            try
            {
                response = await client.Http.SendAsync(request, HttpCompletionOption.ResponseHeadersRead, cancellationToken).ConfigureAwait(false);
            }
            catch (HttpRequestException error)
            {
                dropped = new NetworkException($"The stream could not be opened: {error.Message}", error);
            }
            if (response is not null && (!response.IsSuccessStatusCode || response.Content.Headers.ContentType?.MediaType != "text/event-stream"))
            {
                var text = await response.Content.ReadAsStringAsync(cancellationToken).ConfigureAwait(false);
                JsonNode? parsed = null;
                try
                {
                    parsed = text.Length > 0 ? JsonNode.Parse(text) : null;
                }
                catch (JsonException)
                {
                }
                var headers = response.Headers.Concat(response.Content.Headers).ToDictionary(h => h.Key.ToLowerInvariant(), h => string.Join(", ", h.Value));
                var refusal = Classify.ErrorFromAnswer(client.Errors, new HttpAnswer((int)response.StatusCode, headers, parsed, text.Length), Clock.NowMs(time));
                response.Dispose();
                if (Classify.WantsTokenRefresh(refusal) && _tokens is not null && !refreshed)
                {
                    refreshed = true;
                    token = await _tokens.RefreshAsync(cancellationToken).ConfigureAwait(false);
                    continue;
                }
                if (!refusal.Retryable) throw refusal;
                dropped = refusal;
            }
            if (response is not null && dropped is null)
            {
                using (response)
                {
                    using var idle = new CancellationTokenSource(options.IdleTimeout, time);
                    using var linked = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken, idle.Token);
                    var stream = new ActivityStream(await response.Content.ReadAsStreamAsync(cancellationToken).ConfigureAwait(false), () => idle.CancelAfter(options.IdleTimeout));
                    var items = SseParser.Create(stream).EnumerateAsync(linked.Token).GetAsyncEnumerator(linked.Token);
                    try
                    {
                        for (; ; )
                        {
                            SseItem<string> item;
                            try
                            {
                                if (!await items.MoveNextAsync().ConfigureAwait(false)) break;
                                item = items.Current;
                            }
                            catch (OperationCanceledException) when (!cancellationToken.IsCancellationRequested)
                            {
                                break; // idle: drop and reconnect
                            }
                            catch (Exception error) when (error is IOException or HttpRequestException)
                            {
                                break; // reset mid-stream: reconnect
                            }
                            if (item.EventType == "complete") break;
                            if (item.EventType != "next") continue;
                            var payload = JsonNode.Parse(item.Data);
                            if (payload?["data"] is not JsonNode data || options.Select(data) is not JsonNode ev) continue;
                            var seq = options.SeqOf(ev);
                            if (last is { } l && seq <= l) continue; // duplicate or out of order
                            last = seq;
                            delivered = true;
                            failures = 0;
                            refreshed = false; // progress: a later UNAUTHENTICATED may refresh again
                            AgentGraphException? rejected = null;
                            if (options.Verify is not null)
                            {
                                try
                                {
                                    await options.Verify(ev, cancellationToken).ConfigureAwait(false);
                                }
                                catch (AgentGraphException error)
                                {
                                    rejected = error;
                                }
                            }
                            yield return new SubscriptionItem(rejected is null ? "event" : "rejected", seq, ev, rejected);
                        }
                    }
                    finally
                    {
                        await items.DisposeAsync().ConfigureAwait(false);
                    }
                }
            }
            cancellationToken.ThrowIfCancellationRequested();
            // Dropped: wait (server's wait, capped; else the jitter backoff), then reconnect from `last`.
            if (delivered) failures = 0;
            var delayMs = backoff.Next(failures);
            failures++;
            if (dropped?.RetryAfterMs is { } requested && requested <= settings.MaxRetryAfterMs) delayMs = requested;
            await TimeProviderDelay.WaitAsync(time, TimeSpan.FromTicks((long)Math.Round(delayMs * TimeSpan.TicksPerMillisecond)), cancellationToken).ConfigureAwait(false);
        }
    }

    /// <summary>A read-only stream that reports every byte read (heartbeats included) to reset the idle timer.</summary>
    private sealed class ActivityStream(Stream inner, Action onActivity) : Stream
    {
        public override bool CanRead => true;
        public override bool CanSeek => false;
        public override bool CanWrite => false;
        public override long Length => throw new NotSupportedException();
        public override long Position { get => throw new NotSupportedException(); set => throw new NotSupportedException(); }
        public override void Flush() { }
        public override int Read(byte[] buffer, int offset, int count) => Report(inner.Read(buffer, offset, count));
        public override async ValueTask<int> ReadAsync(Memory<byte> buffer, CancellationToken cancellationToken = default) =>
            Report(await inner.ReadAsync(buffer, cancellationToken).ConfigureAwait(false));
        public override async Task<int> ReadAsync(byte[] buffer, int offset, int count, CancellationToken cancellationToken) =>
            Report(await inner.ReadAsync(buffer.AsMemory(offset, count), cancellationToken).ConfigureAwait(false));
        public override long Seek(long offset, SeekOrigin origin) => throw new NotSupportedException();
        public override void SetLength(long value) => throw new NotSupportedException();
        public override void Write(byte[] buffer, int offset, int count) => throw new NotSupportedException();

        private int Report(int n)
        {
            if (n > 0) onActivity();
            return n;
        }

        protected override void Dispose(bool disposing)
        {
            if (disposing) inner.Dispose();
            base.Dispose(disposing);
        }
    }
}

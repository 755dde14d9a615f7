using System.Runtime.CompilerServices;
using System.Text;
using System.Text.Json;
using System.Text.Json.Nodes;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using Polly;
using Polly.Retry;

namespace AgentGraph.Sdk;

/// <summary>Options of <see cref="AgentGraphClient"/>.</summary>
public sealed record AgentGraphClientOptions
{
    /// <summary>The GraphQL endpoint (streams live at <c>&lt;BaseUrl&gt;/stream</c>).</summary>
    public required Uri BaseUrl { get; init; }
    /// <summary>The error table with its exception factories (generated code passes it).</summary>
    public ErrorRegistry? Errors { get; init; }
    /// <summary>The HTTP stack (default: a SocketsHttpHandler). Inject a test double or a proxy-aware handler.</summary>
    public HttpMessageHandler? Handler { get; init; }
    /// <summary>
    /// An HttpClient to send with instead (e.g. one from IHttpClientFactory, which services.AddAgentGraph passes):
    /// not disposed by the client, its BaseAddress unused (BaseUrl is). Set its Timeout to infinite or longer than
    /// <see cref="Timeout"/>: the per-attempt timeout is the client's own. <see cref="Handler"/> is then ignored.
    /// </summary>
    public HttpClient? HttpClient { get; init; }
    /// <summary>Extra headers on every request (never logged).</summary>
    public IReadOnlyDictionary<string, string>? Headers { get; init; }
    /// <summary>Supplies and refreshes access tokens.</summary>
    public ITokenProvider? TokenProvider { get; init; }
    /// <summary>Time: the retry waits and the budget (default TimeProvider.System).</summary>
    public TimeProvider? TimeProvider { get; init; }
    /// <summary>Random numbers in [0, 1) for the jitter (default Random.Shared).</summary>
    public Func<double>? Random { get; init; }
    /// <summary>Makes idempotency keys (default a random UUID).</summary>
    public Func<string>? NewKey { get; init; }
    /// <summary>Per-attempt timeout (default 10 s).</summary>
    public TimeSpan? Timeout { get; init; }
    /// <summary>Retry budget and waits.</summary>
    public RetrySettings? Retry { get; init; }
    /// <summary>Local payload cap (default 5 MiB; the server's <c>limits.maxPayloadBytes</c> replaces it).</summary>
    public long? MaxPayloadBytes { get; init; }
    /// <summary>Which data classes may be sent (default PUBLIC, INTERNAL).</summary>
    public PrivacyPolicy? PrivacyPolicy { get; init; }
    /// <summary>Replace the content detectors.</summary>
    public IReadOnlyList<Detector>? Detectors { get; init; }
    /// <summary>Metadata-only logs.</summary>
    public ILogger? Logger { get; init; }
    /// <summary>Capabilities already known.</summary>
    public Capabilities? Capabilities { get; init; }
}

/// <summary>
/// The small core every generated method goes through. <see cref="ExecuteAsync"/> runs one logical call:
/// idempotency key (made once) → privacy gate → payload cap → attempts in a Polly v8 retry pipeline whose retry
/// safety is decided per operation (queries and keyed mutations only), with the waits decided by
/// <see cref="RetryPolicy"/> (decorrelated jitter, server waits obeyed exactly and capped, the budget) and slept on
/// the injected TimeProvider. UNAUTHENTICATED refreshes the token once and resends at once (inside the attempt).
/// </summary>
public sealed class AgentGraphClient : IDisposable
{
    private readonly AgentGraphClientOptions _options;
    private readonly HttpClient _http;
    private readonly bool _ownsHttp;
    private readonly TimeProvider _time;
    private readonly Func<double> _random;
    private readonly Func<string> _newKey;
    private readonly ILogger _logger;
    private readonly PrivacyPolicy _policy;

    /// <summary>Creates the client.</summary>
    public AgentGraphClient(AgentGraphClientOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        if (options.BaseUrl is null || !options.BaseUrl.IsAbsoluteUri)
            throw new ArgumentException("AgentGraphClient: BaseUrl is required (the absolute GraphQL endpoint URL).", nameof(options));
        if (options.Errors is null)
            throw new ArgumentException("AgentGraphClient: Errors is required (the error registry from the generated code).", nameof(options));
        _options = options;
        var timeout = options.Timeout ?? EffectiveSettings.DefaultTimeout;
        if (timeout <= TimeSpan.Zero) throw new ArgumentException("AgentGraphClient: Timeout must be positive.", nameof(options));
        var maxPayload = options.MaxPayloadBytes ?? EffectiveSettings.DefaultMaxPayloadBytes;
        if (maxPayload < 1) throw new ArgumentException("AgentGraphClient: MaxPayloadBytes must be ≥ 1.", nameof(options));
        Settings = new EffectiveSettings((options.Retry ?? new RetrySettings()).Validated(), maxPayload, timeout);
        if (options.Capabilities is not null) Settings = Settings.Apply(options.Capabilities);
        _ownsHttp = options.HttpClient is null;
        _http = options.HttpClient ?? new HttpClient(options.Handler ?? new SocketsHttpHandler(), disposeHandler: options.Handler is null)
        {
            Timeout = System.Threading.Timeout.InfiniteTimeSpan,
        };
        _time = options.TimeProvider ?? TimeProvider.System;
        _random = options.Random ?? System.Random.Shared.NextDouble;
        _newKey = options.NewKey ?? Idempotency.RandomKey;
        _logger = options.Logger ?? NullLogger.Instance;
        _policy = options.PrivacyPolicy ?? PrivacyPolicy.Default;
    }

    /// <summary>The settings in effect (defaults ← options ← capabilities).</summary>
    public EffectiveSettings Settings { get; private set; }

    /// <summary>The error registry.</summary>
    public ErrorRegistry Errors => _options.Errors!;

    /// <summary>The time source.</summary>
    public TimeProvider TimeProvider => _time;

    /// <summary>The GraphQL endpoint.</summary>
    public Uri BaseUrl => _options.BaseUrl;

    /// <summary>The HTTP client (streams share it).</summary>
    internal HttpClient Http => _http;

    /// <summary>The token provider the client was built with (subscriptions default to it).</summary>
    internal ITokenProvider? TokenProvider => _options.TokenProvider;

    /// <summary>Extra headers on every request (streams send them too; never logged).</summary>
    internal IReadOnlyDictionary<string, string>? Headers => _options.Headers;

    /// <summary>The privacy policy and detectors the gate applies (to subscription variables too).</summary>
    internal PrivacyPolicy PrivacyPolicy => _policy;

    internal IReadOnlyList<Detector>? Detectors => _options.Detectors;

    /// <summary>The metadata-only logger.</summary>
    internal ILogger Logger => _logger;

    /// <summary>
    /// A stream client for this client's subscriptions: the same endpoint (<c>&lt;BaseUrl&gt;/stream</c>), HTTP client,
    /// headers, privacy gate and token provider (asked for a token on every connect and reconnect). A token provider
    /// given here wins over the client's.
    /// </summary>
    public Subscriptions.SubscriptionClient CreateSubscriptionClient(ITokenProvider? tokens = null) => new(this, tokens);

    /// <summary>Applies the server's capabilities.</summary>
    public void ApplyCapabilities(Capabilities capabilities) => Settings = Settings.Apply(capabilities);

    /// <summary>Reads the server's <c>capabilities</c> and applies them.</summary>
    public async Task<Capabilities> RefreshCapabilitiesAsync(CancellationToken cancellationToken = default)
    {
        var op = new OperationSpec("Capabilities", Capabilities.Document, OperationKind.Query, false, new Dictionary<string, PrivacyRule>());
        var result = await ExecuteAsync(op, null, null, cancellationToken).ConfigureAwait(false);
        var c = result.Data["capabilities"];
        static double? D(JsonNode? n) => n is JsonValue v && v.TryGetValue<double>(out var d) ? d : null;
        var caps = new Capabilities
        {
            MaxPayloadBytes = D(c?["limits"]?["maxPayloadBytes"]) is { } m ? (long)m : null,
            RetryMaxAttempts = D(c?["client"]?["retryMaxAttempts"]) is { } a ? (int)a : null,
            RetryBudgetMs = D(c?["client"]?["retryBudgetMs"]),
            PollIntervalMs = D(c?["client"]?["pollIntervalMs"]),
            TelemetryEnabled = c?["client"]?["telemetryEnabled"] is JsonValue t && t.TryGetValue<bool>(out var b) ? b : null,
        };
        ApplyCapabilities(caps);
        return caps;
    }

    private double NowMs() => Clock.NowMs(_time);

    private sealed class Attempt
    {
        public ExecuteResult? Success;
        public AgentGraphException? Error;
        public HttpAnswer? Answer;
        public RetryDecision? Decision;
    }

    private sealed class CallState
    {
        public int Attempts;
        public int Retries;
        public bool Refreshed;
        public string? RefreshedToken;
    }

    /// <summary>Runs one logical call; throws an <see cref="AgentGraphException"/> (or OperationCanceledException).</summary>
    public async Task<ExecuteResult> ExecuteAsync(
        OperationSpec op, JsonObject? variables = null, CallOptions? options = null, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(op);
        cancellationToken.ThrowIfCancellationRequested();
        if (op.Kind == OperationKind.Subscription)
            throw new ArgumentException($"{op.Name} is a subscription: use SubscriptionClient, not ExecuteAsync.", nameof(op));
        variables ??= [];
        options ??= new CallOptions();
        var settings = Settings;
        var startedAt = NowMs();
        var kind = op.Kind == OperationKind.Query ? "query" : "mutation";

        // 1. Idempotency key, once per logical call.
        string? idempotencyKey = null;
        var vars = variables;
        if (op.Kind == OperationKind.Mutation && op.Idempotent)
        {
            var fromVariables = variables[Idempotency.Variable] is JsonValue kv && kv.TryGetValue<string>(out var ks) ? ks : null;
            idempotencyKey = Idempotency.Resolve(options.IdempotencyKey, fromVariables, _newKey);
            vars = (JsonObject)variables.DeepClone();
            vars[Idempotency.Variable] = idempotencyKey;
        }
        var mayRetry = op.Kind == OperationKind.Query || idempotencyKey is not null;
        long bytes = 0;
        HttpAnswer? lastAnswer = null;

        SdkLogEntry Entry(string ev, int attempts, double latencyMs, HttpAnswer? answer) => new()
        {
            Event = ev, Operation = op.Name, Kind = kind, Attempts = attempts, LatencyMs = latencyMs, Bytes = bytes,
            Status = answer?.Status, ResponseBytes = answer?.Bytes,
        };
        AgentGraphException GiveUp(AgentGraphException error, int attempts, string reason)
        {
            error.Attempts = attempts;
            error.GiveUpReason = reason;
            SdkLogEntry.Write(_logger, Entry("call", attempts, NowMs() - startedAt, lastAnswer) with { Code = error.Code, GiveUpReason = reason });
            return error;
        }

        // 2. Privacy gate, before serialization.
        PrivacyGateResult gated;
        try
        {
            gated = PrivacyGate.Apply(op.Name, vars, op.Privacy, _policy, _options.Detectors);
        }
        catch (PrivacyException error)
        {
            throw GiveUp(error, 0, GiveUpReasons.NotRetryable);
        }
        if (gated.Dropped.Count > 0)
            SdkLogEntry.Write(_logger, new SdkLogEntry { Event = "privacy-drop", Operation = op.Name, Kind = kind, Dropped = gated.Dropped });

        // 3. Serialize and check the payload cap.
        var bodyJson = new JsonObject { ["query"] = op.Document, ["operationName"] = op.Name, ["variables"] = gated.Variables }
            .ToJsonString(JsonOptions);
        var body = Encoding.UTF8.GetBytes(bodyJson);
        bytes = body.Length;
        if (bytes > settings.MaxPayloadBytes)
        {
            var error = _options.Errors!.Create(new AgentGraphErrorInit
            {
                Code = "PAYLOAD_TOO_LARGE",
                Retryable = false,
                Message = $"The request for {op.Name} is {bytes} bytes, above the {settings.MaxPayloadBytes}-byte payload limit. " +
                          "Nothing was sent; send less data per call.",
            });
            throw GiveUp(error, 0, GiveUpReasons.NotRetryable);
        }

        // 4. Attempts, in a Polly retry pipeline on the injected TimeProvider.
        var backoff = new DecorrelatedJitterBackoff(settings.Retry.BaseDelayMs, settings.Retry.MaxDelayMs, _random);
        var state = new CallState();
        var timeout = options.Timeout ?? settings.Timeout;
        var pipeline = new ResiliencePipelineBuilder<Attempt> { TimeProvider = _time }
            .AddRetry(new RetryStrategyOptions<Attempt>
            {
                MaxRetryAttempts = int.MaxValue,
                BackoffType = DelayBackoffType.Constant,
                Delay = TimeSpan.Zero,
                UseJitter = false,
                ShouldHandle = args => new ValueTask<bool>(args.Outcome.Result?.Decision is RetryDecision.Wait),
                // The wait itself happens in OnRetry on the injected TimeProvider with tick precision (Polly's own
                // wait goes through Task.Delay, which truncates to whole milliseconds); Polly then waits zero.
                DelayGenerator = _ => new ValueTask<TimeSpan?>(TimeSpan.Zero),
                OnRetry = async args =>
                {
                    var attempt = args.Outcome.Result!;
                    var delayMs = ((RetryDecision.Wait)attempt.Decision!).DelayMs;
                    state.Retries++;
                    SdkLogEntry.Write(_logger, Entry("retry", state.Attempts, NowMs() - startedAt, attempt.Answer) with
                    {
                        Code = attempt.Error?.Code,
                        DelayMs = delayMs,
                    });
                    var delay = TimeSpan.FromTicks((long)Math.Round(delayMs * TimeSpan.TicksPerMillisecond));
                    await TimeProviderDelay.WaitAsync(_time, delay, args.Context.CancellationToken).ConfigureAwait(false);
                },
            })
            .Build();

        var outcome = await pipeline.ExecuteAsync(async token =>
        {
            for (; ; )
            {
                var attempt = await OneAttemptAsync(op, body, idempotencyKey, state, timeout, token).ConfigureAwait(false);
                lastAnswer = attempt.Answer;
                SdkLogEntry.Write(_logger, Entry("attempt", state.Attempts, 0, attempt.Answer) with { Code = attempt.Error?.Code });
                if (attempt.Error is null) return attempt;
                var decision = RetryPolicy.Decide(
                    attempt.Error,
                    new RetryState(state.Attempts, state.Retries, state.Refreshed, _options.TokenProvider is not null, mayRetry, startedAt),
                    settings.Retry, backoff, NowMs());
                if (decision is RetryDecision.Refresh)
                {
                    state.Refreshed = true;
                    try
                    {
                        state.RefreshedToken = await _options.TokenProvider!.RefreshAsync(token).ConfigureAwait(false);
                    }
                    catch (Exception refreshError) when (refreshError is not OperationCanceledException)
                    {
                        attempt.Decision = new RetryDecision.GiveUp(GiveUpReasons.Unauthenticated);
                        return attempt;
                    }
                    continue;
                }
                attempt.Decision = decision;
                return attempt;
            }
        }, cancellationToken).ConfigureAwait(false);

        if (outcome.Error is not null)
        {
            var reason = outcome.Decision is RetryDecision.GiveUp g ? g.Reason : GiveUpReasons.NotRetryable;
            throw GiveUp(outcome.Error, state.Attempts, reason);
        }
        SdkLogEntry.Write(_logger, Entry("call", state.Attempts, NowMs() - startedAt, lastAnswer));
        return outcome.Success!;
    }

    private static readonly JsonSerializerOptions JsonOptions = new() { Encoder = System.Text.Encodings.Web.JavaScriptEncoder.UnsafeRelaxedJsonEscaping };

    private async Task<Attempt> OneAttemptAsync(
        OperationSpec op, byte[] body, string? idempotencyKey, CallState state, TimeSpan timeout, CancellationToken token)
    {
        token.ThrowIfCancellationRequested();
        var accessToken = state.RefreshedToken;
        state.RefreshedToken = null;
        if (accessToken is null && _options.TokenProvider is not null)
            accessToken = await _options.TokenProvider.GetTokenAsync(token).ConfigureAwait(false);
        var headers = new Dictionary<string, string>(StringComparer.OrdinalIgnoreCase);
        if (_options.Headers is not null) foreach (var (k, v) in _options.Headers) headers[k] = v;
        headers["content-type"] = "application/json";
        headers["accept"] = Transport.Accept;
        if (accessToken is not null) headers["authorization"] = $"Bearer {accessToken}";
        if (idempotencyKey is not null) headers[Idempotency.Header] = idempotencyKey;
        state.Attempts++;
        try
        {
            var answer = await Transport.SendAsync(_http, _options.BaseUrl, headers, body, timeout, token).ConfigureAwait(false);
            var success = SuccessOf(answer, state.Attempts, idempotencyKey);
            if (success is not null) return new Attempt { Success = success, Answer = answer };
            return new Attempt { Error = Classify.ErrorFromAnswer(_options.Errors!, answer, NowMs()), Answer = answer };
        }
        catch (AgentGraphException error)
        {
            return new Attempt { Error = error };
        }
    }

    private static ExecuteResult? SuccessOf(HttpAnswer answer, int attempts, string? idempotencyKey)
    {
        if (answer.Status < 200 || answer.Status > 299) return null;
        if (answer.Body is not JsonObject body || Classify.GraphQLErrorsOf(body) is not null) return null;
        if (body["data"] is not { } data) return null;
        var extensions = body["extensions"] as JsonObject;
        var replayed = extensions?["idempotentReplay"] is JsonValue r && r.TryGetValue<bool>(out var b) && b;
        return new ExecuteResult(data, extensions, replayed, attempts, idempotencyKey);
    }

    /// <summary>
    /// Every node of a Relay connection, page after page (<c>after</c> set from each page's endCursor), fetched only
    /// when the consumer has taken every node of the current page. Cancelling ends the iteration with
    /// OperationCanceledException at its next step; no page is requested after it.
    /// </summary>
    public async IAsyncEnumerable<JsonNode?> PaginateAsync(
        OperationSpec op,
        JsonObject? variables,
        Func<JsonNode, JsonNode?> selectConnection,
        CallOptions? options = null,
        [EnumeratorCancellation] CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(selectConnection);
        variables ??= [];
        string? after = null;
        var seen = new HashSet<string>(StringComparer.Ordinal);
        for (; ; )
        {
            cancellationToken.ThrowIfCancellationRequested();
            var vars = variables;
            if (after is not null)
            {
                vars = (JsonObject)variables.DeepClone();
                vars["after"] = after;
            }
            var result = await ExecuteAsync(op, vars, options, cancellationToken).ConfigureAwait(false);
            cancellationToken.ThrowIfCancellationRequested();
            var page = selectConnection(result.Data) as JsonObject;
            if (page?["pageInfo"] is not JsonObject pageInfo)
                throw new InvalidResponseException(new AgentGraphErrorInit
                {
                    Code = "INVALID_RESPONSE",
                    Retryable = false,
                    Message = "A page has no pageInfo: the selection must include pageInfo { hasNextPage endCursor }.",
                });
            IEnumerable<JsonNode?> nodes = page["edges"] is JsonArray edges
                ? edges.Where(e => e is not null).Select(e => e!["node"])
                : page["nodes"] as JsonArray ?? [];
            foreach (var node in nodes.ToList())
            {
                cancellationToken.ThrowIfCancellationRequested();
                yield return node?.DeepClone();
            }
            var hasNext = pageInfo["hasNextPage"] is JsonValue hv && hv.TryGetValue<bool>(out var h) && h;
            if (!hasNext) yield break;
            var cursor = pageInfo["endCursor"] is JsonValue cv && cv.TryGetValue<string>(out var c) ? c : null;
            if (string.IsNullOrEmpty(cursor) || !seen.Add(cursor))
                throw new InvalidResponseException(new AgentGraphErrorInit
                {
                    Code = "INVALID_RESPONSE",
                    Retryable = false,
                    Message = "The server says there is a next page but gave no new endCursor; stopping instead of looping. " +
                              "Select pageInfo { hasNextPage endCursor }.",
                });
            after = cursor;
        }
    }

    /// <inheritdoc/>
    public void Dispose()
    {
        if (_ownsHttp) _http.Dispose();
    }
}

using System.Text.Json.Nodes;

namespace AgentGraph.Sdk.Tests.Conformance;

/// <summary>Everything an executor gets: the file name, the fake clock and the scripted random numbers.</summary>
internal sealed record VectorContext(string File, ConformanceTime Time, ScriptedRandom Random);

/// <summary>Builds the client a call/pagination/privacy vector describes.</summary>
internal sealed class SdkHarness
{
    public const string DefaultBaseUrl = "https://api.agentgraph.test/graphql";

    public required AgentGraphClient Client { get; init; }
    public required ScriptedHandler Handler { get; init; }
    public List<string> Problems { get; } = [];
    public int KeysMade;
    public int TokenRefreshes;

    private sealed class ScriptedTokens(SdkHarness h, string current, Queue<string?> refreshes) : ITokenProvider
    {
        public ValueTask<string> GetTokenAsync(CancellationToken cancellationToken) => ValueTask.FromResult(current);

        public ValueTask<string> RefreshAsync(CancellationToken cancellationToken)
        {
            h.TokenRefreshes++;
            if (!refreshes.TryDequeue(out var next) || next is null) throw new InvalidOperationException("scripted refresh failure");
            current = next;
            return ValueTask.FromResult(next);
        }
    }

    public static SdkHarness Build(JsonObject? config, JsonArray exchanges, VectorContext ctx)
    {
        config ??= [];
        var handler = new ScriptedHandler(exchanges, ctx.Time);
        var keys = new Queue<string>((config["idempotencyKeys"] as JsonArray ?? []).Select(k => Json.Str(k)!));
        SdkHarness? harness = null;
        ITokenProvider? tokens = null;
        var retryNode = config["retry"] as JsonObject;
        var retry = new RetrySettings();
        if (retryNode is not null)
        {
            retry = retry with
            {
                MaxAttempts = (int)(Json.Num(retryNode["maxAttempts"]) ?? retry.MaxAttempts),
                BudgetMs = Json.Num(retryNode["budgetMs"]) ?? retry.BudgetMs,
                BaseDelayMs = (int)(Json.Num(retryNode["baseDelayMs"]) ?? retry.BaseDelayMs),
                MaxDelayMs = Json.Num(retryNode["maxDelayMs"]) ?? retry.MaxDelayMs,
                MaxRetryAfterMs = Json.Num(retryNode["maxRetryAfterMs"]) ?? retry.MaxRetryAfterMs,
            };
        }
        Capabilities? capabilities = null;
        if (config["capabilities"] is JsonObject caps)
        {
            capabilities = new Capabilities
            {
                MaxPayloadBytes = Json.Num(caps["limits"]?["maxPayloadBytes"]) is { } m ? (long)m : null,
                RetryMaxAttempts = Json.Num(caps["client"]?["retryMaxAttempts"]) is { } a ? (int)a : null,
                RetryBudgetMs = Json.Num(caps["client"]?["retryBudgetMs"]),
                PollIntervalMs = Json.Num(caps["client"]?["pollIntervalMs"]),
            };
        }
        PrivacyPolicy? policy = null;
        if (config["privacyPolicy"] is JsonObject p)
            policy = new PrivacyPolicy((p["allow"] as JsonArray ?? []).Select(c => DataClasses.Parse(Json.Str(c)!)).ToHashSet());
        var client = new AgentGraphClient(new AgentGraphClientOptions
        {
            BaseUrl = new Uri(Json.Str(config["baseUrl"]) ?? DefaultBaseUrl),
            Errors = ErrorTables.Registry,
            Handler = handler,
            TimeProvider = ctx.Time,
            Random = ctx.Random.Next,
            NewKey = () =>
            {
                harness!.KeysMade++;
                if (keys.TryDequeue(out var key)) return key;
                harness.Problems.Add($"the SDK made idempotency key #{harness.KeysMade}, the vector lists fewer");
                return $"unexpected-key-{harness.KeysMade}";
            },
            TokenProvider = config["tokens"] is JsonObject t
                ? tokens = new LazyTokens(() => harness!, Json.Str(t["current"])!, new Queue<string?>((t["refreshes"] as JsonArray ?? []).Select(Json.Str)))
                : null,
            Retry = retry,
            MaxPayloadBytes = Json.Num(config["maxPayloadBytes"]) is { } mp ? (long)mp : null,
            PrivacyPolicy = policy,
            Capabilities = capabilities,
        });
        harness = new SdkHarness { Client = client, Handler = handler };
        _ = tokens;
        return harness;
    }

    private sealed class LazyTokens(Func<SdkHarness> harness, string current, Queue<string?> refreshes) : ITokenProvider
    {
        public ValueTask<string> GetTokenAsync(CancellationToken cancellationToken) => ValueTask.FromResult(current);

        public ValueTask<string> RefreshAsync(CancellationToken cancellationToken)
        {
            harness().TokenRefreshes++;
            if (!refreshes.TryDequeue(out var next) || next is null) throw new InvalidOperationException("scripted refresh failure");
            current = next;
            return ValueTask.FromResult(next);
        }
    }

    public static OperationSpec OperationOf(JsonObject op)
    {
        var privacy = new Dictionary<string, PrivacyRule>();
        foreach (var (path, rule) in op["privacy"] as JsonObject ?? [])
            privacy[path] = new PrivacyRule(DataClasses.Parse(Json.Str(rule!["class"])!), Json.Bool(rule["required"]) == true);
        var kind = Json.Str(op["kind"]) switch
        {
            "query" => OperationKind.Query,
            "mutation" => OperationKind.Mutation,
            var k => throw new InvalidOperationException($"unknown operation kind {k}"),
        };
        return new OperationSpec(Json.Str(op["name"])!, Json.Str(op["document"])!, kind, Json.Bool(op["idempotent"]) == true, privacy);
    }

    /// <summary>TypeScript class names (vectors) → this SDK's exception classes.</summary>
    public static string CSharpClassFor(string tsClass) => tsClass switch
    {
        "TimeoutError" => nameof(AttemptTimeoutException),
        "AbortError" => nameof(OperationCanceledException),
        _ when tsClass.EndsWith("Error", StringComparison.Ordinal) => tsClass[..^"Error".Length] + "Exception",
        _ => tsClass,
    };

    /// <summary>Problems between a thrown exception and the expected error.</summary>
    public static IEnumerable<string> ErrorProblems(JsonObject expected, Exception thrown)
    {
        var code = Json.Str(expected["code"]);
        if (code == "ABORTED")
        {
            if (thrown is not OperationCanceledException) yield return $"expected OperationCanceledException (ABORTED), got {Describe(thrown)}";
            yield break;
        }
        if (thrown is not AgentGraphException e)
        {
            yield return $"expected AgentGraphException {code}, got {Describe(thrown)}";
            yield break;
        }
        if (code != e.Code) yield return $"error.code: expected {code}, got {e.Code}";
        if (Json.Str(expected["class"]) is { } cls && CSharpClassFor(cls) != e.GetType().Name)
            yield return $"error.class: expected {CSharpClassFor(cls)} ({cls}), got {e.GetType().Name}";
        if (Json.Bool(expected["retryable"]) is { } retryable && retryable != e.Retryable)
            yield return $"error.retryable: expected {retryable}, got {e.Retryable}";
        if (expected.ContainsKey("status") && Json.Num(expected["status"]) != e.Status)
            yield return $"error.status: expected {Json.Show(expected["status"])}, got {e.Status}";
        if (expected.ContainsKey("retryAfterMs") && Json.Num(expected["retryAfterMs"]) != e.RetryAfterMs)
            yield return $"error.retryAfterMs: expected {Json.Show(expected["retryAfterMs"])}, got {e.RetryAfterMs}";
        if (expected.ContainsKey("correlationId") && Json.Str(expected["correlationId"]) != e.CorrelationId)
            yield return $"error.correlationId: expected {Json.Show(expected["correlationId"])}, got {e.CorrelationId}";
        if (expected.ContainsKey("attempts") && Json.Num(expected["attempts"]) != e.Attempts)
            yield return $"error.attempts: expected {Json.Show(expected["attempts"])}, got {e.Attempts}";
        if (expected.ContainsKey("giveUpReason") && Json.Str(expected["giveUpReason"]) != e.GiveUpReason)
            yield return $"error.giveUpReason: expected {Json.Show(expected["giveUpReason"])}, got {e.GiveUpReason}";
        if (expected["refusals"] is JsonArray wantRefusals)
        {
            var got = new JsonArray((e as PrivacyException)?.Refusals.Select(r => (JsonNode)new JsonObject { ["path"] = r.Path, ["reason"] = r.Reason }).ToArray() ?? []);
            if (!Json.Equal(wantRefusals, got)) yield return $"error.refusals: expected {Json.Show(wantRefusals)}, got {Json.Show(got)}";
        }
        foreach (var secret in expected["messageExcludes"] as JsonArray ?? [])
            if (e.Message.Contains(Json.Str(secret)!, StringComparison.Ordinal)) yield return "error.message contains a refused value";
    }

    public static string Describe(Exception e) => e is AgentGraphException a ? $"{a.GetType().Name} {a.Code}: {a.Message}" : $"{e.GetType().Name}: {e.Message}";

    public const double DelayToleranceMs = 0.0001;
    public const double ElapsedToleranceMs = 0.001;

    public static IEnumerable<string> SleepsProblems(JsonArray? expected, IReadOnlyList<double> actual)
    {
        var want = (expected ?? []).Select(n => Json.Num(n)!.Value).ToList();
        var same = want.Count == actual.Count && want.Select((w, i) => Math.Abs(w - actual[i]) <= DelayToleranceMs + 1e-9).All(x => x);
        if (!same) yield return $"sleeps: expected [{string.Join(", ", want.Select(Json.F))}], got [{string.Join(", ", actual.Select(Json.F))}]";
    }
}

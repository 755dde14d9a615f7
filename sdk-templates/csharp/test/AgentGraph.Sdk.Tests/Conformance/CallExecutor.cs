using System.Text.Json.Nodes;

namespace AgentGraph.Sdk.Tests.Conformance;

/// <summary>Executors of the SDK core kinds: call and privacy (one ExecuteAsync), pagination (PaginateAsync).</summary>
internal static class CallExecutor
{
    public static async Task<List<string>> RunCallAsync(JsonObject vector, VectorContext ctx)
    {
        var start = ctx.Time.NowMs;
        var h = SdkHarness.Build(vector["config"] as JsonObject, vector["exchanges"] as JsonArray ?? [], ctx);
        var problems = new List<string>();
        var expect = vector["expect"]!.AsObject();
        var outcome = expect["outcome"]!.AsObject();
        var expectedError = outcome["error"] as JsonObject;
        var options = new CallOptions { IdempotencyKey = Json.Str(vector["callOptions"]?["idempotencyKey"]) };
        try
        {
            var result = await h.Client.ExecuteAsync(
                SdkHarness.OperationOf(vector["operation"]!.AsObject()),
                vector["variables"]?.DeepClone() as JsonObject ?? [],
                options);
            if (expectedError is not null)
            {
                problems.Add($"expected error {Json.Str(expectedError["code"])}, but the call succeeded");
            }
            else
            {
                if (!Json.Equal(outcome["data"], result.Data)) problems.Add($"data: expected {Json.Show(outcome["data"])}, got {Json.Show(result.Data)}");
                if (Json.Bool(outcome["replayed"]) is { } replayed && replayed != result.Replayed) problems.Add($"replayed: expected {replayed}, got {result.Replayed}");
                if (Json.Num(outcome["attempts"]) is { } attempts && attempts != result.Attempts) problems.Add($"attempts: expected {attempts}, got {result.Attempts}");
                if (Json.Str(outcome["idempotencyKey"]) is { } key && key != result.IdempotencyKey) problems.Add($"idempotencyKey: expected {key}, got {result.IdempotencyKey}");
            }
        }
        catch (Exception error)
        {
            if (expectedError is not null) problems.AddRange(SdkHarness.ErrorProblems(expectedError, error));
            else problems.Add($"expected success, got {SdkHarness.Describe(error)}");
        }
        problems.AddRange(h.Handler.FinalProblems());
        problems.AddRange(h.Problems);
        problems.AddRange(SdkHarness.SleepsProblems(expect["sleeps"] as JsonArray, ctx.Time.Sleeps));
        foreach (var (name, got) in new[] { ("randomConsumed", ctx.Random.Consumed), ("keysMade", h.KeysMade), ("tokenRefreshes", h.TokenRefreshes) })
            if (Json.Num(expect[name]) is { } want && want != got) problems.Add($"{name}: expected {want}, got {got}");
        var elapsed = ctx.Time.NowMs - start;
        if (Json.Num(expect["elapsedMs"]) is { } wantElapsed && Math.Abs(elapsed - wantElapsed) > SdkHarness.ElapsedToleranceMs)
            problems.Add($"elapsedMs: expected {wantElapsed}, got {elapsed}");
        return problems;
    }

    public static async Task<List<string>> RunPaginationAsync(JsonObject vector, VectorContext ctx)
    {
        var h = SdkHarness.Build(vector["config"] as JsonObject, vector["exchanges"] as JsonArray ?? [], ctx);
        using var controller = new CancellationTokenSource();
        h.Handler.AbortCaller = controller.Cancel;
        var problems = new List<string>();
        var nodes = new JsonArray();
        var expect = vector["expect"]!.AsObject();
        var expectedError = expect["error"] as JsonObject;
        var abortAfter = Json.Num(vector["abortAfterNodes"]);
        var path = Json.Str(vector["connectionPath"])!.Split('.');
        if (abortAfter == 0) await controller.CancelAsync();
        try
        {
            var iterable = h.Client.PaginateAsync(
                SdkHarness.OperationOf(vector["operation"]!.AsObject()),
                vector["variables"]?.DeepClone() as JsonObject ?? [],
                data => path.Aggregate<string, JsonNode?>(data, (node, key) => node?[key]),
                cancellationToken: controller.Token);
            await foreach (var node in iterable)
            {
                nodes.Add(node);
                if (nodes.Count == abortAfter) await controller.CancelAsync();
            }
            if (expectedError is not null) problems.Add($"expected error {Json.Str(expectedError["code"])}, but iteration completed");
        }
        catch (Exception error)
        {
            if (expectedError is not null) problems.AddRange(SdkHarness.ErrorProblems(expectedError, error));
            else problems.Add($"expected the iteration to complete, got {SdkHarness.Describe(error)}");
        }
        if (!Json.Equal(expect["nodes"], nodes)) problems.Add($"nodes: expected {Json.Show(expect["nodes"])}, got {Json.Show(nodes)}");
        if (Json.Num(expect["randomConsumed"]) is { } rc && rc != ctx.Random.Consumed) problems.Add($"randomConsumed: expected {rc}, got {ctx.Random.Consumed}");
        problems.AddRange(h.Handler.FinalProblems());
        problems.AddRange(h.Problems);
        problems.AddRange(SdkHarness.SleepsProblems(expect["sleeps"] as JsonArray, ctx.Time.Sleeps));
        return problems;
    }
}

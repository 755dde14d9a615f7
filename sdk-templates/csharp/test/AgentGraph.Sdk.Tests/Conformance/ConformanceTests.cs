using System.Text.Json.Nodes;
using Json.Schema;
using Xunit;

namespace AgentGraph.Sdk.Tests.Conformance;

/// <summary>
/// The C# runner of the language-neutral conformance vectors (test/conformance/README.md): one test per vector file.
/// A vector must validate against vector.schema.json, its id must equal its file name, and the executor of its kind
/// must reproduce it exactly.
/// </summary>
public sealed class ConformanceTests
{
    public static string RepoRoot { get; } = FindRoot();

    private static string FindRoot()
    {
        for (var dir = new DirectoryInfo(AppContext.BaseDirectory); dir is not null; dir = dir.Parent)
            if (Directory.Exists(Path.Combine(dir.FullName, "test", "conformance", "vectors"))) return dir.FullName;
        throw new InvalidOperationException("test/conformance/vectors not found above " + AppContext.BaseDirectory);
    }

    private static string VectorsDir => Path.Combine(RepoRoot, "test", "conformance", "vectors");

    public static TheoryData<string> Files()
    {
        var data = new TheoryData<string>();
        foreach (var f in Directory.GetFiles(VectorsDir, "*.json").Select(Path.GetFileName).Order(StringComparer.Ordinal)) data.Add(f!);
        return data;
    }

    private static readonly Lazy<JsonSchema> Schema = new(() =>
        JsonSchema.FromText(File.ReadAllText(Path.Combine(RepoRoot, "test", "conformance", "vector.schema.json"))));

    private static System.Text.Json.JsonElement Element(JsonNode node) => System.Text.Json.JsonDocument.Parse(node.ToJsonString()).RootElement;

    [Fact]
    public void TheSuiteHasVectors() => Assert.True(Files().Count >= 30);

    [Fact]
    public void TheSchemaRejectsMalformedVectors()
    {
        var good = JsonNode.Parse(File.ReadAllText(Path.Combine(VectorsDir, "call-query-success.json")))!.AsObject();
        Assert.True(Schema.Value.Evaluate(Element(good)).IsValid);
        var broken = new List<JsonObject>();
        JsonObject With(string key, JsonNode? value)
        {
            var copy = good.DeepClone().AsObject();
            copy[key] = value;
            return copy;
        }
        broken.Add(With("kind", "calls"));
        broken.Add(With("unknownField", 1));
        broken.Add(With("random", new JsonArray(1)));
        broken.Add(With("id", "Not An Id"));
        foreach (var vector in broken) Assert.False(Schema.Value.Evaluate(Element(vector)).IsValid, vector.ToJsonString());
    }

    [Theory]
    [MemberData(nameof(Files))]
    public async Task Vector(string file)
    {
        var vector = JsonNode.Parse(await File.ReadAllTextAsync(Path.Combine(VectorsDir, file)))!.AsObject();
        var evaluation = Schema.Value.Evaluate(Element(vector), new EvaluationOptions { OutputFormat = OutputFormat.List });
        Assert.True(evaluation.IsValid, $"{file} does not validate against vector.schema.json");
        Assert.Equal(Path.GetFileNameWithoutExtension(file), Json.Str(vector["id"]));
        var time = new ConformanceTime(Json.Num(vector["clock"]?["start"]) ?? 1_700_000_000_000);
        var random = new ScriptedRandom((vector["random"] as JsonArray ?? []).Select(n => Json.Num(n)!.Value).ToList(), file);
        var ctx = new VectorContext(file, time, random);
        var kind = Json.Str(vector["kind"]);
        var problems = kind switch
        {
            "call" or "privacy" => await CallExecutor.RunCallAsync(vector, ctx),
            "pagination" => await CallExecutor.RunPaginationAsync(vector, ctx),
            "outbox" => await OutboxExecutor.RunAsync(vector, ctx),
            "inbox" => await InboxExecutor.RunAsync(vector, ctx),
            "intent" => await IntentExecutor.RunAsync(vector, ctx),
            _ => [$"no executor for kind \"{kind}\""],
        };
        Assert.True(problems.Count == 0, $"{file}:\n  - {string.Join("\n  - ", problems)}");
    }
}

using System.Text.Json;
using AgentGraph.Sdk.Tests.Conformance;
using Xunit;

namespace AgentGraph.Sdk.Tests;

/// <summary>
/// The detectors against the labelled corpus shared with the TypeScript and Python SDKs and the server filter
/// (test/secrets-corpus/corpus.json, README there): recall ≥ 0.97 and precision ≥ 0.95, a secret counting as found
/// only when its labelled detector fires. A failure lists every misclassified case.
/// </summary>
public sealed class DetectorCorpusTests
{
    private const double MinRecall = 0.97;
    private const double MinPrecision = 0.95;

    private sealed record Case(string Id, string Label, string? Detector, string Value);

    private static List<Case> LoadCorpus()
    {
        using var doc = JsonDocument.Parse(File.ReadAllText(Path.Combine(ConformanceTests.RepoRoot, "test", "secrets-corpus", "corpus.json")));
        return doc.RootElement.GetProperty("cases").EnumerateArray().Select(c => new Case(
            c.GetProperty("id").GetString()!,
            c.GetProperty("label").GetString()!,
            c.TryGetProperty("detector", out var d) ? d.GetString() : null,
            c.GetProperty("value").GetString()!)).ToList();
    }

    [Fact]
    public void Reaches_the_recall_and_precision_targets_on_the_corpus()
    {
        var cases = LoadCorpus();
        Assert.True(cases.Count >= 200, $"the corpus has {cases.Count} cases, fewer than 200");
        int tp = 0, fp = 0, fn = 0;
        var wrong = new List<string>();
        foreach (var c in cases)
        {
            var ids = Detectors.Detect(c.Value).Select(d => d.Id).ToList();
            if (c.Label == "secret")
            {
                if (ids.Contains(c.Detector!)) tp++;
                else
                {
                    fn++;
                    wrong.Add($"missed {c.Id} (expected {c.Detector}, got [{string.Join(",", ids)}])");
                }
            }
            else if (ids.Count > 0)
            {
                fp++;
                wrong.Add($"false positive {c.Id} ([{string.Join(",", ids)}])");
            }
        }
        var recall = (double)tp / (tp + fn);
        var precision = (double)tp / (tp + fp);
        Assert.True(recall >= MinRecall && precision >= MinPrecision,
            $"recall {recall:F3} (target {MinRecall}), precision {precision:F3} (target {MinPrecision}); misclassified:\n{string.Join("\n", wrong)}");
    }

    [Theory]
    [InlineData("redis://:password@host", "url-password")]
    [InlineData("password: s3cr3t-Pa55", "password-assignment")]
    [InlineData("client_secret: Zq3xT9vLk2Wm8PbR4nYc7HsJ1dFg6KeUa0VtQi5O", "high-entropy")]
    [InlineData("key 9f3Kx2", null)]
    [InlineData("Password=${DB_PASSWORD}", null)]
    [InlineData("pk_live_51H8xYzAbCdEfGhIjKlMnOpQrStUvWxYz0123456789", null)]
    [InlineData("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9", null)]
    [InlineData("Reset your password: click the link", null)]
    public void Keyword_rules_and_the_issue_cases(string value, string? expected)
    {
        var ids = Detectors.Detect(value).Select(d => d.Id).ToList();
        if (expected is null) Assert.Empty(ids);
        else Assert.Contains(expected, ids);
    }
}

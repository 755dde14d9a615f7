using System.Globalization;
using System.Text.Json;
using System.Text.Json.Nodes;

namespace AgentGraph.Sdk.Tests.Conformance;

/// <summary>JSON comparisons with the vector format's semantics (test/conformance/README.md).</summary>
internal static class Json
{
    public static bool Equal(JsonNode? a, JsonNode? b)
    {
        if (a is null || b is null) return a is null && b is null;
        switch (a)
        {
            case JsonObject oa when b is JsonObject ob:
                return oa.Count == ob.Count && oa.All(p => ob.ContainsKey(p.Key) && Equal(p.Value, ob[p.Key]));
            case JsonArray aa when b is JsonArray ab:
                return aa.Count == ab.Count && aa.Select((v, i) => Equal(v, ab[i])).All(x => x);
            case JsonValue va when b is JsonValue vb:
                var ka = va.GetValueKind();
                var kb = vb.GetValueKind();
                if (ka == JsonValueKind.Number && kb == JsonValueKind.Number) return ToDouble(va) == ToDouble(vb);
                if (ka != kb) return false;
                return ka switch
                {
                    JsonValueKind.String => va.GetValue<string>() == vb.GetValue<string>(),
                    _ => true,
                };
            default:
                return false;
        }
    }

    /// <summary>expected ⊆ actual: objects by subset of keys, arrays element by element with equal length.</summary>
    public static IEnumerable<string> SubsetProblems(JsonNode? expected, JsonNode? actual, string path = "$")
    {
        if (expected is JsonObject eo)
        {
            if (actual is not JsonObject ao)
            {
                yield return $"{path}: expected an object, got {Show(actual)}";
                yield break;
            }
            foreach (var (k, v) in eo)
            {
                if (!ao.ContainsKey(k)) yield return $"{path}.{k}: missing";
                else foreach (var p in SubsetProblems(v, ao[k], $"{path}.{k}")) yield return p;
            }
            yield break;
        }
        if (expected is JsonArray ea)
        {
            if (actual is not JsonArray aa || aa.Count != ea.Count)
            {
                yield return $"{path}: expected an array of {ea.Count}, got {Show(actual)}";
                yield break;
            }
            for (var i = 0; i < ea.Count; i++)
                foreach (var p in SubsetProblems(ea[i], aa[i], $"{path}[{i}]")) yield return p;
            yield break;
        }
        if (!Equal(expected, actual)) yield return $"{path}: expected {Show(expected)}, got {Show(actual)}";
    }

    public static string Show(JsonNode? node) => node?.ToJsonString() ?? "null";

    public static string? Str(JsonNode? node) => node is JsonValue v && v.TryGetValue<string>(out var s) ? s : null;

    public static double? Num(JsonNode? node) => node is JsonValue v && v.GetValueKind() == JsonValueKind.Number ? ToDouble(v) : null;

    private static double ToDouble(JsonValue v)
    {
        if (v.TryGetValue<double>(out var d)) return d;
        if (v.TryGetValue<long>(out var l)) return l;
        if (v.TryGetValue<int>(out var i)) return i;
        return double.Parse(v.ToJsonString(), CultureInfo.InvariantCulture);
    }

    public static bool? Bool(JsonNode? node) => node is JsonValue v && v.TryGetValue<bool>(out var b) ? b : null;

    public static string F(double d) => d.ToString("R", CultureInfo.InvariantCulture);
}

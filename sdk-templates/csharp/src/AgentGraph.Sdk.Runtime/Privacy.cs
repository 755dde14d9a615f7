using System.Text.Json.Nodes;

namespace AgentGraph.Sdk;

/// <summary>
/// The data classes of <c>@privacy(class:)</c> (docs/architecture.md#schema-conventions). The schema and the other SDKs
/// spell them PUBLIC, INTERNAL, …: <see cref="DataClasses.WireName"/> and <see cref="DataClasses.Parse"/> map them.
/// </summary>
public enum DataClass
{
    /// <summary>Public (PUBLIC).</summary>
    Public,
    /// <summary>Internal (INTERNAL).</summary>
    Internal,
    /// <summary>Personal data (PERSONAL).</summary>
    Personal,
    /// <summary>Secrets (SECRET).</summary>
    Secret,
    /// <summary>Biometric data (BIOMETRIC): never leaves the process.</summary>
    Biometric,
}

/// <summary>The schema's names of <see cref="DataClass"/> values (PUBLIC, INTERNAL, PERSONAL, SECRET, BIOMETRIC).</summary>
public static class DataClasses
{
    /// <summary>The name the schema and the other SDKs use, e.g. <c>PERSONAL</c>.</summary>
    public static string WireName(this DataClass dataClass) => dataClass switch
    {
        DataClass.Public => "PUBLIC",
        DataClass.Internal => "INTERNAL",
        DataClass.Personal => "PERSONAL",
        DataClass.Secret => "SECRET",
        DataClass.Biometric => "BIOMETRIC",
        _ => throw new ArgumentOutOfRangeException(nameof(dataClass), dataClass, "Not a DataClass."),
    };

    /// <summary>The class a schema name (<c>PERSONAL</c>) stands for; throws on an unknown name.</summary>
    public static DataClass Parse(string wireName) => wireName switch
    {
        "PUBLIC" => DataClass.Public,
        "INTERNAL" => DataClass.Internal,
        "PERSONAL" => DataClass.Personal,
        "SECRET" => DataClass.Secret,
        "BIOMETRIC" => DataClass.Biometric,
        _ => throw new ArgumentException($"Unknown data class \"{wireName}\": expected PUBLIC, INTERNAL, PERSONAL, SECRET or BIOMETRIC.", nameof(wireName)),
    };
}

/// <summary>The class of one input path and whether the operation needs it.</summary>
public sealed record PrivacyRule(DataClass Class, bool Required);

/// <summary>Which classes may leave the process. Biometric never does, even when listed.</summary>
public sealed record PrivacyPolicy(IReadOnlySet<DataClass> Allow)
{
    /// <summary>Public and Internal.</summary>
    public static PrivacyPolicy Default { get; } = new(new HashSet<DataClass> { DataClass.Public, DataClass.Internal });

    /// <summary>Whether a value of this class may be sent.</summary>
    public bool Allows(DataClass dataClass) => dataClass != DataClass.Biometric && Allow.Contains(dataClass);
}

/// <summary>The gate's result: the filtered variables and the concrete paths it dropped.</summary>
public sealed record PrivacyGateResult(JsonObject Variables, IReadOnlyList<string> Dropped);

/// <summary>
/// The privacy gate, on the variables before serialization and before any transport: a value whose rule's class the
/// policy forbids is dropped when optional and refuses the call when required; every string under a rule is scanned
/// by the detectors and refused when one finds a forbidden class. Refusals name paths, never values. A port of the
/// TypeScript SDK's privacy.ts (paths: <c>input.body</c>, <c>input.items[].note</c>).
/// </summary>
public static class PrivacyGate
{
    private sealed class Drop
    {
        public static readonly Drop Instance = new();
    }

    /// <summary>Applies the gate; throws <see cref="PrivacyException"/> with every refusal.</summary>
    public static PrivacyGateResult Apply(
        string operation,
        JsonObject variables,
        IReadOnlyDictionary<string, PrivacyRule> table,
        PrivacyPolicy policy,
        IReadOnlyList<Detector>? detectors = null)
    {
        ArgumentNullException.ThrowIfNull(variables);
        ArgumentNullException.ThrowIfNull(table);
        ArgumentNullException.ThrowIfNull(policy);
        detectors ??= Detectors.All;
        var refusals = new List<PrivacyRefusal>();
        var dropped = new List<string>();

        object? Walk(JsonNode? value, string path, string pattern, PrivacyRule? inherited)
        {
            var own = table.TryGetValue(pattern, out var r) ? r : null;
            var rule = own ?? inherited;
            if (value is null) return null;
            if (own is not null && !policy.Allows(own.Class))
            {
                if (own.Required)
                {
                    refusals.Add(new PrivacyRefusal(path, $"class:{own.Class.WireName()}"));
                    return value.DeepClone();
                }
                dropped.Add(path);
                return Drop.Instance;
            }
            switch (value)
            {
                case JsonValue v when v.TryGetValue<string>(out var text):
                    if (rule is not null)
                    {
                        var hit = detectors.FirstOrDefault(d => d.Test(text) && !policy.Allows(d.DataClass));
                        if (hit is not null) refusals.Add(new PrivacyRefusal(path, hit.Id));
                    }
                    return value.DeepClone();
                case JsonArray array:
                    {
                        var output = new JsonArray();
                        for (var i = 0; i < array.Count; i++)
                        {
                            var kept = Walk(array[i], $"{path}[{i}]", $"{pattern}[]", rule);
                            // A list element cannot be dropped without shifting the others: it refuses the call.
                            if (kept is Drop) refusals.Add(new PrivacyRefusal($"{path}[{i}]", $"class:{table[$"{pattern}[]"].Class.WireName()}"));
                            else output.Add((JsonNode?)kept);
                        }
                        return output;
                    }
                case JsonObject obj:
                    {
                        var output = new JsonObject();
                        foreach (var (key, field) in obj)
                        {
                            var kept = Walk(field, $"{path}.{key}", $"{pattern}.{key}", rule);
                            if (kept is not Drop) output[key] = (JsonNode?)kept;
                        }
                        return output;
                    }
                default:
                    return value.DeepClone();
            }
        }

        var result = new JsonObject();
        foreach (var (name, value) in variables)
        {
            var kept = Walk(value, name, name, null);
            if (kept is not Drop) result[name] = (JsonNode?)kept;
        }
        if (refusals.Count > 0) throw new PrivacyException(operation, refusals);
        return new PrivacyGateResult(result, dropped);
    }
}

using System.Text.Encodings.Web;
using System.Text.Json;

namespace AgentGraph.Host;

/// <summary>JSON text as other implementations write it: compact, no escaping of <c>+</c>, <c>&lt;</c> or non-ASCII.</summary>
internal static class Json
{
    public static readonly JsonSerializerOptions Compact = new() { Encoder = JavaScriptEncoder.UnsafeRelaxedJsonEscaping };
}

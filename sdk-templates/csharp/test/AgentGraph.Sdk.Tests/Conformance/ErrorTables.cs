using System.Text.Json.Nodes;

namespace AgentGraph.Sdk.Tests.Conformance;

/// <summary>
/// The error registry the vectors run against: the generated SDK's own (sdks/csharp, its Errors.g.cs is compiled
/// into this test project), so the exception classes checked are the ones applications catch.
/// </summary>
internal static class ErrorTables
{
    public static ErrorRegistry Registry => AgentGraph.Sdk.AgentGraphErrors.Registry;
}

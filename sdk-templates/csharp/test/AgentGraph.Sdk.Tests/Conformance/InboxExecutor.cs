using System.Text.Json.Nodes;
using AgentGraph.Sdk.Inbox;
using AgentGraph.Sdk.Outbox;

namespace AgentGraph.Sdk.Tests.Conformance;

/// <summary>Executor of inbox vectors (fields: test/conformance/ts/inbox.ts): the inbox on its SQLite file.</summary>
internal static class InboxExecutor
{
    public static async Task<List<string>> RunAsync(JsonObject vector, VectorContext ctx)
    {
        var dir = Directory.CreateTempSubdirectory("conformance-inbox-");
        var file = Path.Combine(dir.FullName, "inbox.db");
        var start = ctx.Time.NowMs;
        double Rel(double ms) => ms - start;
        var problems = new List<string>();
        var leases = new Dictionary<string, Lease>();
        var tokens = 0;
        var config = vector["config"] as JsonObject ?? [];
        InboxStore Open() => new(file, ctx.Time, Json.Num(config["leaseMs"]) ?? 60_000, (int)(Json.Num(config["maxAttempts"]) ?? 3),
            _ => Json.Num(config["retryDelayMs"]) ?? 0, () => $"lease-{++tokens}");
        JsonNode AckJson(Acknowledgement a)
        {
            var o = new JsonObject { ["stream"] = a.Stream, ["id"] = a.Id, ["seq"] = a.Seq, ["outcome"] = a.Outcome };
            if (a.Error is not null) o["error"] = new JsonObject { ["code"] = a.Error.Code, ["message"] = a.Error.Message };
            o["at"] = Rel(a.At);
            return o;
        }
        void Compare(string where, JsonNode? want, JsonNode? got)
        {
            if (!Json.Equal(want, got)) problems.Add($"{where}: expected {Json.Show(want)}, got {Json.Show(got)}");
        }
        var inbox = Open();
        async Task CheckAsync(string where, JsonObject want)
        {
            if (want["messages"] is JsonArray messages)
            {
                var got = new JsonArray((await inbox.ListAsync()).Select(m => (JsonNode)new JsonObject
                {
                    ["stream"] = m.Stream, ["id"] = m.Id, ["state"] = m.State.ToString(), ["attempts"] = m.Attempts,
                    ["lastError"] = m.LastError is null ? null : new JsonObject { ["code"] = m.LastError.Code },
                }).ToArray());
                var wantFull = new JsonArray(messages.Select(m =>
                {
                    var o = m!.DeepClone().AsObject();
                    if (!o.ContainsKey("lastError")) o["lastError"] = null;
                    return (JsonNode)o;
                }).ToArray());
                Compare($"{where} messages", wantFull, got);
            }
            foreach (var (stream, cursor) in want["cursors"] as JsonObject ?? [])
                Compare($"{where} cursor of {stream}", cursor, await inbox.CursorAsync(stream) is { } c ? JsonValue.Create(c) : null);
            if (want["pendingAcknowledgements"] is JsonArray acks)
                Compare($"{where} pendingAcknowledgements", acks, new JsonArray((await inbox.PendingAcknowledgementsAsync()).Select(AckJson).ToArray()));
        }
        async Task<JsonNode?> SettleAsync(string label, Func<Lease, Task<JsonNode?>> action)
        {
            if (!leases.TryGetValue(label, out var lease)) throw new InvalidOperationException($"{ctx.File}: no lease labelled \"{label}\"");
            try
            {
                return await action(lease);
            }
            catch (LeaseLostException)
            {
                return new JsonObject { ["error"] = "LEASE_LOST" };
            }
        }
        try
        {
            var index = 0;
            foreach (var step in vector["steps"]!.AsArray().Select(s => s!.AsObject()))
            {
                var where = $"step {++index}";
                if (step["receive"] is JsonObject r)
                {
                    var result = await inbox.ReceiveAsync(new IncomingMessage(Json.Str(r["stream"])!, Json.Str(r["id"])!, r["payload"]!.DeepClone(),
                        Json.Num(r["seq"]) is { } seq ? (long)seq : null, Json.Str(r["cursor"])));
                    Compare(where, step["expect"], JsonValue.Create(result));
                }
                else if (step["lease"] is JsonObject l)
                {
                    var lease = await inbox.LeaseAsync(Json.Str(l["stream"]));
                    if (lease is not null && Json.Str(step["as"]) is { } label) leases[label] = lease;
                    Compare(where, step["expect"], lease is null ? null : new JsonObject
                    {
                        ["stream"] = lease.Stream, ["id"] = lease.Id, ["attempt"] = lease.Attempt, ["leaseUntil"] = Rel(lease.LeaseUntil),
                    });
                }
                else if (Json.Str(step["complete"]) is { } completeLabel)
                {
                    Compare(where, step["expect"], await SettleAsync(completeLabel, async lease => AckJson(await inbox.CompleteAsync(lease))));
                }
                else if (Json.Str(step["fail"]) is { } failLabel)
                {
                    var error = new OutboxErrorInfo(Json.Str(step["error"]!["code"])!, Json.Str(step["error"]!["message"])!);
                    Compare(where, step["expect"], await SettleAsync(failLabel, async lease =>
                    {
                        var result = await inbox.FailAsync(lease, error);
                        return result.Outcome == "RETRY"
                            ? new JsonObject { ["outcome"] = "RETRY", ["attempts"] = result.Attempts, ["availableAt"] = Rel(result.AvailableAt) }
                            : new JsonObject { ["outcome"] = "QUARANTINED", ["acknowledgement"] = AckJson(result.Acknowledgement!) };
                    }));
                }
                else if (step["acknowledged"] is JsonObject a)
                {
                    await inbox.AcknowledgedAsync(Json.Str(a["stream"])!, Json.Str(a["id"])!);
                }
                else if (Json.Num(step["advance"]) is { } ms)
                {
                    ctx.Time.Advance(ms);
                }
                else if (step.ContainsKey("restart"))
                {
                    await inbox.DisposeAsync();
                    inbox = Open();
                }
                else if (step["check"] is JsonObject check)
                {
                    await CheckAsync(where, check);
                }
            }
            await CheckAsync("expect", vector["expect"]!.AsObject());
        }
        finally
        {
            await inbox.DisposeAsync();
            dir.Delete(true);
        }
        return problems;
    }
}

using System.Text.Json.Nodes;
using AgentGraph.Sdk.Outbox;

namespace AgentGraph.Sdk.Tests.Conformance;

/// <summary>Executor of outbox vectors (fields: test/conformance/ts/outbox.ts): the outbox on its SQLite store.</summary>
internal static class OutboxExecutor
{
    public static async Task<List<string>> RunAsync(JsonObject vector, VectorContext ctx)
    {
        var dir = Directory.CreateTempSubdirectory("conformance-outbox-");
        var file = Path.Combine(dir.FullName, "outbox.db");
        var start = ctx.Time.NowMs;
        var problems = new List<string>();
        var config = vector["config"]!.AsObject();
        var keys = new Queue<string>((config["idempotencyKeys"] as JsonArray ?? []).Select(k => Json.Str(k)!));
        var outcomes = new Dictionary<string, Queue<JsonNode>>();
        foreach (var (k, list) in vector["outcomes"] as JsonObject ?? []) outcomes[k] = new Queue<JsonNode>(list!.AsArray().Select(n => n!));
        var sends = new List<(string Room, string Key, double At)>();
        var hung = 0;
        var ids = 0;
        var keysMade = 0;
        var gate = new object();

        Task Send(OutboxEntry entry, CancellationToken token)
        {
            JsonNode? outcome;
            lock (gate)
            {
                sends.Add((entry.Room, entry.IdempotencyKey, ctx.Time.NowMs - start));
                outcome = outcomes.TryGetValue(entry.IdempotencyKey, out var q) && q.TryDequeue(out var o) ? o : null;
            }
            if (outcome is null || Json.Str(outcome) == "ok") return Task.CompletedTask;
            if (Json.Str(outcome) == "hang")
            {
                Interlocked.Increment(ref hung);
                return new TaskCompletionSource().Task;
            }
            var e = outcome["error"]!;
            throw new AgentGraphException(new AgentGraphErrorInit
            {
                Code = Json.Str(e["code"])!,
                Message = $"{Json.Str(e["code"])} (scripted)",
                Retryable = Json.Bool(e["retryable"]) == true,
                RetryAfterMs = Json.Num(e["retryAfterMs"]),
                Status = Json.Num(e["status"]) is { } s ? (int)s : null,
            });
        }

        async Task<OutboxWorker> OpenAsync() => await OutboxWorker.OpenAsync(new OutboxOptions
        {
            Store = SqliteOutboxStore.Open(file),
            Send = Send,
            TimeProvider = ctx.Time,
            Concurrency = (int)(Json.Num(config["concurrency"]) ?? 4),
            TtlMs = Json.Num(config["ttlMs"]) ?? 604_800_000,
            KeyRetentionMs = Json.Num(config["keyRetentionMs"]),
            MaxFailedDeliveries = (int)(Json.Num(config["maxFailedDeliveries"]) ?? OutboxOptions.DefaultMaxFailedDeliveries),
            DelayFor = OutboxWorker.ExponentialDelay(Json.Num(config["retry"]?["baseDelayMs"]) ?? 1_000, Json.Num(config["retry"]?["maxDelayMs"]) ?? 300_000),
            NewId = () => $"entry-{Interlocked.Increment(ref ids)}",
            NewKey = () =>
            {
                keysMade++;
                if (keys.TryDequeue(out var key)) return key;
                problems.Add($"the outbox made idempotency key #{keysMade}, the vector lists fewer");
                return $"unlisted-key-{keysMade}";
            },
        });

        var outbox = await OpenAsync();
        var stores = new List<OutboxWorker> { outbox };
        try
        {
            var index = 0;
            foreach (var step in vector["steps"]!.AsArray().Select(s => s!.AsObject()))
            {
                var where = $"step {++index}";
                if (step["enqueue"] is JsonObject enq)
                {
                    await outbox.EnqueueAsync(new EnqueueInput(Json.Str(enq["room"])!, Json.Str(enq["operation"])!, enq["variables"]?.DeepClone() as JsonObject));
                }
                else if (step.ContainsKey("drain"))
                {
                    await outbox.DrainAsync().WaitAsync(TimeSpan.FromSeconds(30));
                }
                else if (Json.Num(step["runUntilHung"]) is { } n)
                {
                    var running = outbox.DrainAsync();
                    _ = running.ContinueWith(t => t.Exception, TaskScheduler.Default);
                    var deadline = DateTime.UtcNow.AddSeconds(10);
                    while (Volatile.Read(ref hung) < n && DateTime.UtcNow < deadline) await Task.Delay(5);
                    if (Volatile.Read(ref hung) < n)
                    {
                        problems.Add($"{where}: expected {n} hanging sends, got {hung}");
                        break;
                    }
                    await Task.Delay(50); // let the sends that hang finish recording SENDING (they already have)
                }
                else if (step.ContainsKey("crash"))
                {
                    // The process is gone: its hanging sends never settle, nothing more is written; reopen the file.
                    await CloseStoreOnlyAsync(outbox);
                    hung = 0;
                    outbox = await OpenAsync();
                    stores.Add(outbox);
                }
                else if (Json.Num(step["advance"]) is { } ms)
                {
                    ctx.Time.Advance(ms);
                }
                else if (step["check"] is JsonObject check)
                {
                    problems.AddRange(await StateProblemsAsync(where, check, outbox));
                }
            }
            var expect = vector["expect"]!.AsObject();
            problems.AddRange(await StateProblemsAsync("expect", expect, outbox));
            var wantSends = expect["sends"]!.AsArray().Select(s => (Room: Json.Str(s!["room"])!, Key: Json.Str(s["key"])!, At: Json.Num(s["at"])!.Value)).ToList();
            foreach (var room in wantSends.Select(s => s.Room).Concat(sends.Select(s => s.Room)).Distinct())
            {
                var want = wantSends.Where(s => s.Room == room).Select(s => $"{s.Key}@{Json.F(s.At)}").ToList();
                var got = sends.Where(s => s.Room == room).Select(s => $"{s.Key}@{Json.F(s.At)}").ToList();
                if (!want.SequenceEqual(got)) problems.Add($"sends of room {room}: expected [{string.Join(", ", want)}], got [{string.Join(", ", got)}]");
            }
        }
        finally
        {
            await CloseStoreOnlyAsync(outbox);
            try
            {
                dir.Delete(true);
            }
            catch (IOException)
            {
            }
        }
        return problems;
    }

    private static readonly System.Reflection.FieldInfo OptionsField =
        typeof(OutboxWorker).GetField("_o", System.Reflection.BindingFlags.NonPublic | System.Reflection.BindingFlags.Instance)!;

    private static async Task CloseStoreOnlyAsync(OutboxWorker outbox)
    {
        var options = (OutboxOptions)OptionsField.GetValue(outbox)!;
        await options.Store.DisposeAsync();
    }

    private static async Task<List<string>> StateProblemsAsync(string where, JsonObject want, OutboxWorker outbox)
    {
        var problems = new List<string>();
        var entries = await outbox.ListAsync();
        if (want["entries"] is JsonArray wantEntries)
        {
            var same = wantEntries.Count == entries.Count && wantEntries.Select((w, i) =>
            {
                var e = entries[i];
                return Json.Str(w!["key"]) == e.IdempotencyKey && Json.Str(w["room"]) == e.Room && Json.Str(w["state"]) == e.State.ToString()
                    && Json.Num(w["attempts"]) == e.Attempts
                    && (w["failedDeliveries"] is null || Json.Num(w["failedDeliveries"]) == e.FailedDeliveries)
                    && (!w.AsObject().ContainsKey("lastError") || (w["lastError"] is null ? e.LastError is null : Json.Str(w["lastError"]!["code"]) == e.LastError?.Code))
                    && (w["operation"] is null || Json.Str(w["operation"]) == e.Operation)
                    && (w["variables"] is null || Json.Equal(w["variables"], e.Variables));
            }).All(x => x);
            if (!same)
            {
                var got = string.Join(", ", entries.Select(e => $"{e.IdempotencyKey}/{e.Room}/{e.State}/{e.Attempts}/failedDeliveries {e.FailedDeliveries}/{e.LastError?.Code}"));
                problems.Add($"{where} entries: expected {wantEntries.ToJsonString()}, got [{got}]");
            }
        }
        if (Json.Num(want["recovered"]) is { } recovered && recovered != outbox.Recovered)
            problems.Add($"{where} recovered: expected {recovered}, got {outbox.Recovered}");
        if (want["deadLetters"] is JsonArray dead)
        {
            var got = entries.Where(e => e.State is OutboxState.POISON or OutboxState.EXPIRED).Select(e => e.IdempotencyKey).ToList();
            var wanted = dead.Select(d => Json.Str(d)!).ToList();
            if (!wanted.SequenceEqual(got)) problems.Add($"{where} deadLetters: expected [{string.Join(", ", wanted)}], got [{string.Join(", ", got)}]");
        }
        return problems;
    }
}

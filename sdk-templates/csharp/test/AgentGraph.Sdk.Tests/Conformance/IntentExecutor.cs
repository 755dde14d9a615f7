using System.Net;
using System.Text;
using System.Text.Json.Nodes;
using AgentGraph.Sdk.Intents;
using Org.BouncyCastle.Crypto.Parameters;
using Org.BouncyCastle.Crypto.Signers;

namespace AgentGraph.Sdk.Tests.Conformance;

/// <summary>
/// Executor of intent vectors (fields: test/conformance/ts/intent.ts): verification of pre-signed compact JWS tokens
/// against a given JWKS or a scripted remote one. Each token is first checked to be exactly what the step says
/// (header, claims, signed by the named key; EdDSA re-signed byte for byte), so a vector cannot lie about its token.
/// </summary>
internal static class IntentExecutor
{
    private const string JwksUrl = "https://coordination.agentgraph.test/.well-known/jwks.json";

    private sealed class JwksHandler(Queue<JsonObject> responses, List<string> problems, Func<int> count, Action bump, int listed) : HttpMessageHandler
    {
        protected override Task<HttpResponseMessage> SendAsync(HttpRequestMessage request, CancellationToken cancellationToken)
        {
            bump();
            if (request.RequestUri?.ToString() != JwksUrl) problems.Add($"fetch of {request.RequestUri}: expected {JwksUrl}");
            if (!responses.TryDequeue(out var next))
            {
                problems.Add($"JWKS fetch #{count()}: the vector lists {listed}");
                return Task.FromResult(new HttpResponseMessage(HttpStatusCode.InternalServerError) { Content = new StringContent("{}") });
            }
            return Task.FromResult(new HttpResponseMessage((HttpStatusCode)(int)Json.Num(next["status"])!.Value)
            {
                Content = new StringContent(next["body"]?.ToJsonString() ?? "null", Encoding.UTF8, "application/json"),
            });
        }
    }

    private static IEnumerable<string> TokenProblems(string where, JsonObject step, JsonObject keys)
    {
        var token = Json.Str(step["token"])!;
        var parts = token.Split('.');
        var header = JsonNode.Parse(Encoding.UTF8.GetString(Base64Url.Decode(parts[0])));
        var claims = JsonNode.Parse(Encoding.UTF8.GetString(Base64Url.Decode(parts[1])));
        if (!Json.Equal(header, step["header"])) yield return $"{where}: the token's header is {Json.Show(header)}";
        if (!Json.Equal(claims, step["claims"])) yield return $"{where}: the token's claims are {Json.Show(claims)}";
        var name = Json.Str(step["signedWith"])!;
        if (keys[name] is not JsonObject key)
        {
            yield return $"{where}: no key named \"{name}\"";
            yield break;
        }
        var alg = Json.Str(key["alg"])!;
        var input = Encoding.ASCII.GetBytes($"{parts[0]}.{parts[1]}");
        if (!IntentKey.FromJwk(key, alg).Verify(input, Base64Url.Decode(parts[2])))
            yield return $"{where}: the token is not signed by \"{name}\"";
        if (alg == "EdDSA")
        {
            var signer = new Ed25519Signer();
            signer.Init(true, new Ed25519PrivateKeyParameters(Base64Url.Decode(Json.Str(key["d"])!), 0));
            signer.BlockUpdate(input, 0, input.Length);
            if (Base64Url.Encode(signer.GenerateSignature()) != parts[2])
                yield return $"{where}: re-signing with \"{name}\" (EdDSA, deterministic) gives another token";
        }
    }

    public static async Task<List<string>> RunAsync(JsonObject vector, VectorContext ctx)
    {
        var problems = new List<string>();
        var jwks = vector["jwks"] as JsonObject;
        var listed = vector["jwksResponses"] as JsonArray;
        if ((jwks is null) == (listed is null)) return [$"{ctx.File}: give exactly one of jwks and jwksResponses"];
        var fetches = 0;
        var handler = new JwksHandler(new Queue<JsonObject>((listed ?? []).Select(r => r!.AsObject())), problems, () => fetches, () => fetches++, listed?.Count ?? 0);
        var v = vector["verifier"]!.AsObject();
        var verifier = new IntentVerifier(new IntentVerifierOptions
        {
            Issuer = Json.Str(v["issuer"])!,
            DeviceId = Json.Str(v["deviceId"])!,
            ClockSkewSec = (int)(Json.Num(v["clockSkewSec"]) ?? 30),
            Algorithms = v["algorithms"] is JsonArray algs ? algs.Select(a => Json.Str(a)!).ToList() : ["ES256", "EdDSA"],
            JwksCooldownMs = Json.Num(v["jwksCooldownMs"]) ?? 30_000,
            JwksMaxAgeMs = Json.Num(v["jwksMaxAgeMs"]) ?? 600_000,
            Jwks = (JsonObject?)jwks?.DeepClone(),
            JwksUrl = jwks is null ? new Uri(JwksUrl) : null,
            Handler = handler,
            ReplayCache = new MemoryReplayCache(),
            TimeProvider = ctx.Time,
        });
        var index = 0;
        foreach (var step in vector["steps"]!.AsArray().Select(s => s!.AsObject()))
        {
            var where = $"step {++index}";
            if (Json.Num(step["advance"]) is { } ms)
            {
                ctx.Time.Advance(ms);
                continue;
            }
            var verify = step["verify"]!.AsObject();
            problems.AddRange(TokenProblems(where, verify, vector["keys"]!.AsObject()));
            JsonObject got;
            var expect = step["expect"]!.AsObject();
            try
            {
                var i = await verifier.VerifyAsync(Json.Str(verify["token"])!);
                got = new JsonObject
                {
                    ["accepted"] = new JsonObject
                    {
                        ["id"] = i.Id, ["tenantId"] = i.TenantId, ["deviceId"] = i.DeviceId, ["issuer"] = i.Issuer,
                        ["requester"] = i.Requester, ["sequence"] = i.Sequence, ["action"] = i.Action, ["params"] = i.Params.DeepClone(),
                        ["issuedAt"] = i.IssuedAt, ["notBefore"] = i.NotBefore, ["expiresAt"] = i.ExpiresAt, ["kid"] = i.Kid, ["alg"] = i.Alg,
                    },
                };
            }
            catch (IntentVerificationException error)
            {
                var e = new JsonObject { ["reason"] = error.Reason, ["code"] = error.Code };
                if (expect["error"]?["retryable"] is not null) e["retryable"] = error.Retryable;
                got = new JsonObject { ["error"] = e };
            }
            if (!Json.Equal(expect, got)) problems.Add($"{where}: expected {Json.Show(expect)}, got {Json.Show(got)}");
            if (Json.Num(step["jwksFetches"]) is { } want && want != fetches) problems.Add($"{where}: expected {want} JWKS fetches so far, got {fetches}");
        }
        return problems;
    }
}

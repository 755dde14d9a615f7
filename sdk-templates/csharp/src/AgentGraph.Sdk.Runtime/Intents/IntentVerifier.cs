using System.Text;
using System.Text.Json;
using System.Text.Json.Nodes;
using Microsoft.IdentityModel.JsonWebTokens;
using Microsoft.IdentityModel.Tokens;

namespace AgentGraph.Sdk.Intents;

/// <summary>A verified intent: the claims, named (times in epoch ms).</summary>
public sealed record VerifiedIntent(
    string Id, string TenantId, string DeviceId, string Issuer, string? Requester, long Sequence, string Action,
    JsonObject Params, double IssuedAt, double NotBefore, double ExpiresAt, string Kid, string Alg, JsonObject Claims);

/// <summary>Options of <see cref="IntentVerifier"/>.</summary>
public sealed record IntentVerifierOptions
{
    /// <summary>The expected <c>iss</c>.</summary>
    public required string Issuer { get; init; }
    /// <summary>This device's id: the expected <c>aud</c>.</summary>
    public required string DeviceId { get; init; }
    /// <summary>The signing keys as data...</summary>
    public JsonObject? Jwks { get; init; }
    /// <summary>...or the URL of the published JWKS.</summary>
    public Uri? JwksUrl { get; init; }
    /// <summary>HTTP stack for JwksUrl.</summary>
    public HttpMessageHandler? Handler { get; init; }
    /// <summary>Seen jtis.</summary>
    public required IReplayCache ReplayCache { get; init; }
    /// <summary>Time.</summary>
    public TimeProvider? TimeProvider { get; init; }
    /// <summary>Allowed clock difference in seconds (default 30).</summary>
    public int ClockSkewSec { get; init; } = 30;
    /// <summary>Allowed algorithms (default ES256, EdDSA).</summary>
    public IReadOnlyList<string> Algorithms { get; init; } = ["ES256", "EdDSA"];
    /// <summary>No JWKS refetch for an unknown kid within this long of the last fetch (default 30 s).</summary>
    public double JwksCooldownMs { get; init; } = 30_000;
    /// <summary>Refetch a cached JWKS older than this (default 10 min).</summary>
    public double JwksMaxAgeMs { get; init; } = 600_000;
}

/// <summary>
/// Intent verification (docs/architecture.md#an-intents-path), the same checks in the same order as the TypeScript SDK (jose's jwtVerify
/// plus the intent rules): shape and kid → alg allow-list → key (remote JWKS refetched once) → signature → typ
/// <c>intent+jwt</c> → required claims → iss, aud → iat/nbf/exp with skew → claim types → jti not replayed.
/// The compact JWS is parsed by Microsoft.IdentityModel.JsonWebTokens (<see cref="JsonWebToken"/>: header, payload,
/// signature, base64url) and ES256/ES384 signatures are checked by its crypto provider (<see cref="IntentKey"/>); the
/// intent rules stay here, in jose's order, so every SDK refuses the same token with the same code.
/// </summary>
public sealed class IntentVerifier
{
    /// <summary>The header typ of intents.</summary>
    public const string Typ = "intent+jwt";

    private static readonly string[] PresenceOrder = ["iss", "aud", "action", "seq", "tid", "exp", "nbf", "iat", "jti"];
    private readonly IntentVerifierOptions _o;
    private readonly TimeProvider _time;

    /// <summary>Creates the verifier.</summary>
    public IntentVerifier(IntentVerifierOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        if (string.IsNullOrEmpty(options.Issuer)) throw new ArgumentException("IntentVerifier: Issuer is required.", nameof(options));
        if (string.IsNullOrEmpty(options.DeviceId)) throw new ArgumentException("IntentVerifier: DeviceId is required.", nameof(options));
        _o = options;
        _time = options.TimeProvider ?? TimeProvider.System;
        KeySet = new IntentKeySet(options.Jwks, options.JwksUrl, options.Handler, _time, options.JwksCooldownMs, options.JwksMaxAgeMs);
    }

    /// <summary>The key set (its Fetches counter tells how often a remote JWKS was fetched).</summary>
    public IntentKeySet KeySet { get; }

    private static JsonObject DecodeClaims(JsonWebToken jwt)
    {
        try
        {
            return JsonNode.Parse(Base64UrlEncoder.Decode(jwt.EncodedPayload)) as JsonObject
                ?? throw new IntentVerificationException("MALFORMED", "the claims set is not a JSON object.");
        }
        catch (Exception error) when (error is FormatException or JsonException or ArgumentException)
        {
            throw new IntentVerificationException("MALFORMED", "the claims set does not decode.", cause: error);
        }
    }

    private static bool IsNumber(JsonNode? n) => n is JsonValue v && v.GetValueKind() == JsonValueKind.Number;

    private static double Number(JsonNode? n) => n!.GetValue<double>();

    /// <summary>Verifies a compact JWS intent; throws <see cref="IntentVerificationException"/>.</summary>
    public async Task<VerifiedIntent> VerifyAsync(string token, CancellationToken cancellationToken = default)
    {
        JsonWebToken jwt;
        try
        {
            jwt = new JsonWebToken(token ?? "");
        }
        catch (Exception error) when (error is ArgumentException or SecurityTokenException)
        {
            throw new IntentVerificationException("MALFORMED", "not a compact JWS (three base64url parts with a JSON header and claims set).", cause: error);
        }
        if (jwt.IsEncrypted) throw new IntentVerificationException("MALFORMED", "a JWE, not a signed JWS.");
        var alg = jwt.Alg;
        if (string.IsNullOrEmpty(alg)) throw new IntentVerificationException("MALFORMED", "the header has no alg.");
        if (!_o.Algorithms.Contains(alg)) throw new IntentVerificationException("ALG_NOT_ALLOWED", $"\"alg\" (Algorithm) Header Parameter value {alg} not allowed");
        var kid = string.IsNullOrEmpty(jwt.Kid) ? null : jwt.Kid;
        var key = await KeySet.KeyForAsync(kid, alg, cancellationToken).ConfigureAwait(false);
        byte[] signature;
        try
        {
            signature = Base64UrlEncoder.DecodeBytes(jwt.EncodedSignature);
        }
        catch (FormatException error)
        {
            throw new IntentVerificationException("MALFORMED", "the signature does not decode.", cause: error);
        }
        if (!key.Verify(Encoding.ASCII.GetBytes($"{jwt.EncodedHeader}.{jwt.EncodedPayload}"), signature))
            throw new IntentVerificationException("FORGED_SIGNATURE", "the signature does not verify with the named key.");
        var claims = DecodeClaims(jwt);
        var typ = string.IsNullOrEmpty(jwt.Typ) ? null : jwt.Typ;
        static string NormalizeTyp(string v) => v.Contains('/', StringComparison.Ordinal) ? v.ToLowerInvariant() : $"application/{v.ToLowerInvariant()}";
        if (typ is null || NormalizeTyp(typ) != NormalizeTyp(Typ))
            throw new IntentVerificationException("WRONG_TYP", "unexpected \"typ\" JWT header value", "typ");
        foreach (var claim in PresenceOrder)
            if (!claims.ContainsKey(claim)) throw new IntentVerificationException("MISSING_CLAIM", $"missing required \"{claim}\" claim", claim);
        if (!(claims["iss"] is JsonValue iss && iss.TryGetValue<string>(out var issS) && issS == _o.Issuer))
            throw new IntentVerificationException("WRONG_ISSUER", "unexpected \"iss\" claim value", "iss");
        var audOk = claims["aud"] switch
        {
            JsonValue a when a.TryGetValue<string>(out var s) => s == _o.DeviceId,
            JsonArray arr => arr.Any(x => x is JsonValue xv && xv.TryGetValue<string>(out var xs) && xs == _o.DeviceId),
            _ => false,
        };
        if (!audOk) throw new IntentVerificationException("WRONG_AUDIENCE", "unexpected \"aud\" claim value", "aud");
        var nowMs = Clock.NowMs(_time);
        var now = Math.Floor(nowMs / 1000);
        var skew = _o.ClockSkewSec;
        foreach (var c in new[] { "iat", "nbf" })
            if (!IsNumber(claims[c])) throw new IntentVerificationException("INVALID_CLAIM", $"\"{c}\" claim must be a number", c);
        if (Number(claims["nbf"]) > now + skew) throw new IntentVerificationException("NOT_YET_VALID", "\"nbf\" claim timestamp check failed", "nbf");
        if (!IsNumber(claims["exp"])) throw new IntentVerificationException("INVALID_CLAIM", "\"exp\" claim must be a number", "exp");
        if (Number(claims["exp"]) <= now - skew) throw new IntentVerificationException("EXPIRED", "\"exp\" claim timestamp check failed", "exp");
        if (Number(claims["iat"]) > now + skew) throw new IntentVerificationException("NOT_YET_VALID", "\"iat\" is in the future.", "iat");
        static string? NonEmpty(JsonNode? n) => n is JsonValue v && v.TryGetValue<string>(out var s) && s.Length > 0 ? s : null;
        var jti = NonEmpty(claims["jti"]) ?? throw new IntentVerificationException("INVALID_CLAIM", "\"jti\" must be a non-empty string.", "jti");
        var tid = NonEmpty(claims["tid"]) ?? throw new IntentVerificationException("INVALID_CLAIM", "\"tid\" must be a non-empty string.", "tid");
        var action = NonEmpty(claims["action"]) ?? throw new IntentVerificationException("INVALID_CLAIM", "\"action\" must be a non-empty string.", "action");
        var seqNode = claims["seq"];
        if (!IsNumber(seqNode) || Number(seqNode) is var seqD && (seqD < 0 || seqD != Math.Floor(seqD) || seqD > 9007199254740991))
            throw new IntentVerificationException("INVALID_CLAIM", "\"seq\" must be a non-negative integer.", "seq");
        if (claims.ContainsKey("params") && claims["params"] is not JsonObject)
            throw new IntentVerificationException("INVALID_CLAIM", "\"params\" must be an object.", "params");
        var exp = Number(claims["exp"]);
        if (!await _o.ReplayCache.RememberAsync(jti, (exp + skew) * 1000, nowMs).ConfigureAwait(false))
            throw new IntentVerificationException("REPLAYED", $"intent {jti} was already accepted.", "jti");
        return new VerifiedIntent(
            jti, tid, _o.DeviceId, _o.Issuer,
            claims["sub"] is JsonValue sub && sub.TryGetValue<string>(out var subS) ? subS : null,
            (long)Number(seqNode), action,
            (JsonObject?)claims["params"]?.DeepClone() ?? [],
            Number(claims["iat"]) * 1000, Number(claims["nbf"]) * 1000, exp * 1000, kid!, alg, claims);
    }
}

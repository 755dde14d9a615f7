using System.Security.Cryptography;
using System.Text.Json.Nodes;
using Microsoft.IdentityModel.Tokens;
using Org.BouncyCastle.Crypto.Parameters;
using Org.BouncyCastle.Crypto.Signers;

namespace AgentGraph.Sdk.Intents;

/// <summary>A public verification key from a JWK: ES256 (P-256), ES384 (P-384) or EdDSA (Ed25519).</summary>
public sealed class IntentKey
{
    private readonly ECParameters? _ec;
    private readonly byte[]? _ed25519;

    private IntentKey(string alg, ECParameters? ec, byte[]? ed25519)
    {
        Alg = alg;
        _ec = ec;
        _ed25519 = ed25519;
    }

    /// <summary>The algorithm this key verifies.</summary>
    public string Alg { get; }

    /// <summary>Whether <paramref name="signature"/> over <paramref name="signingInput"/> verifies.</summary>
    public bool Verify(byte[] signingInput, byte[] signature)
    {
        if (_ec is { } parameters)
        {
            // JWS ECDSA signatures are r || s (IEEE P1363), 64 bytes for ES256, 96 for ES384; Microsoft.IdentityModel's
            // provider checks them (it maps ES256/ES384 to SHA-256/SHA-384).
            if (signature.Length != (Alg == "ES384" ? 96 : 64)) return false;
            using var ecdsa = ECDsa.Create(parameters);
            // Not the shared factory: it caches providers by key thumbprint, and this ECDsa is disposed after the check.
            var factory = new CryptoProviderFactory { CacheSignatureProviders = false };
            using var provider = factory.CreateForVerifying(new ECDsaSecurityKey(ecdsa), Alg == "ES384" ? SecurityAlgorithms.EcdsaSha384 : SecurityAlgorithms.EcdsaSha256);
            return provider.Verify(signingInput, signature);
        }
        // Ed25519 (EdDSA): Microsoft.IdentityModel has no provider for it; BouncyCastle verifies.
        var verifier = new Ed25519Signer();
        verifier.Init(false, new Ed25519PublicKeyParameters(_ed25519!, 0));
        verifier.BlockUpdate(signingInput, 0, signingInput.Length);
        return verifier.VerifySignature(signature);
    }

    /// <summary>Whether a JWK can verify <paramref name="alg"/> (jose's key selection: kty/crv, use, alg).</summary>
    public static bool Suits(JsonObject jwk, string alg)
    {
        ArgumentNullException.ThrowIfNull(jwk);
        var kty = (string?)jwk["kty"];
        var crv = (string?)jwk["crv"];
        if (jwk["alg"] is JsonValue a && (string?)a != alg) return false;
        if (jwk["use"] is JsonValue u && (string?)u != "sig") return false;
        return alg switch
        {
            "ES256" => kty == "EC" && crv == "P-256",
            "ES384" => kty == "EC" && crv == "P-384",
            "EdDSA" => kty == "OKP" && crv is "Ed25519",
            _ => false,
        };
    }

    /// <summary>Imports a public JWK for <paramref name="alg"/>.</summary>
    public static IntentKey FromJwk(JsonObject jwk, string alg)
    {
        ArgumentNullException.ThrowIfNull(jwk);
        if (alg is "ES256" or "ES384")
        {
            return new IntentKey(alg, new ECParameters
            {
                Curve = alg == "ES256" ? ECCurve.NamedCurves.nistP256 : ECCurve.NamedCurves.nistP384,
                Q = new ECPoint { X = Base64Url.Decode((string)jwk["x"]!), Y = Base64Url.Decode((string)jwk["y"]!) },
            }, null);
        }
        return new IntentKey(alg, null, Base64Url.Decode((string)jwk["x"]!));
    }
}

/// <summary>Strict base64url (RFC 4648 §5, no padding).</summary>
public static class Base64Url
{
    /// <summary>Decodes; throws FormatException on anything else.</summary>
    public static byte[] Decode(string text)
    {
        ArgumentNullException.ThrowIfNull(text);
        if (text.Any(c => !(char.IsAsciiLetterOrDigit(c) || c == '-' || c == '_')) || text.Length % 4 == 1)
            throw new FormatException("not base64url");
        var b64 = text.Replace('-', '+').Replace('_', '/');
        return Convert.FromBase64String(b64.PadRight(b64.Length + (4 - b64.Length % 4) % 4, '='));
    }

    /// <summary>Encodes without padding.</summary>
    public static string Encode(byte[] bytes) => Convert.ToBase64String(bytes).TrimEnd('=').Replace('+', '-').Replace('/', '_');
}

/// <summary>
/// The keys intents are verified with: a JWKS given as data, or fetched from a URL and cached. An unknown kid
/// triggers one refetch (not within the cooldown of the last fetch); a cached set older than MaxAge is refetched.
/// </summary>
public sealed class IntentKeySet
{
    private JsonArray? _keys;
    private double? _fetchedAt;
    private readonly Uri? _url;
    private readonly HttpClient? _http;
    private readonly TimeProvider _time;
    private readonly double _cooldownMs;
    private readonly double _maxAgeMs;

    /// <summary>Creates a key set from a JWKS (<paramref name="jwks"/>) or a URL (<paramref name="jwksUrl"/>).</summary>
    public IntentKeySet(JsonObject? jwks, Uri? jwksUrl, HttpMessageHandler? handler, TimeProvider? time, double cooldownMs = 30_000, double maxAgeMs = 600_000)
    {
        if ((jwks is null) == (jwksUrl is null)) throw new ArgumentException("IntentKeySet: give exactly one of jwks (a key set) or jwksUrl.");
        if (jwks is not null)
        {
            if (jwks["keys"] is not JsonArray keys || keys.Any(k => k is not JsonObject))
                throw new ArgumentException("IntentKeySet: jwks must be { keys: [JWK, ...] }.", nameof(jwks));
            if (keys.Any(k => k!.AsObject().ContainsKey("d")))
                throw new ArgumentException("IntentKeySet: jwks holds a private key (a \"d\" member); give the public keys only.", nameof(jwks));
            _keys = keys;
        }
        _url = jwksUrl;
        if (jwksUrl is not null) _http = new HttpClient(handler ?? new SocketsHttpHandler(), disposeHandler: handler is null);
        _time = time ?? TimeProvider.System;
        _cooldownMs = cooldownMs;
        _maxAgeMs = maxAgeMs;
    }

    /// <summary>Fetches made so far.</summary>
    public int Fetches { get; private set; }

    private double Age() => _fetchedAt is { } at ? Clock.NowMs(_time) - at : double.PositiveInfinity;

    private IntentKey? Match(string kid, string alg)
    {
        var candidates = (_keys ?? []).OfType<JsonObject>().Where(k => (string?)k["kid"] == kid && IntentKey.Suits(k, alg)).ToList();
        if (candidates.Count > 1) throw new IntentVerificationException("JWKS_UNAVAILABLE", "the key set has several keys for this kid and alg.");
        return candidates.Count == 1 ? IntentKey.FromJwk(candidates[0], alg) : null;
    }

    /// <summary>The key for a header's kid and alg.</summary>
    public async Task<IntentKey> KeyForAsync(string? kid, string alg, CancellationToken cancellationToken = default)
    {
        if (string.IsNullOrEmpty(kid)) throw new IntentVerificationException("MALFORMED", "the header has no kid; intents name their signing key.");
        var fetchedNow = false;
        if (_url is not null && (_keys is null || Age() > _maxAgeMs))
        {
            await RefreshAsync(cancellationToken).ConfigureAwait(false);
            fetchedNow = true;
        }
        if (Match(kid, alg) is { } key) return key;
        if (_url is null || fetchedNow || Age() < _cooldownMs) throw UnknownKid(kid, alg);
        await RefreshAsync(cancellationToken).ConfigureAwait(false);
        return Match(kid, alg) ?? throw UnknownKid(kid, alg);
    }

    private IntentVerificationException UnknownKid(string kid, string alg) =>
        new("UNKNOWN_KID", $"no key \"{kid}\" for {alg} in the {(_url is null ? "given key set" : $"JWKS at {_url}")}.");

    private async Task RefreshAsync(CancellationToken cancellationToken)
    {
        Fetches++;
        _fetchedAt = Clock.NowMs(_time);
        JsonNode? body;
        try
        {
            using var request = new HttpRequestMessage(HttpMethod.Get, _url);
            request.Headers.TryAddWithoutValidation("accept", "application/json");
            using var response = await _http!.SendAsync(request, cancellationToken).ConfigureAwait(false);
            if (!response.IsSuccessStatusCode) throw new HttpRequestException($"HTTP {(int)response.StatusCode}");
            body = JsonNode.Parse(await response.Content.ReadAsStringAsync(cancellationToken).ConfigureAwait(false));
        }
        catch (Exception error) when (error is HttpRequestException or System.Text.Json.JsonException or IOException)
        {
            throw new IntentVerificationException("JWKS_UNAVAILABLE", $"fetching {_url} failed ({error.Message}).", cause: error);
        }
        if (body?["keys"] is not JsonArray keys || keys.Any(k => k is not JsonObject))
            throw new IntentVerificationException("JWKS_UNAVAILABLE", $"{_url} did not return a JWKS ({{ \"keys\": [...] }}).");
        _keys = keys;
    }
}

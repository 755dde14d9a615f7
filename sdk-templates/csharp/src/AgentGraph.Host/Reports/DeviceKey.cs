using System.Security.Cryptography;
using System.Text;
using System.Text.Json;
using System.Text.Json.Nodes;
using AgentGraph.Sdk.Intents;

namespace AgentGraph.Host.Reports;

/// <summary>The device's private key as stored (a private EC P-256 JWK's members). Never logged.</summary>
/// <param name="X">base64url x.</param>
/// <param name="Y">base64url y.</param>
/// <param name="D">base64url private scalar.</param>
public sealed record DeviceKeyMaterial(string X, string Y, string D);

/// <summary>
/// The device's ECDSA P-256 key pair: made once at first enrolment, kept in the token store, its public JWK sent as
/// <c>device_jwk</c> (identity stores it and its RFC 7638 thumbprint), its private half signs intent reports (ES256).
/// </summary>
public sealed class DeviceKey : IDisposable
{
    private readonly ECDsa _key;

    private DeviceKey(ECDsa key) => _key = key;

    /// <summary>A new random key pair.</summary>
    public static DeviceKey Generate() => new(ECDsa.Create(ECCurve.NamedCurves.nistP256));

    /// <summary>The key from its stored form.</summary>
    public static DeviceKey FromMaterial(DeviceKeyMaterial material)
    {
        ArgumentNullException.ThrowIfNull(material);
        var p = new ECParameters
        {
            Curve = ECCurve.NamedCurves.nistP256,
            Q = new ECPoint { X = Base64Url.Decode(material.X), Y = Base64Url.Decode(material.Y) },
            D = Base64Url.Decode(material.D),
        };
        p.Validate();
        return new DeviceKey(ECDsa.Create(p));
    }

    /// <summary>The stored form (private).</summary>
    public DeviceKeyMaterial Export()
    {
        var p = _key.ExportParameters(includePrivateParameters: true);
        return new DeviceKeyMaterial(Base64Url.Encode(p.Q.X!), Base64Url.Encode(p.Q.Y!), Base64Url.Encode(p.D!));
    }

    /// <summary>The public JWK with exactly the members identity accepts: <c>{kty, crv, x, y}</c>.</summary>
    public JsonObject PublicJwk()
    {
        var p = _key.ExportParameters(includePrivateParameters: false);
        return new JsonObject
        {
            ["kty"] = "EC",
            ["crv"] = "P-256",
            ["x"] = Base64Url.Encode(p.Q.X!),
            ["y"] = Base64Url.Encode(p.Q.Y!),
        };
    }

    /// <summary>The public JWK as JSON text (the <c>device_jwk</c> parameter).</summary>
    public string PublicJwkJson() => PublicJwk().ToJsonString(Json.Compact);

    /// <summary>RFC 7638 SHA-256 thumbprint of the public key (what the approving user sees).</summary>
    public string Thumbprint()
    {
        var jwk = PublicJwk();
        // Required members in lexicographic order, no whitespace.
        var canonical = JsonSerializer.Serialize(new SortedDictionary<string, string>(StringComparer.Ordinal)
        {
            ["crv"] = (string)jwk["crv"]!, ["kty"] = (string)jwk["kty"]!, ["x"] = (string)jwk["x"]!, ["y"] = (string)jwk["y"]!,
        });
        return Base64Url.Encode(SHA256.HashData(Encoding.UTF8.GetBytes(canonical)));
    }

    /// <summary>An ES256 signature (IEEE P1363: r ‖ s, 64 bytes) over <paramref name="data"/>.</summary>
    public byte[] SignEs256(ReadOnlySpan<byte> data) =>
        _key.SignData(data, HashAlgorithmName.SHA256, DSASignatureFormat.IeeeP1363FixedFieldConcatenation);

    /// <summary>Verifies an ES256 signature with the public half.</summary>
    public bool VerifyEs256(ReadOnlySpan<byte> data, ReadOnlySpan<byte> signature) =>
        _key.VerifyData(data, signature, HashAlgorithmName.SHA256, DSASignatureFormat.IeeeP1363FixedFieldConcatenation);

    /// <inheritdoc />
    public void Dispose() => _key.Dispose();
}

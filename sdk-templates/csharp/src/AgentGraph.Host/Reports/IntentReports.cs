using System.Text;
using System.Text.Json.Nodes;
using AgentGraph.Sdk;
using AgentGraph.Sdk.Intents;

namespace AgentGraph.Host.Reports;

/// <summary>
/// Signs intent state reports (coordination README, "Device reports"): a compact JWS with header
/// <c>{alg: ES256, typ: intent-report+jwt}</c> and claims <c>iss</c> = device id, <c>aud</c> = the intent's issuer,
/// <c>jti</c> (unique), <c>iat</c> (seconds), <c>intent</c>, <c>state</c>, <c>reason</c> (only when given).
/// </summary>
public sealed class IntentReportSigner
{
    /// <summary>The header typ of reports.</summary>
    public const string Typ = "intent-report+jwt";
    private readonly DeviceKey _key;
    private readonly string _deviceId;
    private readonly TimeProvider _time;
    private readonly Func<string> _newJti;

    /// <summary>Creates the signer for one enrolled device.</summary>
    public IntentReportSigner(DeviceKey key, string deviceId, TimeProvider? time = null, Func<string>? newJti = null)
    {
        _key = key ?? throw new ArgumentNullException(nameof(key));
        if (string.IsNullOrEmpty(deviceId)) throw new ArgumentException("IntentReportSigner: the device id (the access token's did) is required.", nameof(deviceId));
        _deviceId = deviceId;
        _time = time ?? TimeProvider.System;
        _newJti = newJti ?? (() => Guid.NewGuid().ToString());
    }

    /// <summary>The signed report for one state change.</summary>
    /// <param name="intentId">The intent (its <c>jti</c>/id).</param>
    /// <param name="intentIssuer">The intent's <c>iss</c> (the report's audience).</param>
    /// <param name="state">The new state, e.g. <c>LOCALLY_APPROVED</c>, <c>EXECUTING</c>, <c>COMPLETED</c>, <c>FAILED</c>.</param>
    /// <param name="reason">Why (failures, refusals); omitted when null.</param>
    public string Sign(string intentId, string intentIssuer, string state, string? reason = null)
    {
        ArgumentException.ThrowIfNullOrEmpty(intentId);
        ArgumentException.ThrowIfNullOrEmpty(intentIssuer);
        ArgumentException.ThrowIfNullOrEmpty(state);
        var header = new JsonObject { ["alg"] = "ES256", ["typ"] = Typ };
        var claims = new JsonObject
        {
            ["iss"] = _deviceId,
            ["aud"] = intentIssuer,
            ["jti"] = _newJti(),
            ["iat"] = _time.GetUtcNow().ToUnixTimeSeconds(),
            ["intent"] = intentId,
            ["state"] = state,
        };
        if (reason is not null) claims["reason"] = reason;
        var signingInput = Part(header) + "." + Part(claims);
        return signingInput + "." + Base64Url.Encode(_key.SignEs256(Encoding.ASCII.GetBytes(signingInput)));
    }

    private static string Part(JsonObject o) => Base64Url.Encode(Encoding.UTF8.GetBytes(o.ToJsonString(Json.Compact)));
}

/// <summary>
/// Sends signed reports with the generated SDK's <c>ReportIntentStateAsync</c> (the device's own token). The report is
/// a JWS, which the SDK's content detectors rightly take for a credential (<c>jwt</c>, <c>high-entropy</c>: SECRET)
/// and refuse. It is not one (not a bearer token: single-use jti, fresh iat, bound to one intent and signed by this
/// host from an id, an issuer, a state and a reason), and base64url text hides its content from detectors anyway: so
/// the reporter sends through a client of its own with no content detectors (the field's data-class rule still
/// applies), and scans the one free-text part, <c>reason</c>, with the SDK's detectors before signing it.
/// </summary>
public sealed class IntentReporter : IDisposable
{
    private readonly AgentGraphSdk _sdk;
    private readonly IntentReportSigner _signer;
    private readonly PrivacyPolicy _policy;
    private readonly IReadOnlyList<Detector> _detectors;

    /// <summary>Creates the reporter with a client made from <paramref name="options"/> (without content detectors, as above).</summary>
    public IntentReporter(AgentGraphClientOptions options, IntentReportSigner signer)
    {
        ArgumentNullException.ThrowIfNull(options);
        _signer = signer ?? throw new ArgumentNullException(nameof(signer));
        _policy = options.PrivacyPolicy ?? PrivacyPolicy.Default;
        _detectors = options.Detectors ?? Detectors.All;
        _sdk = new AgentGraphSdk(options with { Detectors = [] });
    }

    /// <summary>Signs and sends one state change; the server's answer (the intent's new state) or a typed exception.</summary>
    public Task<Result<ReportIntentStateData>> ReportAsync(
        string intentId, string intentIssuer, string state, string? reason = null, CancellationToken cancellationToken = default)
    {
        if (reason is not null)
        {
            var refused = Detectors.Detect(reason, _detectors).Where(d => !_policy.Allows(d.DataClass)).Select(d => d.Id).ToList();
            if (refused.Count > 0)
                throw new ArgumentException(
                    $"IntentReporter: the reason looks like it holds {string.Join(", ", refused)}; nothing was sent. Describe the failure without the data.",
                    nameof(reason));
        }
        return _sdk.ReportIntentStateAsync(_signer.Sign(intentId, intentIssuer, state, reason), cancellationToken: cancellationToken);
    }

    /// <inheritdoc />
    public void Dispose() => _sdk.Dispose();
}

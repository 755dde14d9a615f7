// The desktop host end to end, one mode per run; every event is one JSON line on stdout (never a token).
//   enrol  <issuer> <storeDir>                                  device flow; stores key, device id and tokens
//   broker <issuer> <storeDir> <socketPath> <allowedExe>...     serves sidecar tokens until stdin closes
//   ask    <socketPath> <requestJson>                           a broker client (this process's exe is dotnet)
//   report <issuer> <gatewayGraphqlUrl> <storeDir> enable       enables remote actions for the device
//   report <issuer> <gatewayGraphqlUrl> <storeDir> <intentId> <intentIssuer> <state>...   signed reports
//   intents <issuer> <gatewayGraphqlUrl> <storeDir> <intentIssuer> <afterSeq> <count>
//          receives <count> intents over the device stream, verifies each (JWKS of <intentIssuer>, aud = device id,
//          replay cache in <storeDir>/replay.db), walks a verified one DELIVERED → … → COMPLETED with signed reports,
//          then checks that its JWS again, a tampered copy and a copy signed by another key are refused locally
using System.Net.Sockets;
using System.Security.Cryptography;
using System.Runtime.Versioning;
using System.Text;
using System.Text.Json.Nodes;
using AgentGraph.Host.Broker;
using AgentGraph.Host.OAuth;
using AgentGraph.Host.Reports;
using AgentGraph.Host.Tokens;
using AgentGraph.Sdk;
using AgentGraph.Sdk.Intents;
using AgentGraph.Sdk.Subscriptions;

[assembly: SupportedOSPlatform("linux")]

static void Emit(JsonObject line)
{
    Console.Out.WriteLine(line.ToJsonString());
    Console.Out.Flush();
}

static async Task<(HostTokenManager Manager, HostCredentials Credentials)> LoadAsync(string issuer, string storeDir, HttpClient http)
{
    var store = new FileTokenStore(Path.Combine(storeDir, TokenStores.FileName));
    var credentials = await store.LoadAsync() ?? throw new InvalidOperationException($"no credentials in {store.Path}; enrol first");
    return (new HostTokenManager(OAuthEndpoints.ForIssuer(new Uri(issuer)), http, store, credentials), credentials);
}

using var http = new HttpClient();
switch (args[0])
{
    case "enrol":
    {
        var store = new FileTokenStore(Path.Combine(args[2], TokenStores.FileName));
        // The key is made once and stored before the flow starts, so a retried enrolment keeps the same key.
        var stored = await store.LoadAsync();
        if (stored is null)
        {
            using var fresh = DeviceKey.Generate();
            stored = new HostCredentials(fresh.Export(), null, null);
            await store.SaveAsync(stored);
        }
        using var key = DeviceKey.FromMaterial(stored.DeviceKey);
        var flow = new DeviceFlowClient(OAuthEndpoints.ForIssuer(new Uri(args[1])), http);
        var tokens = await flow.EnrolAsync(
            new DeviceDescription("C# host e2e", DeviceDescription.CurrentPlatform, key.PublicJwkJson()),
            (a, _) =>
            {
                Emit(new JsonObject
                {
                    ["userCode"] = a.UserCode,
                    ["verificationUriComplete"] = a.VerificationUriComplete?.AbsoluteUri,
                    ["interval"] = a.Interval.TotalSeconds,
                    ["thumbprint"] = key.Thumbprint(),
                });
                return ValueTask.CompletedTask;
            },
            answer => Emit(new JsonObject { ["poll"] = answer }));
        var deviceId = (string)TokenSet.ReadClaims(tokens.AccessToken)["did"]!;
        await store.SaveAsync(stored with { DeviceId = deviceId, Tokens = tokens });
        Emit(new JsonObject { ["enrolled"] = deviceId, ["hasRefreshToken"] = tokens.RefreshToken is not null });
        return 0;
    }
    case "broker":
    {
        var (manager, _) = await LoadAsync(args[1], args[2], http);
        var options = new TokenBrokerOptions
        {
            Policy = new BrokerPolicy(args[4..]),
            Exchanger = manager,
            OnDecision = (peer, d) => Emit(new JsonObject
            {
                ["decision"] = new JsonObject
                {
                    ["pid"] = peer?.Pid, ["uid"] = peer?.Uid, ["allowed"] = d.Allowed, ["executable"] = d.Executable, ["reason"] = d.Reason,
                },
            }),
        };
        await using var broker = UnixSocketTokenBroker.Start(args[3], options);
        Emit(new JsonObject { ["listening"] = broker.SocketPath, ["uid"] = options.Policy.Uid });
        while (await Console.In.ReadLineAsync() is not null)
        {
            // Runs until stdin closes.
        }
        return 0;
    }
    case "ask":
    {
        using var socket = new Socket(AddressFamily.Unix, SocketType.Stream, ProtocolType.Unspecified);
        await socket.ConnectAsync(new UnixDomainSocketEndPoint(args[1]));
        await using var stream = new NetworkStream(socket);
        await stream.WriteAsync(Encoding.UTF8.GetBytes(args[2] + "\n"));
        using var reader = new StreamReader(stream);
        Emit(new JsonObject { ["answer"] = JsonNode.Parse(await reader.ReadToEndAsync()) });
        return 0;
    }
    case "report":
    {
        var (manager, credentials) = await LoadAsync(args[1], args[3], http);
        var options = new AgentGraphClientOptions { BaseUrl = new Uri(args[2]), TokenProvider = manager };
        if (args[4] == "enable")
        {
            using var sdk = new AgentGraphSdk(options);
            await sdk.SetRemoteActionsEnabledAsync(true);
            Emit(new JsonObject { ["remoteActions"] = true });
            return 0;
        }
        using var key = DeviceKey.FromMaterial(credentials.DeviceKey);
        using var reporter = new IntentReporter(options, new IntentReportSigner(key, credentials.DeviceId!));
        foreach (var state in args[6..])
        {
            var r = await reporter.ReportAsync(args[4], args[5], state);
            Emit(new JsonObject { ["reported"] = state, ["state"] = r.Data.ReportIntentState.Intent.State.ToString() });
        }
        return 0;
    }
    case "intents":
    {
        var (manager, credentials) = await LoadAsync(args[1], args[3], http);
        var intentIssuer = args[4];
        var options = new AgentGraphClientOptions { BaseUrl = new Uri(args[2]), TokenProvider = manager };
        using var sdk = new AgentGraphSdk(options);
        await using var replay = new SqliteReplayCache(Path.Combine(args[3], "replay.db"));
        var verifier = new IntentVerifier(new IntentVerifierOptions
        {
            Issuer = intentIssuer,
            DeviceId = credentials.DeviceId!,
            JwksUrl = new Uri($"{intentIssuer}/.well-known/intent-jwks.json"),
            ReplayCache = replay,
        });
        using var key = DeviceKey.FromMaterial(credentials.DeviceKey);
        using var reporter = new IntentReporter(options, new IntentReportSigner(key, credentials.DeviceId!));
        var stream = new SubscriptionClient(sdk.Client, manager);
        var subscription = new SubscriptionOptions
        {
            CursorVariable = "afterSeq",
            After = long.Parse(args[5], System.Globalization.CultureInfo.InvariantCulture),
            Select = data => data["deviceIntents"],
            SeqOf = ev => (long)ev["seq"]!,
            Verify = (ev, ct) => verifier.VerifyAsync((string)ev["jws"]!, ct),
        };
        var left = int.Parse(args[6], System.Globalization.CultureInfo.InvariantCulture);
        using var done = new CancellationTokenSource(TimeSpan.FromSeconds(30));
        await foreach (var item in stream.SubscribeAsync(AgentGraphOperations.DeviceIntentsSubscription, null, subscription, done.Token))
        {
            var jws = (string)item.Event["jws"]!;
            var intentId = (string)item.Event["id"]!;
            Emit(new JsonObject
            {
                ["received"] = item.Seq,
                ["intent"] = intentId,
                ["action"] = (string?)item.Event["action"],
                ["verified"] = item.Type == "event",
                ["refused"] = item.Error is IntentVerificationException refusal ? refusal.Reason : item.Error?.Code,
            });
            if (item.Type == "event")
            {
                foreach (var state in new[] { "DELIVERED", "LOCALLY_APPROVED", "EXECUTING", "COMPLETED" })
                {
                    var r = await reporter.ReportAsync(intentId, intentIssuer, state);
                    Emit(new JsonObject { ["reported"] = state, ["state"] = r.Data.ReportIntentState.Intent.State.ToString() });
                }
                // The same JWS again, a tampered copy (claims changed, signature kept) and a copy signed by another
                // key under the same kid (claims changed, fresh jti): each is refused before anything runs.
                var parts = jws.Split('.');
                var claims = JsonNode.Parse(Encoding.UTF8.GetString(Base64Url.Decode(parts[1])))!.AsObject();
                claims["action"] = "run-shell";
                var tamperedClaims = Base64Url.Encode(Encoding.UTF8.GetBytes(claims.ToJsonString()));
                claims["jti"] = Guid.NewGuid().ToString();
                var otherClaims = Base64Url.Encode(Encoding.UTF8.GetBytes(claims.ToJsonString()));
                using var stranger = ECDsa.Create(ECCurve.NamedCurves.nistP256);
                var otherSignature = Base64Url.Encode(stranger.SignData(Encoding.ASCII.GetBytes($"{parts[0]}.{otherClaims}"), HashAlgorithmName.SHA256));
                var attempts = new (string Name, string Token)[]
                {
                    ("replayed", jws),
                    ("tampered", $"{parts[0]}.{tamperedClaims}.{parts[2]}"),
                    ("otherKey", $"{parts[0]}.{otherClaims}.{otherSignature}"),
                };
                foreach (var (name, token) in attempts)
                {
                    string? reason = null;
                    try
                    {
                        await verifier.VerifyAsync(token);
                    }
                    catch (IntentVerificationException refused)
                    {
                        reason = refused.Reason;
                    }
                    Emit(new JsonObject { ["attempt"] = name, ["refused"] = reason });
                }
            }
            if (--left == 0) break;
        }
        return 0;
    }
    default:
        Console.Error.WriteLine($"unknown mode {args[0]}: enrol, broker, ask, report or intents");
        return 2;
}

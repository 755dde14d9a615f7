using System.Net.Sockets;
using System.Text;
using System.Text.Json.Nodes;
using AgentGraph.Host.Broker;
using AgentGraph.Host.OAuth;
using AgentGraph.Host.Tokens;

namespace AgentGraph.Host.Tests;

public class BrokerTests
{
    private sealed class MapLookup(Dictionary<int, string> map) : IProcessExecutableLookup
    {
        public string? ExecutableOf(int pid) => map.GetValueOrDefault(pid);
    }

    private sealed class FakeExchanger : ITokenExchanger
    {
        public List<(string Audience, string Scope)> Calls { get; } = [];

        public Task<ExchangedToken> ExchangeAsync(string audience, string scope, CancellationToken cancellationToken = default)
        {
            lock (Calls) Calls.Add((audience, scope));
            if (audience != "agentgraph") throw new OAuthException("invalid_target", "audience must be agentgraph", 400);
            return Task.FromResult(new ExchangedToken("sidecar-token", 300, scope));
        }
    }

    private static readonly string Self = new ProcFsExecutableLookup().ExecutableOf(Environment.ProcessId)!;

    [Fact]
    public void The_policy_serves_only_the_same_user_running_an_allowed_executable()
    {
        var policy = new BrokerPolicy(["/usr/bin/python3.12"], uid: 1000,
            lookup: new MapLookup(new() { [10] = "/usr/bin/python3.12", [11] = "/usr/bin/curl", [12] = "/usr/bin/python3.12 (deleted)" }));
        Assert.True(policy.Decide(new PeerCredentials(10, 1000, 1000)).Allowed);
        Assert.Equal(new BrokerDecision(false, "the peer runs as uid 1001, not as this user (1000)", null), policy.Decide(new PeerCredentials(10, 1001, 1001)));
        Assert.Equal(new BrokerDecision(false, "/usr/bin/curl is not an allowed executable", "/usr/bin/curl"), policy.Decide(new PeerCredentials(11, 1000, 1000)));
        Assert.False(policy.Decide(new PeerCredentials(12, 1000, 1000)).Allowed);
        Assert.Equal("the executable of pid 13 could not be read", policy.Decide(new PeerCredentials(13, 1000, 1000)).Reason);
        Assert.Equal("the peer's credentials could not be read", policy.Decide(null).Reason);
        Assert.Throws<ArgumentException>(() => new BrokerPolicy([], uid: 1000));
    }

    [Fact]
    public void The_named_pipe_variant_decides_by_client_pid_and_executable_ignoring_case()
    {
        var policy = new BrokerPolicy([@"C:\Program Files\AgentGraph\sidecar\python.exe"], uid: 0, ignoreCase: true,
            lookup: new MapLookup(new() { [4000] = @"c:\program files\agentgraph\SIDECAR\python.exe", [4001] = @"C:\Windows\System32\cmd.exe" }));
        Assert.True(NamedPipeClient.Decide(policy, 4000).Allowed);
        Assert.Equal(@"C:\Windows\System32\cmd.exe is not an allowed executable", NamedPipeClient.Decide(policy, 4001).Reason);
        Assert.False(NamedPipeClient.Decide(policy, 4002).Allowed);
        Assert.Null(NamedPipeClient.PeerOf(null));
        Assert.Equal(new PeerCredentials(4000, null, null), NamedPipeClient.PeerOf(4000));
        Assert.False(NamedPipeClient.Decide(policy, null).Allowed);
    }

    [Theory]
    [InlineData("not json", "invalid_request")]
    [InlineData("[]", "invalid_request")]
    [InlineData("{\"refresh\":true}", "invalid_request")]
    [InlineData("{\"scope\":7}", "invalid_request")]
    [InlineData("{\"audience\":\"elsewhere\"}", "invalid_target")]
    public async Task The_protocol_answers_bad_requests_with_an_error(string line, string error)
    {
        var options = new TokenBrokerOptions { Policy = new BrokerPolicy([Self]), Exchanger = new FakeExchanger() };
        var answer = JsonNode.Parse(await BrokerProtocol.AnswerAsync(options, new BrokerDecision(true, "ok", Self), line, CancellationToken.None))!;
        Assert.Equal(error, (string)answer["error"]!);
    }

    private static async Task<(JsonObject Answer, string Raw)> AskAsync(string socketPath, string line)
    {
        using var socket = new Socket(AddressFamily.Unix, SocketType.Stream, ProtocolType.Unspecified);
        await socket.ConnectAsync(new UnixDomainSocketEndPoint(socketPath));
        await using var stream = new NetworkStream(socket);
        await stream.WriteAsync(Encoding.UTF8.GetBytes(line + "\n"));
        using var reader = new StreamReader(stream);
        var raw = await reader.ReadToEndAsync();
        return (JsonNode.Parse(raw)!.AsObject(), raw);
    }

    [Fact]
    public async Task The_unix_socket_serves_this_process_and_reads_its_credentials_with_SO_PEERCRED()
    {
        using var dir = new TempDir();
        var exchanger = new FakeExchanger();
        var decisions = new List<(PeerCredentials? Peer, BrokerDecision Decision)>();
        var options = new TokenBrokerOptions
        {
            Policy = new BrokerPolicy([Self]),
            Exchanger = exchanger,
            OnDecision = (p, d) => { lock (decisions) decisions.Add((p, d)); },
        };
        var path = Path.Combine(dir.Path, "run", "broker.sock");
        await using (var broker = UnixSocketTokenBroker.Start(path, options))
        {
            Assert.Equal(UnixFileMode.UserRead | UnixFileMode.UserWrite, File.GetUnixFileMode(path));
            Assert.Equal(UnixFileMode.UserRead | UnixFileMode.UserWrite | UnixFileMode.UserExecute, File.GetUnixFileMode(Path.GetDirectoryName(path)!));

            var (answer, raw) = await AskAsync(path, "{\"scope\":\"api:read\"}");
            Assert.Equal("""{"access_token":"sidecar-token","expires_in":300}""", raw.TrimEnd('\n'));
            Assert.Equal(["access_token", "expires_in"], answer.Select(p => p.Key));
            Assert.Equal([("agentgraph", "api:read")], exchanger.Calls);

            var (peer, decision) = Assert.Single(decisions);
            Assert.Equal(Environment.ProcessId, peer!.Pid);
            Assert.Equal(options.Policy.Uid, peer.Uid);
            Assert.True(decision.Allowed);
            Assert.Equal(Self, decision.Executable);
        }
        Assert.False(File.Exists(path));
    }

    [Fact]
    public async Task The_unix_socket_refuses_an_executable_that_is_not_allowed_without_exchanging()
    {
        using var dir = new TempDir();
        var exchanger = new FakeExchanger();
        var options = new TokenBrokerOptions { Policy = new BrokerPolicy(["/usr/bin/python3-sidecar"]), Exchanger = exchanger };
        var path = Path.Combine(dir.Path, "broker.sock");
        await using var broker = UnixSocketTokenBroker.Start(path, options);
        var (answer, _) = await AskAsync(path, "{}");
        Assert.Equal("access_denied", (string)answer["error"]!);
        Assert.Equal($"refused: {Self} is not an allowed executable", (string)answer["error_description"]!);
        Assert.Empty(exchanger.Calls);
    }

    [Fact]
    public async Task The_unix_socket_refuses_another_uid()
    {
        using var dir = new TempDir();
        var exchanger = new FakeExchanger();
        var policy = new BrokerPolicy([Self], uid: new BrokerPolicy([Self]).Uid + 1);
        var path = Path.Combine(dir.Path, "broker.sock");
        await using var broker = UnixSocketTokenBroker.Start(path, new TokenBrokerOptions { Policy = policy, Exchanger = exchanger });
        var (answer, _) = await AskAsync(path, "{}");
        Assert.Equal("access_denied", (string)answer["error"]!);
        Assert.Contains("not as this user", (string)answer["error_description"]!);
        Assert.Empty(exchanger.Calls);
    }
}

using System.Net;
using System.Text;
using System.Text.Json.Nodes;
using Microsoft.Extensions.Time.Testing;

namespace AgentGraph.Host.Tests;

/// <summary>A FakeTimeProvider that signals each timer it creates, so a test advances time only once a wait is armed.</summary>
internal sealed class SignallingTime : FakeTimeProvider
{
    public SignallingTime() : base(new DateTimeOffset(2026, 1, 1, 0, 0, 0, TimeSpan.Zero)) { }

    public SemaphoreSlim TimerCreated { get; } = new(0);

    public override ITimer CreateTimer(TimerCallback callback, object? state, TimeSpan dueTime, TimeSpan period)
    {
        var timer = base.CreateTimer(callback, state, dueTime, period);
        TimerCreated.Release();
        return timer;
    }

    /// <summary>Waits (really, bounded) until the code under test armed a timer, then advances.</summary>
    public async Task AdvanceWhenArmedAsync(TimeSpan by)
    {
        Assert.True(await TimerCreated.WaitAsync(TimeSpan.FromSeconds(10)), "the code under test never started waiting");
        Advance(by);
    }
}

/// <summary>An OAuth server scripted answer by answer; records each request's form and the fake time it came at.</summary>
internal sealed class ScriptedOAuth : HttpMessageHandler
{
    private readonly Queue<(HttpStatusCode Status, JsonObject Body)> _answers = new();
    private readonly TimeProvider _time;

    public ScriptedOAuth(TimeProvider time) => _time = time;

    public List<(string Path, Dictionary<string, string> Form, DateTimeOffset At)> Requests { get; } = [];

    public ScriptedOAuth Then(HttpStatusCode status, JsonObject body)
    {
        _answers.Enqueue((status, body));
        return this;
    }

    public ScriptedOAuth ThenError(string error) => Then(HttpStatusCode.BadRequest, new JsonObject { ["error"] = error });

    public ScriptedOAuth ThenTokens(int n, int expiresIn = 900) => Then(HttpStatusCode.OK, new JsonObject
    {
        ["access_token"] = $"at-{n}", ["token_type"] = "Bearer", ["expires_in"] = expiresIn, ["refresh_token"] = $"rt-{n}",
        ["scope"] = "api:read api:write",
    });

    protected override async Task<HttpResponseMessage> SendAsync(HttpRequestMessage request, CancellationToken cancellationToken)
    {
        var text = await request.Content!.ReadAsStringAsync(cancellationToken);
        var form = text.Split('&', StringSplitOptions.RemoveEmptyEntries)
            .Select(p => p.Split('=', 2))
            .ToDictionary(p => WebUtility.UrlDecode(p[0]), p => WebUtility.UrlDecode(p[1]));
        lock (Requests) Requests.Add((request.RequestUri!.AbsolutePath, form, _time.GetUtcNow()));
        if (!_answers.TryDequeue(out var a)) throw new InvalidOperationException("no scripted answer left");
        return new HttpResponseMessage(a.Status) { Content = new StringContent(a.Body.ToJsonString(), Encoding.UTF8, "application/json") };
    }
}

/// <summary>A temporary directory removed at dispose.</summary>
internal sealed class TempDir : IDisposable
{
    public string Path { get; } = Directory.CreateTempSubdirectory("agentgraph-host-").FullName;

    public void Dispose() => Directory.Delete(Path, recursive: true);
}

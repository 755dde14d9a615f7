using AgentGraph.Host.OAuth;
using AgentGraph.Host.Reports;
using AgentGraph.Host.Tokens;

namespace AgentGraph.Host.Tests;

public class TokenStoreTests
{
    private static HostCredentials Sample(string refresh)
    {
        using var key = DeviceKey.Generate();
        return new HostCredentials(key.Export(), "device-1", new TokenSet("at", refresh, DateTimeOffset.UnixEpoch.AddDays(1), "api:read"));
    }

    [Fact]
    public async Task Saves_a_0600_file_in_a_0700_directory_atomically_and_loads_it_back()
    {
        using var dir = new TempDir();
        var store = new FileTokenStore(Path.Combine(dir.Path, "data", "agentgraph", "credentials.json"));
        Assert.Null(await store.LoadAsync());
        var first = Sample("rt-1");
        await store.SaveAsync(first);
        Assert.Equal(UnixFileMode.UserRead | UnixFileMode.UserWrite, File.GetUnixFileMode(store.Path));
        Assert.Equal(UnixFileMode.UserRead | UnixFileMode.UserWrite | UnixFileMode.UserExecute, File.GetUnixFileMode(Path.GetDirectoryName(store.Path)!));
        Assert.Equal(first, await store.LoadAsync());

        var second = first with { Tokens = first.Tokens! with { RefreshToken = "rt-2" } };
        await store.SaveAsync(second);
        Assert.Equal("rt-2", (await store.LoadAsync())!.Tokens!.RefreshToken);
        Assert.Equal(["credentials.json"], Directory.GetFiles(Path.GetDirectoryName(store.Path)!).Select(Path.GetFileName));
        Assert.Equal(UnixFileMode.UserRead | UnixFileMode.UserWrite, File.GetUnixFileMode(store.Path));
    }

    [Fact]
    public async Task Refuses_a_file_others_can_read()
    {
        using var dir = new TempDir();
        var store = new FileTokenStore(Path.Combine(dir.Path, "credentials.json"));
        await store.SaveAsync(Sample("rt"));
        File.SetUnixFileMode(store.Path, UnixFileMode.UserRead | UnixFileMode.UserWrite | UnixFileMode.GroupRead | UnixFileMode.OtherRead);
        var e = await Assert.ThrowsAsync<UnauthorizedAccessException>(() => store.LoadAsync().AsTask());
        Assert.Contains("chmod 600", e.Message);
    }

    [Fact]
    public async Task Refuses_a_file_that_is_not_credentials()
    {
        using var dir = new TempDir();
        var path = Path.Combine(dir.Path, "credentials.json");
        File.WriteAllText(path, "{\"version\":2}");
        File.SetUnixFileMode(path, UnixFileMode.UserRead | UnixFileMode.UserWrite);
        await Assert.ThrowsAsync<InvalidDataException>(() => new FileTokenStore(path).LoadAsync().AsTask());
    }

    [Fact]
    public async Task Purge_deletes_the_file()
    {
        using var dir = new TempDir();
        var store = new FileTokenStore(Path.Combine(dir.Path, "credentials.json"));
        await store.SaveAsync(Sample("rt"));
        await store.PurgeAsync();
        Assert.False(File.Exists(store.Path));
        await store.PurgeAsync();
    }

    [Fact]
    public void The_data_directory_follows_XDG_DATA_HOME_then_HOME()
    {
        Assert.Equal("/xdg/agentgraph", TokenStores.DataDirectory(n => n == "XDG_DATA_HOME" ? "/xdg" : "/home/ada"));
        Assert.Equal("/home/ada/.local/share/agentgraph", TokenStores.DataDirectory(n => n == "HOME" ? "/home/ada" : null));
        // A relative XDG_DATA_HOME is invalid per the XDG spec and ignored.
        Assert.Equal("/home/ada/.local/share/agentgraph", TokenStores.DataDirectory(n => n == "XDG_DATA_HOME" ? "rel" : "/home/ada"));
        var store = Assert.IsType<FileTokenStore>(TokenStores.ForCurrentUser("/x/agentgraph"));
        Assert.Equal("/x/agentgraph/credentials.json", store.Path);
    }
}

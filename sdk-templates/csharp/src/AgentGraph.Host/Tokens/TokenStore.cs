using System.Text.Json;
using System.Text.Json.Serialization;
using AgentGraph.Host.OAuth;
using AgentGraph.Host.Reports;

namespace AgentGraph.Host.Tokens;

/// <summary>
/// Everything durable the host holds: the device key (made once, before enrolment), and after enrolment the device
/// id and the tokens. Secret: never logged.
/// </summary>
/// <param name="DeviceKey">The device's private key.</param>
/// <param name="DeviceId">The enrolled device's id (the access token's <c>did</c>); null before enrolment.</param>
/// <param name="Tokens">The current tokens; null before enrolment.</param>
public sealed record HostCredentials(DeviceKeyMaterial DeviceKey, string? DeviceId, TokenSet? Tokens);

/// <summary>Where <see cref="HostCredentials"/> live. Saves replace the whole record atomically.</summary>
public interface ITokenStore
{
    /// <summary>The stored credentials, or null when there are none.</summary>
    ValueTask<HostCredentials?> LoadAsync(CancellationToken cancellationToken = default);
    /// <summary>Replaces the stored credentials atomically (a crash leaves the old or the new record, never a mix).</summary>
    ValueTask SaveAsync(HostCredentials credentials, CancellationToken cancellationToken = default);
    /// <summary>Deletes everything stored (sign-out).</summary>
    ValueTask PurgeAsync(CancellationToken cancellationToken = default);
}

/// <summary>The default store for this OS, and the per-user data directory.</summary>
public static class TokenStores
{
    /// <summary>The file name under the data directory.</summary>
    public const string FileName = "credentials.json";

    /// <summary>
    /// The user's data directory: <c>$XDG_DATA_HOME/agentgraph</c>, else <c>~/.local/share/agentgraph</c> (Linux, macOS);
    /// <c>%LOCALAPPDATA%\AgentGraph</c> on Windows.
    /// </summary>
    public static string DataDirectory(Func<string, string?>? environment = null)
    {
        var env = environment ?? Environment.GetEnvironmentVariable;
        if (OperatingSystem.IsWindows())
            return Path.Combine(Environment.GetFolderPath(Environment.SpecialFolder.LocalApplicationData), "AgentGraph");
        var xdg = env("XDG_DATA_HOME");
        if (!string.IsNullOrEmpty(xdg) && Path.IsPathRooted(xdg)) return Path.Combine(xdg, "agentgraph");
        var home = env("HOME");
        if (string.IsNullOrEmpty(home)) home = Environment.GetFolderPath(Environment.SpecialFolder.UserProfile);
        if (string.IsNullOrEmpty(home))
            throw new InvalidOperationException("TokenStores: neither XDG_DATA_HOME nor HOME is set; pass a directory to FileTokenStore.");
        return Path.Combine(home, ".local", "share", "agentgraph");
    }

    /// <summary>DPAPI (CurrentUser) on Windows, a 0600 file elsewhere.</summary>
    public static ITokenStore ForCurrentUser(string? directory = null)
    {
        var dir = directory ?? DataDirectory();
        if (OperatingSystem.IsWindows()) return new DpapiTokenStore(Path.Combine(dir, FileName + ".dpapi"));
        return new FileTokenStore(Path.Combine(dir, FileName));
    }
}

/// <summary>The JSON form of <see cref="HostCredentials"/> (version 1).</summary>
internal static class CredentialsJson
{
    private static readonly JsonSerializerOptions Options = new()
    {
        PropertyNamingPolicy = JsonNamingPolicy.CamelCase,
        DefaultIgnoreCondition = JsonIgnoreCondition.WhenWritingNull,
    };

    private sealed record Envelope(int Version, HostCredentials Credentials);

    public static byte[] Serialize(HostCredentials c) => JsonSerializer.SerializeToUtf8Bytes(new Envelope(1, c), Options);

    public static HostCredentials Deserialize(ReadOnlySpan<byte> bytes, string where)
    {
        Envelope? e;
        try
        {
            e = JsonSerializer.Deserialize<Envelope>(bytes, Options);
        }
        catch (JsonException ex)
        {
            throw new InvalidDataException($"{where} is not a credentials file ({ex.Message}); sign in again after deleting it.", ex);
        }
        if (e is null || e.Version != 1 || e.Credentials?.DeviceKey is null)
            throw new InvalidDataException($"{where} has an unknown format (version 1 expected); sign in again after deleting it.");
        return e.Credentials;
    }
}

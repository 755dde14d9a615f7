using System.Runtime.InteropServices;

namespace AgentGraph.Host.Broker;

/// <summary>The peer of a broker connection as the OS reports it (<c>struct ucred</c> on Linux).</summary>
/// <param name="Pid">The peer's process id.</param>
/// <param name="Uid">The peer's user id; null where the transport itself guarantees the same user (Windows named pipe
/// with <c>PipeOptions.CurrentUserOnly</c>).</param>
/// <param name="Gid">The peer's group id (informational).</param>
public sealed record PeerCredentials(int Pid, uint? Uid, uint? Gid);

/// <summary>Allowed or refused, and why (for the log and the refusal's <c>error_description</c>; no secrets).</summary>
/// <param name="Allowed">Whether the peer is served.</param>
/// <param name="Reason">Why.</param>
/// <param name="Executable">The peer's executable, when it could be read.</param>
public sealed record BrokerDecision(bool Allowed, string Reason, string? Executable);

/// <summary>Finds the executable of a running process.</summary>
public interface IProcessExecutableLookup
{
    /// <summary>The full path of <paramref name="pid"/>'s executable, or null when it cannot be read (gone, no access).</summary>
    string? ExecutableOf(int pid);
}

/// <summary>Linux: <c>readlink /proc/&lt;pid&gt;/exe</c> (a deleted or replaced binary reads "… (deleted)" and matches nothing).</summary>
public sealed class ProcFsExecutableLookup : IProcessExecutableLookup
{
    /// <inheritdoc />
    public string? ExecutableOf(int pid)
    {
        if (pid <= 0) return null;
        try
        {
            return new FileInfo($"/proc/{pid}/exe").LinkTarget;
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            return null;
        }
    }
}

/// <summary>
/// Who the broker serves: the same user as the host, running an executable on the allow-list (full paths; symlinks in
/// the list resolved once at construction, so <c>/usr/bin/python3</c> names its real binary; compared ordinally,
/// ignoring case on Windows).
/// </summary>
public sealed class BrokerPolicy
{
    private readonly HashSet<string> _allowed;
    private readonly IProcessExecutableLookup _lookup;

    /// <summary>Creates the policy.</summary>
    /// <param name="allowedExecutables">Executables that may ask for tokens, e.g. the sidecar's Python interpreter.</param>
    /// <param name="uid">The user served (default: this process's effective uid; ignored on Windows).</param>
    /// <param name="lookup">pid → executable (default: /proc on Linux).</param>
    /// <param name="ignoreCase">Compare paths ignoring case (default: on Windows).</param>
    public BrokerPolicy(IEnumerable<string> allowedExecutables, uint? uid = null, IProcessExecutableLookup? lookup = null, bool? ignoreCase = null)
    {
        ArgumentNullException.ThrowIfNull(allowedExecutables);
        var comparer = ignoreCase ?? OperatingSystem.IsWindows() ? StringComparer.OrdinalIgnoreCase : StringComparer.Ordinal;
        _allowed = new HashSet<string>(allowedExecutables.Select(Resolve), comparer);
        if (_allowed.Count == 0) throw new ArgumentException("BrokerPolicy: name at least one allowed executable (the sidecar's).", nameof(allowedExecutables));
        Uid = uid ?? (OperatingSystem.IsWindows() ? 0 : Native.geteuid());
        _lookup = lookup ?? (OperatingSystem.IsWindows() ? new WindowsExecutableLookup() : new ProcFsExecutableLookup());
    }

    /// <summary>The user served.</summary>
    public uint Uid { get; }

    /// <summary>The allowed executables (resolved).</summary>
    public IReadOnlyCollection<string> AllowedExecutables => _allowed;

    /// <summary>The decision for a peer: unknown credentials, another user, an unreadable or unlisted executable are refused.</summary>
    public BrokerDecision Decide(PeerCredentials? peer)
    {
        if (peer is null || peer.Pid <= 0) return new BrokerDecision(false, "the peer's credentials could not be read", null);
        if (peer.Uid is uint uid && uid != Uid) return new BrokerDecision(false, $"the peer runs as uid {uid}, not as this user ({Uid})", null);
        var exe = _lookup.ExecutableOf(peer.Pid);
        if (exe is null) return new BrokerDecision(false, $"the executable of pid {peer.Pid} could not be read", null);
        if (!_allowed.Contains(exe)) return new BrokerDecision(false, $"{exe} is not an allowed executable", exe);
        return new BrokerDecision(true, "same user, allowed executable", exe);
    }

    private static string Resolve(string path)
    {
        ArgumentException.ThrowIfNullOrEmpty(path);
        // Only a full path of this OS is resolved; anything else is kept as given (and matches no /proc path).
        if (!Path.IsPathFullyQualified(path)) return path;
        var full = Path.GetFullPath(path);
        try
        {
            return File.ResolveLinkTarget(full, returnFinalTarget: true)?.FullName ?? full;
        }
        catch (IOException)
        {
            return full;
        }
    }
}

internal static partial class Native
{
    [DllImport("libc", EntryPoint = "geteuid")]
#pragma warning disable SYSLIB1054 // LibraryImport would need AllowUnsafeBlocks for one parameterless call.
    internal static extern uint geteuid();
#pragma warning restore SYSLIB1054
}

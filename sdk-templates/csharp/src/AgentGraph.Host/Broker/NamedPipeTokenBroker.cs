using System.ComponentModel;
using System.Diagnostics;
using System.IO.Pipes;
using System.Runtime.InteropServices;
using System.Runtime.Versioning;
using Microsoft.Win32.SafeHandles;

namespace AgentGraph.Host.Broker;

/// <summary>
/// The broker's Windows variant: a named pipe that only the current user can open
/// (<see cref="PipeOptions.CurrentUserOnly"/>); each client's process id (<c>GetNamedPipeClientProcessId</c>) is
/// mapped to its executable and decided by the <see cref="BrokerPolicy"/> (uid not applicable: the pipe's ACL is the
/// same-user check). Same protocol as the Unix socket.
/// </summary>
[SupportedOSPlatform("windows")]
public sealed class NamedPipeTokenBroker : IAsyncDisposable
{
    private readonly TokenBrokerOptions _options;
    private readonly CancellationTokenSource _stop = new();
    private readonly Task _accepting;

    private NamedPipeTokenBroker(string pipeName, TokenBrokerOptions options)
    {
        PipeName = pipeName;
        _options = options;
        _accepting = AcceptLoopAsync();
    }

    /// <summary>The pipe's name (<c>\\.\pipe\&lt;name&gt;</c>).</summary>
    public string PipeName { get; }

    /// <summary>Starts serving <paramref name="pipeName"/>.</summary>
    public static NamedPipeTokenBroker Start(string pipeName, TokenBrokerOptions options)
    {
        ArgumentException.ThrowIfNullOrEmpty(pipeName);
        ArgumentNullException.ThrowIfNull(options);
        if (!OperatingSystem.IsWindows()) throw new PlatformNotSupportedException("NamedPipeTokenBroker runs on Windows; use UnixSocketTokenBroker elsewhere.");
        return new NamedPipeTokenBroker(pipeName, options);
    }

    private async Task AcceptLoopAsync()
    {
        while (!_stop.IsCancellationRequested)
        {
            var pipe = new NamedPipeServerStream(PipeName, PipeDirection.InOut, NamedPipeServerStream.MaxAllowedServerInstances,
                PipeTransmissionMode.Byte, PipeOptions.Asynchronous | PipeOptions.CurrentUserOnly);
            try
            {
                await pipe.WaitForConnectionAsync(_stop.Token).ConfigureAwait(false);
            }
            catch (OperationCanceledException)
            {
                await pipe.DisposeAsync().ConfigureAwait(false);
                return;
            }
            _ = Task.Run(() => ServeAsync(pipe));
        }
    }

    private async Task ServeAsync(NamedPipeServerStream pipe)
    {
        await using (pipe.ConfigureAwait(false))
        {
            try
            {
                int? pid = GetNamedPipeClientProcessId(pipe.SafePipeHandle, out var id) ? (int)id : null;
                await BrokerProtocol.ServeAsync(_options, pipe, NamedPipeClient.PeerOf(pid), _stop.Token).ConfigureAwait(false);
            }
            catch (Exception e) when (e is IOException or OperationCanceledException or ObjectDisposedException)
            {
                // The client went away, or the broker stops.
            }
        }
    }

    [DllImport("kernel32.dll", SetLastError = true)]
    [return: MarshalAs(UnmanagedType.Bool)]
#pragma warning disable SYSLIB1054 // LibraryImport would need AllowUnsafeBlocks for one call.
    private static extern bool GetNamedPipeClientProcessId(SafePipeHandle pipe, out uint clientProcessId);
#pragma warning restore SYSLIB1054

    /// <inheritdoc />
    public async ValueTask DisposeAsync()
    {
        await _stop.CancelAsync().ConfigureAwait(false);
        await _accepting.ConfigureAwait(false);
        _stop.Dispose();
    }
}

/// <summary>
/// The named pipe's client check, platform-neutral so its logic is tested everywhere: the client's process id (from
/// <c>GetNamedPipeClientProcessId</c>; null when it failed) becomes the peer the <see cref="BrokerPolicy"/> decides
/// by its executable (pid → exe through the policy's lookup; no uid: the pipe admits the current user only).
/// </summary>
public static class NamedPipeClient
{
    /// <summary>The peer for a client process id.</summary>
    public static PeerCredentials? PeerOf(int? clientProcessId) =>
        clientProcessId is int pid && pid > 0 ? new PeerCredentials(pid, null, null) : null;

    /// <summary>The decision for a client process id.</summary>
    public static BrokerDecision Decide(BrokerPolicy policy, int? clientProcessId)
    {
        ArgumentNullException.ThrowIfNull(policy);
        return policy.Decide(PeerOf(clientProcessId));
    }
}

/// <summary>Windows: a process's executable from its main module (null when the process is gone or not ours).</summary>
[SupportedOSPlatform("windows")]
public sealed class WindowsExecutableLookup : IProcessExecutableLookup
{
    /// <inheritdoc />
    public string? ExecutableOf(int pid)
    {
        try
        {
            using var process = Process.GetProcessById(pid);
            return process.MainModule?.FileName;
        }
        catch (Exception e) when (e is ArgumentException or InvalidOperationException or Win32Exception or NotSupportedException)
        {
            return null;
        }
    }
}

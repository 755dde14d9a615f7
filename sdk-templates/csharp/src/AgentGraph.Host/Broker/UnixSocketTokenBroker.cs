using System.Net.Sockets;
using System.Runtime.InteropServices;
using System.Runtime.Versioning;

namespace AgentGraph.Host.Broker;

/// <summary>
/// The token broker on a Unix domain socket (Linux): the socket file is 0600 in a 0700 directory; each accepted
/// connection's peer is read with <c>getsockopt(SOL_SOCKET, SO_PEERCRED)</c> (<c>struct ucred {pid, uid, gid}</c>)
/// and decided by the <see cref="BrokerPolicy"/> (same uid, allowed executable) before its request is read; an
/// allowed peer gets an RFC 8693 token (<see cref="BrokerProtocol"/>), a refused one <c>access_denied</c>.
/// </summary>
[SupportedOSPlatform("linux")]
public sealed class UnixSocketTokenBroker : IAsyncDisposable
{
    private const int SolSocket = 1;
    private const int SoPeerCred = 17;
    private const UnixFileMode DirMode700 = UnixFileMode.UserRead | UnixFileMode.UserWrite | UnixFileMode.UserExecute;
    private readonly TokenBrokerOptions _options;
    private readonly Socket _listener;
    private readonly CancellationTokenSource _stop = new();
    private readonly Task _accepting;

    private UnixSocketTokenBroker(TokenBrokerOptions options, string path, Socket listener)
    {
        _options = options;
        SocketPath = path;
        _listener = listener;
        _accepting = AcceptLoopAsync();
    }

    /// <summary>The socket file.</summary>
    public string SocketPath { get; }

    /// <summary>Creates the directory (0700) and the socket (0600), and starts accepting.</summary>
    public static UnixSocketTokenBroker Start(string socketPath, TokenBrokerOptions options)
    {
        ArgumentException.ThrowIfNullOrEmpty(socketPath);
        ArgumentNullException.ThrowIfNull(options);
        var path = Path.GetFullPath(socketPath);
        var dir = Path.GetDirectoryName(path)!;
        if (!Directory.Exists(dir)) Directory.CreateDirectory(dir, DirMode700);
        else File.SetUnixFileMode(dir, DirMode700);
        if (File.Exists(path)) File.Delete(path); // a stale socket of an earlier run
        var listener = new Socket(AddressFamily.Unix, SocketType.Stream, ProtocolType.Unspecified);
        try
        {
            listener.Bind(new UnixDomainSocketEndPoint(path));
            File.SetUnixFileMode(path, UnixFileMode.UserRead | UnixFileMode.UserWrite);
            listener.Listen(16);
        }
        catch
        {
            listener.Dispose();
            throw;
        }
        return new UnixSocketTokenBroker(options, path, listener);
    }

    /// <summary>The peer's <c>struct ucred</c>, or null when the OS does not report it.</summary>
    public static PeerCredentials? ReadPeerCredentials(Socket socket)
    {
        ArgumentNullException.ThrowIfNull(socket);
        Span<byte> ucred = stackalloc byte[12];
        int length;
        try
        {
            length = socket.GetRawSocketOption(SolSocket, SoPeerCred, ucred);
        }
        catch (SocketException)
        {
            return null;
        }
        if (length < 12) return null;
        // struct ucred { pid_t pid; uid_t uid; gid_t gid; } in native byte order.
        return new PeerCredentials(
            MemoryMarshal.Read<int>(ucred[..4]), MemoryMarshal.Read<uint>(ucred[4..8]), MemoryMarshal.Read<uint>(ucred[8..12]));
    }

    private async Task AcceptLoopAsync()
    {
        while (!_stop.IsCancellationRequested)
        {
            Socket client;
            try
            {
                client = await _listener.AcceptAsync(_stop.Token).ConfigureAwait(false);
            }
            catch (Exception e) when (e is OperationCanceledException or ObjectDisposedException or SocketException)
            {
                if (_stop.IsCancellationRequested) return;
                continue;
            }
            _ = Task.Run(() => ServeAsync(client));
        }
    }

    private async Task ServeAsync(Socket client)
    {
        try
        {
            await using var stream = new NetworkStream(client, ownsSocket: true);
            await BrokerProtocol.ServeAsync(_options, stream, ReadPeerCredentials(client), _stop.Token).ConfigureAwait(false);
        }
        catch (Exception e) when (e is IOException or SocketException or OperationCanceledException or ObjectDisposedException)
        {
            // The client went away, or the broker stops: nothing to answer.
        }
    }

    /// <inheritdoc />
    public async ValueTask DisposeAsync()
    {
        await _stop.CancelAsync().ConfigureAwait(false);
        _listener.Dispose();
        await _accepting.ConfigureAwait(false);
        try
        {
            File.Delete(SocketPath);
        }
        catch (IOException)
        {
            // Already gone.
        }
        _stop.Dispose();
    }
}

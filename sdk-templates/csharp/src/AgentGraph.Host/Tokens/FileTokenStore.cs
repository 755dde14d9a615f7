using System.Runtime.Versioning;

namespace AgentGraph.Host.Tokens;

/// <summary>
/// A file readable and writable by the user only (0600) in a 0700 directory, for Linux and macOS. Saves write a new
/// 0600 file next to it, flush it to disk and rename it over the old one (atomic on POSIX file systems), so a
/// rotated refresh token is never half written and never lost behind the old one.
/// </summary>
[UnsupportedOSPlatform("windows")]
public sealed class FileTokenStore : ITokenStore
{
    private const UnixFileMode FileMode600 = UnixFileMode.UserRead | UnixFileMode.UserWrite;
    private const UnixFileMode DirMode700 = UnixFileMode.UserRead | UnixFileMode.UserWrite | UnixFileMode.UserExecute;
    private readonly SemaphoreSlim _lock = new(1, 1);

    /// <summary>Creates the store at <paramref name="path"/> (its directory is made 0700 when created).</summary>
    public FileTokenStore(string path)
    {
        ArgumentException.ThrowIfNullOrEmpty(path);
        Path = System.IO.Path.GetFullPath(path);
    }

    /// <summary>The credentials file.</summary>
    public string Path { get; }

    /// <inheritdoc />
    public async ValueTask<HostCredentials?> LoadAsync(CancellationToken cancellationToken = default)
    {
        if (!File.Exists(Path)) return null;
        var mode = File.GetUnixFileMode(Path);
        if ((mode & ~FileMode600) != 0)
            throw new UnauthorizedAccessException(
                $"{Path} is readable by others (mode {Convert.ToString((int)mode, 8)}); it holds credentials: chmod 600 it or delete it and sign in again.");
        var bytes = await File.ReadAllBytesAsync(Path, cancellationToken).ConfigureAwait(false);
        return CredentialsJson.Deserialize(bytes, Path);
    }

    /// <inheritdoc />
    public async ValueTask SaveAsync(HostCredentials credentials, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(credentials);
        await _lock.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            var dir = System.IO.Path.GetDirectoryName(Path)!;
            if (!Directory.Exists(dir)) Directory.CreateDirectory(dir, DirMode700);
            var temp = $"{Path}.{Guid.NewGuid():N}.tmp";
            try
            {
                var options = new FileStreamOptions
                {
                    Mode = FileMode.CreateNew, Access = FileAccess.Write, Share = FileShare.None, UnixCreateMode = FileMode600,
                };
                await using (var stream = new FileStream(temp, options))
                {
                    await stream.WriteAsync(CredentialsJson.Serialize(credentials), cancellationToken).ConfigureAwait(false);
                    stream.Flush(flushToDisk: true);
                }
                File.Move(temp, Path, overwrite: true);
            }
            finally
            {
                if (File.Exists(temp)) File.Delete(temp);
            }
        }
        finally
        {
            _lock.Release();
        }
    }

    /// <inheritdoc />
    public async ValueTask PurgeAsync(CancellationToken cancellationToken = default)
    {
        await _lock.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            if (File.Exists(Path))
            {
                // Overwrite before unlinking, so the tokens do not linger in the freed blocks of simple file systems.
                var length = new FileInfo(Path).Length;
                await using (var stream = new FileStream(Path, FileMode.Open, FileAccess.Write, FileShare.None))
                {
                    await stream.WriteAsync(new byte[length], cancellationToken).ConfigureAwait(false);
                    stream.Flush(flushToDisk: true);
                }
                File.Delete(Path);
            }
        }
        finally
        {
            _lock.Release();
        }
    }
}

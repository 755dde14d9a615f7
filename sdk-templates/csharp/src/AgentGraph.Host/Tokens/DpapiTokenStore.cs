using System.Runtime.Versioning;
using System.Security.Cryptography;

namespace AgentGraph.Host.Tokens;

/// <summary>
/// Windows: the credentials encrypted with DPAPI for the current user (<see cref="DataProtectionScope.CurrentUser"/>,
/// never LocalMachine: another account on the machine cannot decrypt them), in a file under
/// <c>%LOCALAPPDATA%\AgentGraph</c>, replaced atomically on save.
/// </summary>
[SupportedOSPlatform("windows")]
public sealed class DpapiTokenStore : ITokenStore
{
    private static readonly byte[] Entropy = "AgentGraph.Host credentials v1"u8.ToArray();
    private readonly SemaphoreSlim _lock = new(1, 1);

    /// <summary>Creates the store at <paramref name="path"/>.</summary>
    public DpapiTokenStore(string path)
    {
        ArgumentException.ThrowIfNullOrEmpty(path);
        Path = System.IO.Path.GetFullPath(path);
    }

    /// <summary>The encrypted file.</summary>
    public string Path { get; }

    /// <summary>The scope used: always CurrentUser.</summary>
    public static DataProtectionScope Scope => DataProtectionScope.CurrentUser;

    /// <inheritdoc />
    public async ValueTask<HostCredentials?> LoadAsync(CancellationToken cancellationToken = default)
    {
        if (!File.Exists(Path)) return null;
        var sealedBytes = await File.ReadAllBytesAsync(Path, cancellationToken).ConfigureAwait(false);
        byte[] plain;
        try
        {
            plain = ProtectedData.Unprotect(sealedBytes, Entropy, Scope);
        }
        catch (CryptographicException e)
        {
            throw new InvalidDataException($"{Path} cannot be decrypted by this Windows user; delete it and sign in again.", e);
        }
        try
        {
            return CredentialsJson.Deserialize(plain, Path);
        }
        finally
        {
            CryptographicOperations.ZeroMemory(plain);
        }
    }

    /// <inheritdoc />
    public async ValueTask SaveAsync(HostCredentials credentials, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(credentials);
        var plain = CredentialsJson.Serialize(credentials);
        byte[] sealedBytes;
        try
        {
            sealedBytes = ProtectedData.Protect(plain, Entropy, Scope);
        }
        finally
        {
            CryptographicOperations.ZeroMemory(plain);
        }
        await _lock.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            Directory.CreateDirectory(System.IO.Path.GetDirectoryName(Path)!);
            var temp = $"{Path}.{Guid.NewGuid():N}.tmp";
            try
            {
                await using (var stream = new FileStream(temp, FileMode.CreateNew, FileAccess.Write, FileShare.None))
                {
                    await stream.WriteAsync(sealedBytes, cancellationToken).ConfigureAwait(false);
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
            if (File.Exists(Path)) File.Delete(Path);
        }
        finally
        {
            _lock.Release();
        }
    }
}

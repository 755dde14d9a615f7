using System.Runtime.Versioning;

// The host's tests run on Linux (CI and the development machines): the 0600 file store, /proc and SO_PEERCRED.
// The Windows pieces (DPAPI store, named pipe) are compiled by the library; their decision logic is tested here.
[assembly: SupportedOSPlatform("linux")]

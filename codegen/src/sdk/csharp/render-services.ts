/**
 * Generated/ServiceCollectionExtensions.g.cs: `services.AddAgentGraph(o => ...)` — the options pattern
 * (`AgentGraphOptions`, validated on first use) and `AgentGraphSdk` as a typed client of IHttpClientFactory (pooled
 * handlers, DNS refresh, the app's own handlers via the returned IHttpClientBuilder). The token provider is the
 * options' one, else an ITokenProvider registered in the container; logs go to the container's ILoggerFactory.
 */
import { HEADER, NAMESPACE } from './names.js';

export function renderServices(): string {
  return `${HEADER}
#nullable enable
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;

namespace ${NAMESPACE};

/// <summary>
/// Settings of the AgentGraphSdk that <see cref="AgentGraphServiceCollectionExtensions.AddAgentGraph"/> registers (set
/// them in the configure action, or bind them from configuration with services.Configure&lt;AgentGraphOptions&gt;).
/// </summary>
public sealed class AgentGraphOptions
{
    /// <summary>The absolute GraphQL endpoint URL, e.g. https://api.example.com/graphql (required).</summary>
    public Uri? BaseUrl { get; set; }

    /// <summary>Access tokens; null: the ITokenProvider registered in the container, if any.</summary>
    public ITokenProvider? TokenProvider { get; set; }

    /// <summary>The data classes that may leave the process (default Public and Internal).</summary>
    public PrivacyPolicy? PrivacyPolicy { get; set; }

    /// <summary>Extra headers on every request (never logged).</summary>
    public IDictionary<string, string> Headers { get; } = new Dictionary<string, string>(StringComparer.OrdinalIgnoreCase);

    /// <summary>Per-attempt timeout (default 30 s).</summary>
    public TimeSpan? Timeout { get; set; }

    /// <summary>Retry settings (default: 5 attempts or 30 s).</summary>
    public RetrySettings? Retry { get; set; }

    /// <summary>The largest request body sent, in bytes.</summary>
    public long? MaxPayloadBytes { get; set; }
}

/// <summary>Registers the AgentGraph SDK in a service collection.</summary>
public static class AgentGraphServiceCollectionExtensions
{
    /// <summary>
    /// Registers <see cref="AgentGraphSdk"/> as a typed client of IHttpClientFactory, configured by
    /// <paramref name="configure"/> (the options pattern; BaseUrl is checked when the SDK is first resolved). Returns
    /// the IHttpClientBuilder, to add handlers or configure the primary one.
    /// </summary>
    public static IHttpClientBuilder AddAgentGraph(this IServiceCollection services, Action<AgentGraphOptions> configure)
    {
        ArgumentNullException.ThrowIfNull(services);
        ArgumentNullException.ThrowIfNull(configure);
        services.AddOptions<AgentGraphOptions>()
            .Configure(configure)
            .Validate(
                o => o.BaseUrl is { IsAbsoluteUri: true },
                "AgentGraph: BaseUrl must be the absolute GraphQL endpoint URL; set it in services.AddAgentGraph(o => o.BaseUrl = new Uri(\\"https://api.example.com/graphql\\")).");
        var builder = services.AddHttpClient(nameof(AgentGraphSdk));
        builder.AddTypedClient<AgentGraphSdk>((http, provider) =>
        {
            var options = provider.GetRequiredService<IOptions<AgentGraphOptions>>().Value;
            http.Timeout = System.Threading.Timeout.InfiniteTimeSpan; // the SDK times each attempt itself
            return new AgentGraphSdk(new AgentGraphClientOptions
            {
                BaseUrl = options.BaseUrl!,
                HttpClient = http,
                TokenProvider = options.TokenProvider ?? provider.GetService<ITokenProvider>(),
                PrivacyPolicy = options.PrivacyPolicy,
                Headers = options.Headers.Count == 0 ? null : new Dictionary<string, string>(options.Headers, StringComparer.OrdinalIgnoreCase),
                Timeout = options.Timeout,
                Retry = options.Retry,
                MaxPayloadBytes = options.MaxPayloadBytes,
                Logger = provider.GetService<ILoggerFactory>()?.CreateLogger("AgentGraph.Sdk"),
            });
        });
        return builder;
    }
}
`;
}

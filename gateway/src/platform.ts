/**
 * The all-in-one platform (`npm start`, and the end-to-end tests): one process, one database, the four subgraphs and
 * the gateway on loopback ports. This is the composition root: the only place the gateway imports the subgraphs.
 *
 * Order matters: identity first (it publishes the JWKS every other service verifies tokens with), then memory,
 * coordination and catalog with a verifier pointing at identity's actual JWKS URL and issuer, then the gateway with
 * the subgraphs' actual URLs. Ports may be 0 (tests): URLs are derived from the servers once they listen.
 */
import { catalogSubgraph } from '@agentgraph/catalog';
import { coordinationSubgraph } from '@agentgraph/coordination';
import { ensureDevelopmentTenant, identitySubgraph, type DevelopmentTenant } from '@agentgraph/identity';
import { memorySubgraph } from '@agentgraph/memory';
import {
  createRevocationList,
  createTokenVerifier,
  openDatabase,
  SERVICES,
  serveSubgraph,
  type Config,
  type Database,
  type DatabaseHandle,
  type Logger,
  type ServedSubgraph,
  type Service,
  type SubgraphModule,
  type SubgraphName,
  type TokenVerifier,
} from '@agentgraph/runtime';
import { consoleRedirectUri, createConsole } from './console/index.js';
import { createGateway, type Gateway, type GatewayOptions } from './gateway.js';
import { readSupergraphSdl } from './supergraph.js';

export const SUBGRAPH_MODULES: readonly SubgraphModule[] = [
  identitySubgraph,
  memorySubgraph,
  coordinationSubgraph,
  catalogSubgraph,
];

export interface Platform {
  /** The gateway's base URL (http://host:port); GraphQL at /graphql, streams at /graphql/stream. */
  gatewayUrl: string;
  /** Each subgraph's base URL (its GraphQL endpoint is /graphql under it). */
  subgraphs: Record<SubgraphName, string>;
  /** The configuration as served: actual subgraph URLs, token issuer and JWKS URL. */
  config: Config;
  /** Each service's connections, as its own database role (its grants and nothing of another's). */
  dbs: Record<Service, Database>;
  /** The owner connection (migrations' role): for operators' tools such as the deployment-wide emergency stop. */
  owner: DatabaseHandle['owner'];
  gateway: Gateway;
  /** Development mode: the tenant dev@localhost owns (null in production or when someone bootstrapped their own). */
  devTenant: DevelopmentTenant | null;
  /** Graceful: the gateway drains first, then the subgraphs, then the database closes. Idempotent. */
  close(): Promise<void>;
}

export interface PlatformOptions {
  log: Logger;
  /** Passed to createGateway (heartbeat interval, injected timers, pool size). */
  gateway?: Pick<GatewayOptions, 'heartbeatMs' | 'timers' | 'subgraphConnections' | 'readinessTimeoutMs'>;
  /** Serve the web console (the built app in this folder, web/dist) and its sign-in routes under `/`. */
  console?: { distDir: string };
}

function defaultSubgraphUrl(config: Config, name: SubgraphName): string {
  return `http://${config.host}:${config.subgraphPorts[name]}/graphql`;
}

/**
 * A deep-enough copy of the config in which the values derived from ports (subgraph URLs, token issuer, JWKS URL)
 * are replaced by the actual ones once identity listens, unless the environment set them explicitly (then they
 * differ from what loadConfig derives by default and are kept).
 */
function copyConfig(config: Config): Config {
  return {
    ...config,
    subgraphPorts: { ...config.subgraphPorts },
    subgraphUrls: { ...config.subgraphUrls },
    limits: { ...config.limits },
    client: { ...config.client },
  };
}

export async function startPlatform(input: Config, opts: PlatformOptions): Promise<Platform> {
  const { log } = opts;
  const config = copyConfig(input);
  const derivedIdentityOrigin = new URL(input.subgraphUrls.identity).origin;
  const explicit = {
    issuer: input.tokenIssuer !== derivedIdentityOrigin,
    jwks: input.jwksUrl !== `${derivedIdentityOrigin}/.well-known/jwks.json`,
    urls: Object.fromEntries(
      SUBGRAPH_MODULES.map((m) => [m.name, input.subgraphUrls[m.name] !== defaultSubgraphUrl(input, m.name)]),
    ) as Record<SubgraphName, boolean>,
  };

  const { handle } = await openDatabase(
    config,
    SUBGRAPH_MODULES.map((m) => m.migrations),
  );
  let dbs: Record<Service, Database>;
  try {
    dbs = Object.fromEntries(
      await Promise.all(SERVICES.map(async (s) => [s, await handle.app(s)] as const)),
    ) as Record<Service, Database>;
  } catch (err) {
    await handle.close().catch(() => undefined);
    throw err;
  }
  const served: ServedSubgraph[] = [];
  let gateway: Gateway | undefined;
  // One revocation list for every verifier in this process (they share the database and so the same rows); it reads
  // as the gateway, the role with the least rights that may.
  const revocations = createRevocationList(dbs.gateway, log);
  const stopAll = async () => {
    await gateway?.close().catch((error: unknown) => log.error('gateway close failed', { error }));
    for (const s of served.reverse())
      await s
        .close()
        .catch((error: unknown) => log.error('subgraph close failed', { subgraph: s.name, error }));
    await revocations.close().catch((error: unknown) => log.error('revocation list close failed', { error }));
    await handle.close().catch((error: unknown) => log.error('database close failed', { error }));
  };

  try {
    await revocations.ready;
    // Identity verifies tokens too (zero trust) but its own URL is known only once it listens: resolve lazily.
    let verifier: TokenVerifier | null = null;
    const lazyVerifier: TokenVerifier = (authorization) => {
      verifier ??= createTokenVerifier({
        issuer: config.tokenIssuer,
        audience: config.tokenAudience,
        keys: config.jwksUrl,
        revocations,
      });
      return verifier(authorization);
    };
    const [identity, ...others] = SUBGRAPH_MODULES;
    const identityServed = await serveSubgraph(identity!, {
      config,
      db: dbs.identity,
      log,
      verifyToken: lazyVerifier,
      revocations,
    });
    served.push(identityServed);
    const identityOrigin = new URL(identityServed.url).origin;
    // The same config object identity's routes hold: /dev/token signs with the actual issuer from here on.
    if (!explicit.issuer) config.tokenIssuer = identityOrigin;
    if (!explicit.jwks) config.jwksUrl = `${identityOrigin}/.well-known/jwks.json`;
    if (!explicit.urls.identity) config.subgraphUrls.identity = `${identityServed.url}/graphql`;
    config.subgraphPorts.identity = Number(new URL(identityServed.url).port);

    const devTenant =
      config.mode === 'development'
        ? await ensureDevelopmentTenant({ config, owner: handle.owner, log })
        : null;

    for (const module of others) {
      const verifyToken = createTokenVerifier({
        issuer: config.tokenIssuer,
        audience: config.tokenAudience,
        keys: config.jwksUrl,
        revocations,
      });
      const s = await serveSubgraph(module, { config, db: dbs[module.name], log, verifyToken, revocations });
      served.push(s);
      if (!explicit.urls[module.name]) config.subgraphUrls[module.name] = `${s.url}/graphql`;
      config.subgraphPorts[module.name] = Number(new URL(s.url).port);
    }

    gateway = await createGateway({
      config,
      log: log.child({ service: 'gateway' }),
      supergraphSdl: readSupergraphSdl(),
      subgraphUrls: config.subgraphUrls,
      verifyToken: createTokenVerifier({
        issuer: config.tokenIssuer,
        audience: config.tokenAudience,
        keys: config.jwksUrl,
        revocations,
      }),
      ...opts.gateway,
      ...(opts.console
        ? {
            console: createConsole({
              distDir: opts.console.distDir,
              issuer: config.tokenIssuer,
              redirectUri: consoleRedirectUri(config),
              log: log.child({ service: 'console' }),
              catalogUrl: new URL(config.subgraphUrls.catalog).origin,
            }),
          }
        : {}),
    });
    gateway.metrics.watchRevocations(revocations);
    const gatewayUrl = await gateway.listen(config.gatewayPort, config.host);
    config.gatewayPort = Number(new URL(gatewayUrl).port);

    let closing: Promise<void> | null = null;
    return {
      gatewayUrl,
      subgraphs: Object.fromEntries(served.map((s) => [s.name, s.url])) as Record<SubgraphName, string>,
      config,
      dbs,
      owner: handle.owner,
      gateway,
      devTenant,
      close: () => (closing ??= stopAll()),
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}

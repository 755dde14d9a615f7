/**
 * What a subgraph package exports, and how the runtime serves one: in-process next to the others (`npm start`)
 * or on its own against PostgreSQL (`runStandalone`, one process per subgraph in production).
 */
import { readFileSync } from 'node:fs';
import { buildSubgraphSchema } from '@apollo/subgraph';
import type { GraphQLResolverMap } from '@apollo/subgraph/dist/schema-helper/resolverMap.js';
import { parse, type GraphQLSchema } from 'graphql';
import { createTokenVerifier, type TokenVerifier } from './auth.js';
import { loadConfig, type Config, type SubgraphName } from './config.js';
import { openDatabase } from './db/open.js';
import type { MigrationSet } from './db/migrate.js';
import type { Database } from './db/types.js';
import { createLogger, type Logger } from './log.js';
import { createMetrics, type Metrics } from './metrics/index.js';
import type { PrincipalOperations } from './principals.js';
import { createRevocationList, type RevocationList } from './revocation.js';
import { stopOnSignals } from './stop-on-signals.js';
import { startTracing } from './telemetry/tracing.js';
import {
  createSubgraphServer,
  type RouteHandler,
  type RunningServer,
  type SubgraphContext,
} from './subgraph-server.js';
import type { StartedStreamStop } from './stream-guard.js';

export interface SubgraphDeps {
  config: Config;
  db: Database;
  log: Logger;
  /** The server's metrics (background work counts there too). */
  metrics?: Metrics;
}

export interface SubgraphModule {
  name: SubgraphName;
  /** Path of the SDL file in schemas/. */
  schemaFile: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  resolvers: GraphQLResolverMap<SubgraphContext> | any;
  migrations: MigrationSet;
  /** Extra HTTP routes (e.g. identity's JWKS); `verifyToken` is the server's own, for routes that need a caller. */
  routes?(deps: SubgraphDeps & { verifyToken: TokenVerifier }): Record<string, RouteHandler>;
  /** Background work (sweepers); returns a stop function. */
  background?(deps: SubgraphDeps): () => Promise<void>;
  /** Another reason to end this server's streams (e.g. an emergency stop), started per server. */
  streamStop?(deps: SubgraphDeps): StartedStreamStop;
  /** The root fields a device's and a sidecar's token may call here (principals.ts); every other one is refused. */
  principals: PrincipalOperations;
  /** Registers what this subgraph reads on each scrape of /metrics (e.g. its outbox backlog). */
  watchMetrics?(deps: SubgraphDeps & { metrics: Metrics }): void;
}

export function schemaFileOf(name: SubgraphName): string {
  return new URL(`../../schemas/${name}.graphql`, import.meta.url).pathname;
}

export function buildSchemaOf(module: SubgraphModule): GraphQLSchema {
  return buildSubgraphSchema({
    typeDefs: parse(readFileSync(module.schemaFile, 'utf8')),
    resolvers: module.resolvers,
  });
}

export interface ServedSubgraph extends RunningServer {
  name: SubgraphName;
}

/**
 * Serves a subgraph. Without `verifyToken` it verifies tokens against `config.jwksUrl` and a revocation list on
 * `deps.db` of its own (loaded before it listens, closed with it); a caller passing `verifyToken` owns that part.
 */
export async function serveSubgraph(
  module: SubgraphModule,
  deps: SubgraphDeps & {
    verifyToken?: TokenVerifier;
    port?: number;
    /** The list a caller-supplied verifier uses, so streams end on revocation too. */
    revocations?: RevocationList;
  },
): Promise<ServedSubgraph> {
  const { config, db } = deps;
  const log = deps.log.child({ subgraph: module.name });
  const metrics = deps.metrics ?? createMetrics({ service: module.name });
  module.watchMetrics?.({ config, db, log, metrics });
  const revocations = deps.verifyToken ? null : createRevocationList(db, log);
  const list = revocations ?? deps.revocations;
  if (list) metrics.watchRevocations(list);
  try {
    await revocations?.ready;
  } catch (err) {
    await revocations?.close();
    throw err;
  }
  const verifyToken =
    deps.verifyToken ??
    createTokenVerifier({
      issuer: config.tokenIssuer,
      audience: config.tokenAudience,
      keys: config.jwksUrl,
      revocations: revocations ?? undefined,
    });
  const streamStop = module.streamStop?.({ config, db, log });
  try {
    await streamStop?.ready;
  } catch (err) {
    await streamStop?.close();
    await revocations?.close();
    throw err;
  }
  const { listen } = createSubgraphServer({
    name: module.name,
    schema: buildSchemaOf(module),
    config,
    db,
    log,
    verifyToken,
    routes: module.routes?.({ config, db, log, verifyToken }),
    revocations: revocations ?? deps.revocations,
    streamStops: streamStop ? [streamStop] : [],
    principals: module.principals,
    metrics,
  });
  let running: RunningServer;
  try {
    running = await listen(deps.port ?? config.subgraphPorts[module.name], config.host);
  } catch (err) {
    await streamStop?.close();
    await revocations?.close();
    throw err;
  }
  const stopBackground = module.background?.({ config, db, log, metrics });
  return {
    ...running,
    name: module.name,
    async close() {
      await stopBackground?.();
      await running.close();
      await streamStop?.close();
      await revocations?.close();
    },
  };
}

/** Entry point of a subgraph run as its own process (`DATABASE_URL` set; see README). */
export async function runStandalone(module: SubgraphModule): Promise<void> {
  const config = loadConfig();
  const log = createLogger({ service: module.name }, { level: config.logLevel });
  // Before the database opens: its statements are traced when tracing is on (OTEL_TRACES_EXPORTER=otlp).
  const tracing = startTracing({ serviceName: module.name });
  const { db, handle } = await openDatabase(config, [module.migrations], module.name);
  const served = await serveSubgraph(module, { config, db, log });
  stopOnSignals(log, async () => {
    await served.close();
    await handle.close();
    await tracing.shutdown();
  });
}

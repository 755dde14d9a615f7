/**
 * The gateway as its own process (production): subgraphs run elsewhere (`tsx subgraphs/<name>/src/main.ts`), found
 * through SUBGRAPH_<NAME>_URL; tokens are verified against identity's JWKS_URL and TOKEN_ISSUER, and against the
 * revocation list in PostgreSQL (DATABASE_URL; the gateway applies the runtime's migrations, reads
 * runtime.token_revocations and LISTENs for new ones, and touches nothing else there).
 *
 *   SUBGRAPH_IDENTITY_URL=http://identity:4101/graphql ... TOKEN_ISSUER=https://id.example JWKS_URL=... \
 *     tsx gateway/src/standalone.ts [--no-dedupe]
 *
 * --no-dedupe turns off the sharing of identical in-flight read fetches (for measuring the gateway without it).
 */
import { parseArgs } from 'node:util';
import {
  ConfigError,
  createLogger,
  createRevocationList,
  createTokenVerifier,
  loadConfig,
  openDatabase,
  startTracing,
  type Config,
  type RevocationList,
  stopOnSignals,
} from '@agentgraph/runtime';
import { createGateway } from './gateway.js';
import { readSupergraphSdl } from './supergraph.js';

let config: Config;
try {
  config = loadConfig();
} catch (err) {
  if (err instanceof ConfigError) {
    process.stderr.write(`${err.message}\n`);
    process.exit(1);
  }
  throw err;
}
const { values: flags } = parseArgs({
  options: { 'no-dedupe': { type: 'boolean', default: false } },
  strict: false,
});
const log = createLogger({ service: 'gateway' }, { level: config.logLevel });
// Traces when OTEL_TRACES_EXPORTER=otlp (runtime/src/telemetry/); off by default.
const tracing = startTracing({ serviceName: 'gateway' });

// Revocations: only a server database is shared with the subgraphs. The embedded one (PGlite, development) belongs to
// one process, so a gateway on its own cannot see the subgraphs' revocations; the subgraphs still refuse revoked
// tokens (each verifies every token itself).
let revocations: RevocationList | undefined;
let closeDatabase = async () => undefined as void;
if (config.database.driver === 'postgres') {
  const { db, handle } = await openDatabase(config, [], 'gateway');
  revocations = createRevocationList(db, log);
  closeDatabase = () => handle.close();
  await revocations.ready;
} else {
  log.warn(
    "token revocations are not checked by this gateway: set DATABASE_URL to the subgraphs' PostgreSQL database " +
      '(the subgraphs check them either way)',
  );
}

const gateway = await createGateway({
  dedupeInflightReads: !flags['no-dedupe'],
  config,
  log,
  supergraphSdl: readSupergraphSdl(),
  subgraphUrls: config.subgraphUrls,
  verifyToken: createTokenVerifier({
    issuer: config.tokenIssuer,
    audience: config.tokenAudience,
    keys: config.jwksUrl,
    revocations,
  }),
});
if (revocations) gateway.metrics.watchRevocations(revocations);
await gateway.listen(config.gatewayPort, config.host);

stopOnSignals(log, async () => {
  await gateway.close();
  await revocations?.close();
  await closeDatabase();
  await tracing.shutdown();
});

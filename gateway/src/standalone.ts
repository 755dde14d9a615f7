/**
 * The gateway as its own process (production): subgraphs run elsewhere (`tsx subgraphs/<name>/src/main.ts`), found
 * through SUBGRAPH_<NAME>_URL; tokens are verified against identity's JWKS_URL and TOKEN_ISSUER.
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
  createTokenVerifier,
  loadConfig,
  type Config,
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
  }),
});
await gateway.listen(config.gatewayPort, config.host);

stopOnSignals(log, () => gateway.close());

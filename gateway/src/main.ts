/**
 * `npm start`: the whole platform in one process on loopback ports, with the embedded PGlite database under ./.data
 * (or PostgreSQL when DATABASE_URL is set). Prints the URLs and, in development, how to get a token. Ctrl-C or
 * SIGTERM drains and stops cleanly; the data survives a restart.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  ConfigError,
  createLogger,
  loadConfig,
  startTracing,
  type Config,
  stopOnSignals,
} from '@agentgraph/runtime';
import { startPlatform, type Platform } from './platform.js';

function loadOrExit(): Config {
  try {
    return loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
}

function banner(p: Platform): string {
  const { gatewayUrl, subgraphs, config } = p;
  const lines = [
    '',
    `agentgraph is up (${config.mode}, database: ${config.database.driver === 'pglite' ? `PGlite in ${config.database.dataDir ?? 'memory'}` : 'PostgreSQL'})`,
    '',
    `  Web console     ${gatewayUrl}/`,
    `  GraphQL         ${gatewayUrl}/graphql`,
    `  Subscriptions   ${gatewayUrl}/graphql/stream   (graphql-sse)`,
    `  Health          ${gatewayUrl}/healthz   ${gatewayUrl}/readyz`,
    '',
    '  Subgraphs',
    ...Object.entries(subgraphs).map(([name, url]) => `    ${name.padEnd(13)} ${url}/graphql`),
    `    JWKS          ${config.jwksUrl}`,
    '',
    '  OAuth 2.0 (identity is the token authority)',
    `    Metadata      ${subgraphs.identity}/.well-known/oauth-authorization-server`,
    `    Sign in       ${subgraphs.identity}/signin`,
    `    Enrol device  POST ${subgraphs.identity}/oauth/device_authorization (client agentgraph-desktop), then ${subgraphs.identity}/device`,
  ];
  if (config.mode === 'development') {
    const who = p.devTenant?.email ?? 'dev@localhost';
    if (p.devTenant?.credentialsFile) {
      lines.push(`    ${who}'s password is in ${p.devTenant.credentialsFile} (this machine only)`);
    }
    lines.push(
      '',
      '  A token (development only, from this machine):',
      `    TOKEN=$(curl -s -X POST ${subgraphs.identity}/dev/token -H 'content-type: application/json' \\`,
      `      -d '{"email":"${who}"}' | node -pe 'JSON.parse(require("fs").readFileSync(0)).access_token')`,
      '  Then:',
      `    curl -s ${gatewayUrl}/graphql -H 'content-type: application/json' -H "authorization: Bearer $TOKEN" \\`,
      `      -d '{"query":"{ viewer { user { email displayName } tenant { name } role } }"}'`,
    );
    if (!p.devTenant) {
      lines.push(
        '  (dev@localhost no longer exists here; use an e-mail you bootstrapped with `npm run admin -- bootstrap`.)',
      );
    }
  }
  lines.push('', '  Ctrl-C stops it; the data stays for the next start.', '');
  return lines.join('\n');
}

const config = loadOrExit();
const log = createLogger({ service: 'agentgraph' }, { level: config.logLevel });
// Traces when OTEL_TRACES_EXPORTER=otlp (runtime/src/telemetry/): one provider for the gateway and the subgraphs here.
const tracing = startTracing({ serviceName: 'agentgraph' });
// The web console, built by `npm run build:web` (npm start runs it first when the sources changed).
const consoleDist = fileURLToPath(new URL('../../web/dist', import.meta.url));
const consoleBuilt = existsSync(`${consoleDist}/index.html`);
if (!consoleBuilt) log.warn('the web console is not built; run `npm run build:web` to serve it under /');
let platform: Platform;
try {
  platform = await startPlatform(config, {
    log,
    ...(consoleBuilt ? { console: { distDir: consoleDist } } : {}),
  });
} catch (err) {
  log.error('could not start', { error: err });
  process.stderr.write(`Could not start: ${(err as Error).message}\n`);
  process.exit(1);
}
process.stdout.write(banner(platform) + '\n');

stopOnSignals(log, async () => {
  await platform.close();
  await tracing.shutdown();
});

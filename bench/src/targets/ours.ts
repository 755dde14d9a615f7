/**
 * Our gateway alone in its own process: gateway/src/standalone.ts (reads SUBGRAPH_<NAME>_URL, TOKEN_ISSUER,
 * JWKS_URL, GATEWAY_PORT). This wrapper only adds an exit through process.exit on the bench's 'stop' message
 * (standalone's own SIGTERM path drains and exits too, but the IPC path is immediate), so that `node --cpu-prof`
 * writes its profile.
 *
 * With --no-dedupe: the same gateway with createGateway's dedupeInflightReads off.
 * (Restored from tsx's transform cache by the gateway session after it reverted this file by mistake; the
 * original header comment of this version was not recoverable.)
 */
import { parseArgs } from 'node:util';
import { createLogger, createTokenVerifier, loadConfig } from '@agentgraph/runtime';
import { createGateway, readSupergraphSdl } from '@agentgraph/gateway';
import { installGracefulExit } from './exit.js';

const { values } = parseArgs({ options: { 'no-dedupe': { type: 'boolean', default: false } } });

if (!values['no-dedupe']) {
  installGracefulExit();
  await import('../../../gateway/src/standalone.js');
} else {
  const config = loadConfig();
  const log = createLogger({ service: 'gateway' }, { level: config.logLevel });
  const gateway = await createGateway({
    config,
    log,
    supergraphSdl: readSupergraphSdl(),
    subgraphUrls: config.subgraphUrls,
    verifyToken: createTokenVerifier({
      issuer: config.tokenIssuer,
      audience: config.tokenAudience,
      keys: config.jwksUrl,
    }),
    dedupeInflightReads: false,
  });
  await gateway.listen(config.gatewayPort, config.host);
  installGracefulExit(() => gateway.close());
}

/**
 * Our gateway alone in its own process: gateway/src/standalone.ts (reads SUBGRAPH_<NAME>_URL, TOKEN_ISSUER,
 * JWKS_URL, GATEWAY_PORT; `--no-dedupe` passes through to it). This wrapper only adds an exit through process.exit
 * on the bench's 'stop' message (standalone's own SIGTERM path drains and exits too, but the IPC path is immediate),
 * so that `node --cpu-prof` writes its profile.
 */
import { installGracefulExit } from './exit.js';

installGracefulExit();
await import('../../../gateway/src/standalone.js');

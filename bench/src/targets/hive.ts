/**
 * The peer a user would pick instead: @graphql-hive/gateway-runtime (a dev dependency of the bench only), with the
 * same static supergraph SDL, served on node:http, forwarding the client's Authorization header to the subgraphs.
 * Otherwise defaults (its own fetch/keep-alive, plan and parse caches), the same as a user would get.
 *
 * The runtime loads its HTTP transport with `import('@graphql-mesh/transport-http')`, a package this install lacks
 * (it comes with the @graphql-hive/gateway CLI, not with the runtime). We hand it the equivalent transport instead:
 * that package's default export is buildHTTPExecutor from @graphql-tools/executor-http (installed) called with the
 * subgraph's location, the gateway's fetch (so header propagation and the runtime's plugins apply) and the entry's
 * options; header and URL interpolation, which we do not use, is all it adds.
 *
 * With --no-dedupe, identical in-flight subgraph requests are not shared (executor-http's
 * `deduplicateInflightRequests`, on by default). The bench sends one query with one token over 32 connections, the
 * best case for that feature; a real mix of users and arguments rarely hits it, so both rows are reported.
 *
 * Usage: node --import tsx hive.ts --sdl <file> --port <n> [--no-dedupe]
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';
import { createGatewayRuntime } from '@graphql-hive/gateway-runtime';
import { buildHTTPExecutor } from '@graphql-tools/executor-http';
import { installGracefulExit } from './exit.js';

// Our subgraphs answer `_entities` only to a gateway that sends the deployment's gateway secret (the bench starts
// every target with GATEWAY_SECRET; runtime/src/gateway-secret.ts names the header): any gateway in front of them is
// configured so.
const GATEWAY_SECRET_HEADER = 'x-agentgraph-gateway';
const gatewaySecret = process.env['GATEWAY_SECRET'];

const { values } = parseArgs({
  options: {
    sdl: { type: 'string' },
    port: { type: 'string' },
    'no-dedupe': { type: 'boolean', default: false },
  },
});
const supergraph = readFileSync(values.sdl!, 'utf8');

const gateway = createGatewayRuntime({
  supergraph,
  logging: 'warn',
  transports: {
    http: {
      getSubgraphExecutor: ({ transportEntry, fetch, getDisposeReason }) =>
        buildHTTPExecutor({
          endpoint: transportEntry.location,
          ...transportEntry.options,
          ...(values['no-dedupe'] ? { deduplicateInflightRequests: false } : {}),
          getDisposeReason,
          fetch: fetch as never,
        }),
    },
  },
  propagateHeaders: {
    // The caller's token, and the gateway secret our subgraphs require of any gateway (GATEWAY_SECRET, set by the bench).
    fromClientToSubgraphs: ({ request }) => ({
      authorization: request.headers.get('authorization'),
      ...(gatewaySecret ? { [GATEWAY_SECRET_HEADER]: gatewaySecret } : {}),
    }),
  },
});
const server = createServer(gateway);
server.keepAliveTimeout = 65_000;
await new Promise<void>((r) => server.listen(Number(values.port), '127.0.0.1', r));
console.log(`hive gateway at http://127.0.0.1:${values.port}${gateway.graphqlEndpoint}`);
installGracefulExit(async () => {
  server.close();
  await gateway.dispose();
});

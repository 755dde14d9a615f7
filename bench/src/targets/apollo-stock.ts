/**
 * The stock @apollo/gateway configuration, the baseline of the gateway benchmark: ApolloServer + ApolloGateway on the same static
 * supergraph SDL, served by startStandaloneServer, default RemoteGraphQLDataSource (make-fetch-happen). The only
 * addition is what every real deployment needs: forwarding the client's Authorization header to the subgraphs
 * (they verify tokens themselves). With --keepalive, the data source fetches through node-fetch with a keep-alive
 * http.Agent (the usual "pool your connections" tuning, target 3b).
 *
 * Usage: node --import tsx apollo-stock.ts --sdl <file> --port <n> [--keepalive]
 */
import { Agent } from 'node:http';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import {
  ApolloGateway,
  RemoteGraphQLDataSource,
  type GraphQLDataSourceProcessOptions,
} from '@apollo/gateway';
import { ApolloServer } from '@apollo/server';
import { startStandaloneServer } from '@apollo/server/standalone';
import nodeFetch from 'node-fetch';
import { installGracefulExit } from './exit.js';

const { values } = parseArgs({
  options: {
    sdl: { type: 'string' },
    port: { type: 'string' },
    keepalive: { type: 'boolean', default: false },
  },
});
const supergraphSdl = readFileSync(values.sdl!, 'utf8');

interface Ctx {
  authorization?: string;
}

const agent = new Agent({ keepAlive: true, maxSockets: 128, keepAliveMsecs: 10_000 });
const keepAliveFetcher = ((url: string, init: Record<string, unknown>) =>
  nodeFetch(url, { ...init, agent })) as unknown as RemoteGraphQLDataSource['fetcher'];

// Our subgraphs answer `_entities` only to a gateway that sends the deployment's gateway secret (the bench starts
// every target with GATEWAY_SECRET; runtime/src/gateway-secret.ts names the header): any gateway in front of them is
// configured so, stock Apollo included. Not imported from the runtime: the peer's process loads only its own stack.
const GATEWAY_SECRET_HEADER = 'x-agentgraph-gateway';
const gatewaySecret = process.env['GATEWAY_SECRET'];

class ForwardAuth extends RemoteGraphQLDataSource<Ctx> {
  override willSendRequest({ request, context }: GraphQLDataSourceProcessOptions<Ctx>): void {
    const auth = (context as Ctx).authorization;
    if (auth) request.http?.headers.set('authorization', auth);
    if (gatewaySecret) request.http?.headers.set(GATEWAY_SECRET_HEADER, gatewaySecret);
  }
}

const gateway = new ApolloGateway({
  supergraphSdl,
  buildService: ({ url }) => new ForwardAuth(values.keepalive ? { url, fetcher: keepAliveFetcher } : { url }),
});
const server = new ApolloServer<Ctx>({ gateway });
const { url } = await startStandaloneServer(server, {
  listen: { port: Number(values.port), host: '127.0.0.1' },
  context: async ({ req }) => ({ authorization: req.headers.authorization }),
});
console.log(`apollo gateway (${values.keepalive ? 'keep-alive' : 'stock'}) at ${url}`);
installGracefulExit(() => server.stop());

/**
 * The mercurius question (bench/README.md): the SAME coordination subgraph (schema from schemas/coordination.graphql, the
 * resolvers coordinationSubgraph exports, the same database handle and the same token verifier) served by
 *   - runtime:            our runtime's subgraph server (node:http; parse+validate cache, limits, ALS correlation id)
 *   - mercurius:          Fastify 5 + mercurius 16, schema built by @apollo/subgraph (Federation 2 `_service`/`_entities`)
 *   - mercurius-jit:      the same with graphql-jit compilation after the first request (`jit: 1`)
 * and, if it can take our Federation 2 SDL, @mercuriusjs/federation (it builds its own, Federation 1, schema).
 * plus a bench-only prototype, runtime-batched: the runtime server with Room.messages loaded for all rooms of a
 * request in one statement (a per-request loader + LATERAL join) instead of one transaction per room, to show what
 * the N+1 costs on PGlite (the subgraph's real code is untouched).
 * All variants check the same document limits and build the same SubgraphContext; they share the process (and the
 * PGlite instance: an embedded database cannot be shared across processes) and are measured one after another.
 */
import { buildSubgraphSchema } from '@apollo/subgraph';
import Fastify from 'fastify';
import { parse, type GraphQLSchema } from 'graphql';
import { readFileSync } from 'node:fs';
import mercurius from 'mercurius';
import { mercuriusFederationPlugin } from '@mercuriusjs/federation';
import {
  CursorCodec,
  checkDocumentLimits,
  loaderFor,
  pageRequest,
  requireAuth,
  toConnection,
  withTenant,
  correlationIdFrom,
  createSubgraphServer,
  createTokenVerifier,
  withCorrelationId,
  type Config,
  type Database,
  type Logger,
  type SubgraphContext,
} from '@agentgraph/runtime';
import { coordinationSubgraph } from '@agentgraph/coordination';
import { freePort } from '../lib/proc.js';

export interface ServerVariant {
  name: string;
  url: string | null;
  /** Why this variant could not be served (e.g. @mercuriusjs/federation and the Federation 2 SDL). */
  error?: string;
  description: string;
  close?: () => Promise<void>;
}

export async function startCoordinationServers(deps: {
  config: Config;
  db: Database;
  log: Logger;
}): Promise<ServerVariant[]> {
  const { config, db, log } = deps;
  const sdl = readFileSync(coordinationSubgraph.schemaFile, 'utf8');
  const verifyToken = createTokenVerifier({
    issuer: config.tokenIssuer,
    audience: config.tokenAudience,
    keys: config.jwksUrl,
  });
  const cursors = new CursorCodec(config.cursorSecret);
  const freshSchema = (): GraphQLSchema =>
    buildSubgraphSchema({ typeDefs: parse(sdl), resolvers: coordinationSubgraph.resolvers });
  const variants: ServerVariant[] = [];

  // (a) our runtime's server.
  {
    const { listen } = createSubgraphServer({
      name: 'coordination',
      schema: freshSchema(),
      config,
      db,
      log,
      verifyToken,
    });
    const running = await listen(await freePort(), config.host);
    variants.push({
      name: 'runtime',
      url: `${running.url}/graphql`,
      description: 'runtime/src/subgraph-server.ts on node:http (graphql-js execute)',
      close: () => running.close(),
    });
  }

  // (a') prototype: the same server, Room.messages batched per request.
  {
    const { listen } = createSubgraphServer({
      name: 'coordination',
      schema: buildSubgraphSchema({ typeDefs: parse(sdl), resolvers: batchedResolvers() }),
      config,
      db,
      log,
      verifyToken,
    });
    const running = await listen(await freePort(), config.host);
    variants.push({
      name: 'runtime-batched',
      url: `${running.url}/graphql`,
      description:
        'PROTOTYPE: runtime server, Room.messages of all rooms in one LATERAL query per request (bench/src/procs/coordination-servers.ts)',
      close: () => running.close(),
    });
  }

  // (b) Fastify + mercurius, with and without graphql-jit.
  const mercuriusContext = async (request: { headers: Record<string, string | string[] | undefined> }) => {
    const signal = new AbortController().signal;
    const ctx: Omit<SubgraphContext, 'log'> & { log: Logger } = {
      auth: await verifyToken(request.headers['authorization'] as string | undefined),
      db,
      log,
      config,
      cursors,
      correlationId: correlationIdFrom(request.headers['x-correlation-id']),
      responseExtensions: {},
      origin: { ip: null, peer: null },
      signal,
    };
    return ctx;
  };
  for (const jit of [0, 1]) {
    const app = Fastify({ logger: false, bodyLimit: config.limits.maxBodyBytes });
    // Same per-request async context as our server (the logger reads the correlation id from it).
    app.addHook('onRequest', (req, reply, done) => {
      const id = correlationIdFrom(req.headers['x-correlation-id']);
      reply.header('x-correlation-id', id);
      withCorrelationId(id, done);
    });
    await app.register(mercurius, {
      schema: freshSchema(),
      path: '/graphql',
      graphiql: false,
      ...(jit ? { jit } : {}),
      context: mercuriusContext as never,
    });
    app.graphql.addHook('preExecution', (_schema, document, context, variables) => {
      checkDocumentLimits(
        document,
        (context as { reply?: { request?: { body?: { operationName?: string } } } }).reply?.request?.body
          ?.operationName,
        variables,
        config.limits,
      );
    });
    await app.listen({ port: await freePort(), host: config.host });
    const addr = app.server.address() as { port: number };
    variants.push({
      name: jit ? 'mercurius-jit' : 'mercurius',
      url: `http://${config.host}:${addr.port}/graphql`,
      description: jit
        ? 'Fastify 5 + mercurius 16, jit: 1 (graphql-jit after the first request), schema from @apollo/subgraph'
        : 'Fastify 5 + mercurius 16 (graphql-js execute, LRU parse/validate cache), schema from @apollo/subgraph',
      close: () => app.close(),
    });
  }

  // (c) @mercuriusjs/federation with the Federation 2 SDL as it is in schemas/.
  {
    const app = Fastify({ logger: false });
    try {
      await app.register(mercuriusFederationPlugin, {
        schema: sdl,
        resolvers: coordinationSubgraph.resolvers,
        path: '/graphql',
        graphiql: false,
        context: mercuriusContext as never,
      });
      await app.listen({ port: await freePort(), host: config.host });
      const addr = app.server.address() as { port: number };
      variants.push({
        name: 'mercurius-federation',
        url: `http://${config.host}:${addr.port}/graphql`,
        description: '@mercuriusjs/federation with schemas/coordination.graphql as is',
        close: () => app.close(),
      });
    } catch (err) {
      await app.close().catch(() => undefined);
      variants.push({
        name: 'mercurius-federation',
        url: null,
        description: '@mercuriusjs/federation with schemas/coordination.graphql as is',
        error: (err as Error).message,
      });
    }
  }
  return variants;
}

interface MessageRow {
  id: string;
  room_id: string;
  seq: number;
  body: string;
  author: string;
  created_at: Date | string;
}

/**
 * coordinationSubgraph's resolvers with Room.messages (forward pages) batched: the rooms of one request that ask for
 * the same page (same `after` position and size) are read in one statement. Backward pages keep the original path.
 * Same scope, cursors and connection shape as the original resolver (schemas/coordination.graphql, resolvers.ts).
 */
function batchedResolvers() {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const original = coordinationSubgraph.resolvers as any;
  return {
    ...original,
    Room: {
      ...original.Room,
      async messages(
        room: { id: string },
        args: Record<string, unknown>,
        ctx: SubgraphContext,
        info: unknown,
      ) {
        const auth = requireAuth(ctx.auth);
        const scope = `Room.messages:${auth.tenantId}:${room.id}`;
        const req = pageRequest(ctx.cursors, scope, args, {
          maxPageSize: ctx.config.limits.maxPageSize,
          defaultPageSize: 20,
          allowBackward: true,
        });
        if (req.direction !== 'forward') return original.Room.messages(room, args, ctx, info);
        const from = req.from ? Number(req.from[0]) : 0;
        const limit = req.limit + 1;
        const loader = loaderFor(
          ctx,
          `bench.messagesAfter:${from}:${limit}`,
          async (roomIds: readonly string[]) => {
            const r = await withTenant(ctx.db, auth, (tx) =>
              tx.query<MessageRow>(
                `SELECT m.id, m.room_id, m.seq, m.body, m.author, m.created_at
                 FROM unnest($1::uuid[]) AS r(id)
                 CROSS JOIN LATERAL (
                   SELECT id, room_id, seq, body, author, created_at FROM coordination.messages
                    WHERE room_id = r.id AND seq > $2 ORDER BY seq ASC LIMIT $3) m`,
                [roomIds, from, limit],
              ),
            );
            const byRoom = new Map<string, MessageRow[]>(roomIds.map((id) => [id, []]));
            for (const row of r.rows) byRoom.get(row.room_id)?.push(row);
            return byRoom;
          },
        );
        const rows = ((await loader.load(room.id)) ?? []).map((row) => ({
          id: row.id,
          roomId: row.room_id,
          seq: Number(row.seq),
          body: row.body,
          author: row.author,
          createdAt: (row.created_at instanceof Date
            ? row.created_at
            : new Date(row.created_at)
          ).toISOString(),
        }));
        return toConnection(ctx.cursors, scope, req, rows, (m) => [m.seq]);
      },
    },
  };
}

/**
 * The subgraph server over real HTTP on loopback, on a PostgreSQL driver whose server is gone (a closed loopback port:
 * every call fails the way `pg` fails during an outage): a resolver's failed query answers SERVICE_UNAVAILABLE with
 * retryAfterMs on /graphql and in a stream event, not INTERNAL_SERVER_ERROR; a route that throws it answers 503 with
 * Retry-After; /readyz answers 503. And text the database cannot store (U+0000, unpaired surrogates) in any argument
 * is refused with BAD_USER_INPUT naming the argument path before a resolver runs, on /graphql and /graphql/stream.
 */
import { createServer } from 'node:net';
import {
  GraphQLBoolean,
  GraphQLInputObjectType,
  GraphQLInt,
  GraphQLNonNull,
  GraphQLObjectType,
  GraphQLSchema,
  GraphQLString,
} from 'graphql';
import { createClient, type Client, type ExecutionResult } from 'graphql-sse';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TokenVerifier } from '../src/auth.js';
import { loadConfig } from '../src/config.js';
import { DATABASE_RETRY_AFTER_MS } from '../src/db/errors.js';
import { openPostgres } from '../src/db/postgres.js';
import type { Database, DatabaseHandle } from '../src/db/types.js';
import { createLogger } from '../src/log.js';
import { createSubgraphServer, type RunningServer, type SubgraphContext } from '../src/subgraph-server.js';

/** Arguments the resolvers were called with: a refused request must not reach them. */
const calls: unknown[] = [];

const SaveInput = new GraphQLInputObjectType({
  name: 'SaveInput',
  fields: {
    name: { type: new GraphQLNonNull(GraphQLString) },
    tags: { type: new GraphQLNonNull(GraphQLString) },
  },
});

const queryDb = async (_root: unknown, _args: unknown, ctx: SubgraphContext) => {
  const r = await ctx.db.query<{ n: number }>('SELECT 1 AS n');
  return r.rows[0]!.n;
};

const schema = new GraphQLSchema({
  query: new GraphQLObjectType({
    name: 'Query',
    fields: {
      rows: { type: new GraphQLNonNull(GraphQLInt), resolve: queryDb },
      echo: {
        type: GraphQLString,
        args: { text: { type: new GraphQLNonNull(GraphQLString) }, first: { type: GraphQLInt } },
        resolve: (_root, args: { text: string }) => (calls.push(args), args.text),
      },
    },
  }),
  mutation: new GraphQLObjectType({
    name: 'Mutation',
    fields: {
      save: {
        type: GraphQLBoolean,
        args: { input: { type: new GraphQLNonNull(SaveInput) } },
        resolve: (_root, args) => (calls.push(args), true),
      },
    },
  }),
  subscription: new GraphQLObjectType({
    name: 'Subscription',
    fields: {
      rowsLater: {
        type: GraphQLInt,
        args: { name: { type: GraphQLString }, first: { type: GraphQLInt } },
        subscribe: async function* (_root: unknown, args: unknown) {
          calls.push(args);
          yield 1;
        },
        // Each event is resolved like a query's root field: here it asks the database, which is gone.
        resolve: queryDb,
      },
    },
  }),
});

const verifyToken: TokenVerifier = async (authorization) =>
  authorization
    ? {
        tenantId: '00000000-0000-4000-8000-000000000001',
        principalId: 'tester',
        role: 'OWNER',
        scopes: ['api:read', 'api:write'],
        tokenId: 't',
        expiresAt: Math.floor(Date.now() / 1000) + 3600,
      }
    : null;

let handle: DatabaseHandle;
let running: RunningServer;
const clients: Client[] = [];
const warnings: string[] = [];
const errors: string[] = [];

beforeAll(async () => {
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const port = (probe.address() as { port: number }).port;
  await new Promise((r) => probe.close(r));
  handle = await openPostgres(
    `postgres://agentgraph@127.0.0.1:${port}/agentgraph`,
    { size: 2, idleSeconds: 300 },
    'agentgraph_app',
  );
  const db: Database = await handle.app();
  const config = loadConfig({ DATA_DIR: 'memory://', LOG_LEVEL: 'warn', TOKEN_AUDIENCE: 'agentgraph' });
  const log = createLogger(
    { service: 'db-test' },
    { level: 'warn', write: (line) => (line.includes('"level":"error"') ? errors : warnings).push(line) },
  );
  running = await createSubgraphServer({
    name: 'stub',
    schema,
    config,
    db,
    log,
    verifyToken,
    routes: { '/db-route': async () => void (await db.query('SELECT 1')) },
  }).listen(0, '127.0.0.1');
});

afterAll(async () => {
  for (const c of clients) c.dispose();
  await running?.close();
  await handle?.close();
});

async function post(path: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${running.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer t', ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as any };
}

describe('subgraph server while the database is unreachable', () => {
  it('answers a query whose resolver failed with SERVICE_UNAVAILABLE and retryAfterMs, not a 500', async () => {
    const r = await post('/graphql', { query: '{ rows }' });
    expect(r.status).toBe(200); // a field error: the gateway gives a response without data its status (503)
    expect(r.body.data).toBeNull();
    expect(r.body.errors).toHaveLength(1);
    expect(r.body.errors[0].path).toEqual(['rows']);
    expect(r.body.errors[0].extensions).toEqual({
      code: 'SERVICE_UNAVAILABLE',
      retryAfterMs: DATABASE_RETRY_AFTER_MS,
    });
    expect(r.body.errors[0].message).not.toMatch(/ECONNREFUSED|127\.0\.0\.1/);
  });

  it('codes a stream event the same way', async () => {
    const c = createClient({
      url: `${running.url}/graphql/stream`,
      headers: { authorization: 'Bearer t' },
      retryAttempts: 0,
    });
    clients.push(c);
    const event = await new Promise<ExecutionResult>((resolve, reject) => {
      c.subscribe(
        { query: 'subscription { rowsLater }' },
        { next: resolve, error: reject, complete: () => {} },
      );
    });
    expect(event.errors?.[0]?.extensions).toEqual({
      code: 'SERVICE_UNAVAILABLE',
      retryAfterMs: DATABASE_RETRY_AFTER_MS,
    });
  });

  it('answers a request-level failure 503 with Retry-After, and /readyz 503', async () => {
    const r = await post('/db-route', {});
    expect(r.status).toBe(503);
    expect(r.headers.get('retry-after')).toBe(String(DATABASE_RETRY_AFTER_MS / 1000));
    expect(r.body.errors[0].extensions).toMatchObject({
      code: 'SERVICE_UNAVAILABLE',
      retryAfterMs: DATABASE_RETRY_AFTER_MS,
    });
    const ready = await fetch(`${running.url}/readyz`);
    expect(ready.status).toBe(503);
  });

  it('logs the failures as warnings, not as internal errors', () => {
    expect(errors).toEqual([]);
    expect(warnings.some((l) => l.includes('database call failed'))).toBe(true);
  });
});

describe('subgraph server: text the database cannot store', () => {
  const SAVE = 'mutation S($input: SaveInput!) { save(input: $input) }';

  it('refuses a NUL in a variable or a literal with BAD_USER_INPUT naming the field; the resolver never runs', async () => {
    calls.length = 0;
    const viaVariable = await post('/graphql', {
      query: SAVE,
      variables: { input: { name: 'ok', tags: 'secret\u0000tail' } },
    });
    const viaLiteral = await post('/graphql', {
      query: 'mutation { save(input: { name: "a\\u0000b", tags: "t" }) }',
    });
    for (const [r, field] of [
      [viaVariable, 'input.tags'],
      [viaLiteral, 'input.name'],
    ] as const) {
      expect(r.status).toBe(400);
      expect(r.body.errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', field });
      expect(JSON.stringify(r.body)).not.toContain('secret');
      expect(JSON.stringify(r.body)).not.toContain('tail');
    }
    // An unpaired surrogate, and a query argument.
    const surrogate = await post('/graphql', {
      query: 'query E($t: String!) { echo(text: $t) }',
      variables: { t: '\ud800' },
    });
    expect(surrogate.status).toBe(400);
    expect(surrogate.body.errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'text' });
    expect(calls).toEqual([]);
    // Good text runs.
    const ok = await post('/graphql', { query: SAVE, variables: { input: { name: 'Ada 😀', tags: 't' } } });
    expect(ok.body).toEqual({ data: { save: true } });
  });

  it('applies the page-size cap to a variable left to its default, on /graphql and /graphql/stream', async () => {
    calls.length = 0;
    const q = await post('/graphql', { query: 'query E($n: Int = 5000) { echo(text: "x", first: $n) }' });
    expect(q.status).toBe(400);
    expect(q.body.errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', limit: 'maxPageSize' });
    const s = await post(
      '/graphql/stream',
      { query: 'subscription R($n: Int = 5000) { rowsLater(first: $n) }' },
      { accept: 'text/event-stream' },
    );
    expect(s.status).toBe(400);
    expect(s.body.errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', limit: 'maxPageSize' });
    expect(calls).toEqual([]);
    // The same document with a value within the cap runs.
    const fine = await post('/graphql', {
      query: 'query E($n: Int = 5000) { echo(text: "x", first: $n) }',
      variables: { n: 5 },
    });
    expect(fine.body).toEqual({ data: { echo: 'x' } });
  });

  it('refuses it on /graphql/stream before the subscription starts', async () => {
    calls.length = 0;
    const r = await post(
      '/graphql/stream',
      { query: 'subscription R($n: String) { rowsLater(name: $n) }', variables: { n: 'x\u0000' } },
      { accept: 'text/event-stream' },
    );
    expect(r.status).toBe(400);
    expect(r.body.errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'name' });
    expect(calls).toEqual([]);
  });
});

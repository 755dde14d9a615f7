/**
 * Streams of the subgraph server over real HTTP on loopback, with graphql-sse's own client in both of its modes: each
 * event goes through the field's `resolve` (the server maps the source's events itself), operations of one reservation
 * stay apart, a reservation operation's context keeps the caller's Authorization only for its subscribe resolver, and
 * a request naming an operation the document lacks is refused before anything is watched. Every wait awaits an event.
 */
import {
  GraphQLInt,
  GraphQLNonNull,
  GraphQLObjectType,
  GraphQLSchema,
  GraphQLString,
  type GraphQLFieldConfig,
} from 'graphql';
import { createClient, type Client, type ExecutionResult } from 'graphql-sse';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TokenVerifier } from '../src/auth.js';
import { loadConfig } from '../src/config.js';
import type { Database } from '../src/db/types.js';
import { createLogger } from '../src/log.js';
import {
  STREAM_TOKEN_HEADER,
  createSubgraphServer,
  type RunningServer,
  type SubgraphContext,
} from '../src/subgraph-server.js';
import type { AuthContext } from '../src/tenancy.js';

/** Per stream name: the source's pushes (the test decides when a value comes), and who waits for one. */
const feeds = new Map<string, (n: number) => void>();
const feedWaiters = new Map<string, () => void>();
const seenAtSubscribe: Array<string | undefined> = [];

/** A source that yields what the test pushes for `name`, and ends when its signal aborts. */
async function* feed(name: string, signal: AbortSignal): AsyncGenerator<number> {
  const queue: number[] = [];
  let wake: (() => void) | null = null;
  feeds.set(name, (n) => {
    queue.push(n);
    wake?.();
  });
  feedWaiters.get(name)?.();
  const aborted = () => wake?.();
  signal.addEventListener('abort', aborted);
  try {
    while (!signal.aborted) {
      if (!queue.length) await new Promise<void>((r) => (wake = r));
      while (queue.length) yield queue.shift()!;
    }
  } finally {
    signal.removeEventListener('abort', aborted);
  }
}

const ticks: GraphQLFieldConfig<number, SubgraphContext, { name: string }> = {
  type: GraphQLInt,
  args: { name: { type: new GraphQLNonNull(GraphQLString) } },
  subscribe: (_root, args, ctx) => {
    seenAtSubscribe.push(ctx.authorization);
    return feed(args.name, ctx.signal);
  },
  // Each event is resolved like a query's root field: the payload is the root value.
  resolve: (n: number) => n * 10,
};

const authorizationOnEvent: GraphQLFieldConfig<number, SubgraphContext, { name: string }> = {
  type: GraphQLString,
  args: { name: { type: new GraphQLNonNull(GraphQLString) } },
  subscribe: (_root, args, ctx) => feed(args.name, ctx.signal),
  resolve: (_n, _args, ctx) => ctx.authorization ?? 'none',
};

const schema = new GraphQLSchema({
  query: new GraphQLObjectType({ name: 'Query', fields: { ok: { type: GraphQLString } } }),
  subscription: new GraphQLObjectType({
    name: 'Subscription',
    fields: { ticks, authorizationOnEvent } as never,
  }),
});

/** While set, checking the token `Bearer slow` waits for it (an operation cancelled while its context is made). */
let slowCheck: { reached: () => void; release: Promise<void> } | null = null;

const verifyToken: TokenVerifier = async (authorization) => {
  if (authorization === 'Bearer slow' && slowCheck) {
    slowCheck.reached();
    await slowCheck.release;
  }
  return verifyNow(authorization);
};

const verifyNow = (authorization: string | undefined) =>
  authorization
    ? ({
        tenantId: '00000000-0000-4000-8000-000000000001',
        principalId: authorization.slice(7),
        role: 'OWNER',
        scopes: ['api:read', 'api:write'],
        tokenId: authorization.slice(7),
        expiresAt: Math.floor(Date.now() / 1000) + 3600,
      } satisfies AuthContext)
    : null;

let running: RunningServer;
const clients: Client[] = [];

beforeAll(async () => {
  const config = loadConfig({ DATA_DIR: 'memory://', LOG_LEVEL: 'warn', TOKEN_AUDIENCE: 'agentgraph' });
  const db = { driver: 'pglite', ping: async () => undefined } as unknown as Database;
  const log = createLogger({ service: 'stream-test' }, { level: 'warn', write: () => undefined });
  running = await createSubgraphServer({ name: 'stub', schema, config, db, log, verifyToken }).listen(
    0,
    '127.0.0.1',
  );
});

afterAll(async () => {
  for (const c of clients) c.dispose();
  await running?.close();
});

function client(singleConnection: boolean, token: string): Client {
  const c = createClient({
    url: `${running.url}/graphql/stream`,
    singleConnection,
    headers: { authorization: `Bearer ${token}` },
    retryAttempts: 0,
  });
  clients.push(c);
  return c;
}

/** One subscription: its results and end, with a promise for the next change. */
function subscribe(c: Client, query: string, variables: Record<string, unknown>, operationName?: string) {
  const results: ExecutionResult[] = [];
  let ended: 'complete' | unknown = null;
  let changed = () => undefined as void;
  const change = () => new Promise<void>((r) => (changed = r));
  const dispose = c.subscribe(
    { query, variables, ...(operationName ? { operationName } : {}) },
    {
      next: (r) => (results.push(r as ExecutionResult), changed()),
      complete: () => ((ended = 'complete'), changed()),
      error: (e) => ((ended = e), changed()),
    },
  );
  const until = async (done: () => boolean) => {
    while (!done()) await change();
  };
  return { results, ended: () => ended, until, dispose };
}

/** Resolves once the source of stream `name` is running (its subscribe resolver ran and it was pulled). */
async function fed(name: string): Promise<(n: number) => void> {
  if (!feeds.has(name)) await new Promise<void>((r) => feedWaiters.set(name, r));
  return feeds.get(name)!;
}

describe.each([
  ['single connection (reservation)', true],
  ['distinct connections', false],
])('subgraph server streams, %s', (mode, singleConnection) => {
  it('maps each event through the field resolver, and keeps the operations of one client apart', async () => {
    const c = client(singleConnection, 'alice');
    const q = 'subscription T($name: String!) { ticks(name: $name) }';
    const a = subscribe(c, q, { name: `${mode}-a` });
    const b = subscribe(c, q, { name: `${mode}-b` });
    const pushA = await fed(`${mode}-a`);
    const pushB = await fed(`${mode}-b`);
    pushA(1);
    pushB(7);
    pushA(2);
    await a.until(() => a.results.length === 2);
    await b.until(() => b.results.length === 1);
    expect(a.results).toEqual([{ data: { ticks: 10 } }, { data: { ticks: 20 } }]);
    expect(b.results).toEqual([{ data: { ticks: 70 } }]);
    a.dispose();
    pushB(8);
    await b.until(() => b.results.length === 2);
    expect(b.results[1]).toEqual({ data: { ticks: 80 } });
    b.dispose();
  });

  it('gives the subscribe resolver the caller’s Authorization; events see it only in distinct-connection mode', async () => {
    const c = client(singleConnection, 'bob');
    seenAtSubscribe.length = 0;
    const s = subscribe(c, 'subscription W($name: String!) { ticks(name: $name) }', { name: `${mode}-w` });
    await fed(`${mode}-w`);
    expect(seenAtSubscribe).toEqual(['Bearer bob']);
    s.dispose();

    const e = subscribe(c, 'subscription E($name: String!) { authorizationOnEvent(name: $name) }', {
      name: `${mode}-e`,
    });
    (await fed(`${mode}-e`))(1);
    await e.until(() => e.results.length === 1);
    // A reservation operation outlives its request; its context lets the header go once subscribed.
    expect(e.results[0]).toEqual({
      data: { authorizationOnEvent: singleConnection ? 'none' : 'Bearer bob' },
    });
    e.dispose();
  });

  it('refuses an operation name the document does not define, with 400', async () => {
    const c = client(singleConnection, 'carol');
    const s = subscribe(
      c,
      'subscription T($name: String!) { ticks(name: $name) }',
      { name: `${mode}-x` },
      'Missing',
    );
    await s.until(() => s.ended() !== null);
    expect(s.ended()).not.toBe('complete');
    expect(String(s.ended())).toMatch(/400|Unable to detect operation AST/);
    expect(feeds.has(`${mode}-x`)).toBe(false);
  });
});

describe('subgraph server reservations', () => {
  const stream = () => `${running.url}/graphql/stream`;
  async function reserve(): Promise<{ token: string; events: Response }> {
    const put = await fetch(stream(), { method: 'PUT', headers: { authorization: 'Bearer dora' } });
    expect(put.status).toBe(201);
    const token = await put.text();
    const events = await fetch(stream(), {
      headers: { accept: 'text/event-stream', [STREAM_TOKEN_HEADER]: token },
    });
    expect(events.status).toBe(200);
    return { token, events };
  }
  const operation = (token: string, id: string, name: string, authorization: string) =>
    fetch(stream(), {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization, [STREAM_TOKEN_HEADER]: token },
      body: JSON.stringify({
        query: 'subscription T($name: String!) { ticks(name: $name) }',
        variables: { name },
        extensions: { operationId: id },
      }),
    });
  const cancel = (token: string, id: string) =>
    fetch(`${stream()}?operationId=${id}`, { method: 'DELETE', headers: { [STREAM_TOKEN_HEADER]: token } });

  it('counts an operation while it runs, and leaves nothing behind for one cancelled before it ran', async () => {
    const { token, events } = await reserve();
    expect(running.openStreams()).toBe(0);
    expect((await operation(token, 'op-1', 'res-1', 'Bearer dora')).status).toBe(202);
    await fed('res-1');
    expect(running.openStreams()).toBe(1);
    expect((await cancel(token, 'op-1')).status).toBe(200);
    await expect.poll(() => running.openStreams()).toBe(0);

    // Cancelled while its context is being made: graphql-sse answers 204 and never runs it.
    let reached = () => undefined as void;
    const atCheck = new Promise<void>((r) => (reached = r));
    let release = () => undefined as void;
    slowCheck = { reached, release: new Promise<void>((r) => (release = r)) };
    const pending = operation(token, 'op-2', 'res-2', 'Bearer slow');
    await atCheck;
    expect((await cancel(token, 'op-2')).status).toBe(200);
    release();
    expect((await pending).status).toBe(204);
    slowCheck = null;
    expect(feeds.has('res-2')).toBe(false);
    expect(running.openStreams()).toBe(0);
    await events.body?.cancel();
  });
});

/**
 * graphql-sse's single-connection mode on the gateway's /graphql/stream (stream-reservations.ts), with the official
 * graphql-sse client (`singleConnection: true`): a reservation, one event stream, many operations on it; and what
 * the spec leaves to the server: a reservation is its principal's alone, limits, expiry, shutdown.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createClient, type Client } from 'graphql-sse';
import type { ExecutionResult } from 'graphql';
import { startHarness, type Harness } from './harness.js';

const TICKS = 'subscription S($from: Int) { ticks(from: $from) { n } }';
type Tick = { ticks: { n: number } };

let h: Harness | undefined;
const clients: Client<true>[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.dispose();
  await h?.close();
  h = undefined;
});

function singleClient(url: string, token: string): Client<true> {
  const client = createClient({
    url,
    singleConnection: true,
    retryAttempts: 0,
    headers: { authorization: `Bearer ${token}` },
  });
  clients.push(client);
  return client;
}

/** One subscription on a client: its events in order, its end, and how to stop it. */
function follow(client: Client<true>, variables: Record<string, unknown>) {
  const events: ExecutionResult<Tick>[] = [];
  let wake: (() => void) | null = null;
  let outcome: 'complete' | Error | null = null;
  const stop = client.subscribe<Tick>(
    { query: TICKS, variables },
    {
      next: (v) => {
        events.push(v as ExecutionResult<Tick>);
        wake?.();
      },
      error: (e) => {
        outcome = e instanceof Error ? e : new Error(JSON.stringify(e));
        wake?.();
      },
      complete: () => {
        outcome = 'complete';
        wake?.();
      },
    },
  );
  const until = async (ok: () => boolean) => {
    while (!ok()) {
      if (outcome instanceof Error) throw outcome;
      await new Promise<void>((r) => (wake = r));
    }
  };
  return {
    events,
    stop,
    async next(): Promise<ExecutionResult<Tick>> {
      const seen = events.length;
      await until(() => events.length > seen);
      return events[seen]!;
    },
    async nth(i: number): Promise<ExecutionResult<Tick>> {
      await until(() => events.length > i);
      return events[i]!;
    },
    async ended(): Promise<void> {
      await until(() => outcome === 'complete');
    },
  };
}

async function put(url: string, token?: string): Promise<Response> {
  return fetch(url, {
    method: 'PUT',
    headers: token ? { authorization: `Bearer ${token}` } : {},
  });
}

describe.each([
  ['over one shared upstream connection', true],
  ['with a connection per stream upstream', false],
])('single-connection mode through the gateway (%s)', (_name, multiplex) => {
  it('carries many subscriptions on one reservation and one event stream, each with its own events and end', async () => {
    h = await startHarness({}, { streamMultiplex: multiplex });
    const client = singleClient(`${h.url}/graphql/stream`, await h.token());
    // `from` replays the ticks up to it first: a gets 1, b gets 1 and 2.
    const a = follow(client, { from: 1 });
    const b = follow(client, { from: 2 });
    expect((await a.nth(0)).data?.ticks.n).toBe(1);
    expect((await b.nth(1)).data?.ticks.n).toBe(2);
    await h.ticks.activeBecomes(2);
    // One event stream for both: the gateway counts one open stream.
    expect(h.gateway.openStreams).toBe(1);
    h.ticks.push(2);
    expect((await a.nth(1)).data?.ticks.n).toBe(2);
    expect((await b.nth(2)).data?.ticks.n).toBe(2);
    // Stopping one (DELETE ?operationId=) ends it upstream; the other goes on.
    a.stop();
    await h.ticks.activeBecomes(1);
    h.ticks.push(3);
    expect((await b.nth(3)).data?.ticks.n).toBe(3);
    expect(a.events.map((e) => e.data?.ticks.n)).toEqual([1, 2]);
    expect(b.events.map((e) => e.data?.ticks.n)).toEqual([1, 2, 2, 3]);
    // The subgraph completing it reaches the client as `complete` for that operation.
    h.ticks.completeAll();
    await b.ended();
    await h.ticks.activeBecomes(0);
  });
});

describe('single-connection mode: the reservation', () => {
  it('needs an access token to be made, and answers 201 with a token as text', async () => {
    h = await startHarness();
    const url = `${h.url}/graphql/stream`;
    const anonymous = await put(url);
    expect(anonymous.status).toBe(401);
    expect(((await anonymous.json()) as any).errors[0].extensions.code).toBe('UNAUTHENTICATED');
    const made = await put(url, await h.token());
    expect(made.status).toBe(201);
    expect(made.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(made.headers.get('x-correlation-id')).toBeTruthy();
    expect(await made.text()).toMatch(/^[A-Za-z0-9_-]{32}$/);
  });

  it("is its principal's alone: another user's token cannot open its event stream, start or stop its operations", async () => {
    h = await startHarness();
    const url = `${h.url}/graphql/stream`;
    const tenantId = '4f1c7a8e-0000-4000-8000-000000000001';
    const alice = await h.token({ sub: 'alice', tenantId });
    const mallory = await h.token({ sub: 'mallory', tenantId });
    const otherTenant = await h.token({ sub: 'alice', tenantId: '4f1c7a8e-0000-4000-8000-000000000002' });
    const reservation = await (await put(url, alice)).text();
    for (const intruder of [mallory, otherTenant]) {
      const stream = await fetch(url, {
        headers: {
          authorization: `Bearer ${intruder}`,
          accept: 'text/event-stream',
          'x-graphql-event-stream-token': reservation,
        },
      });
      const refusal = (await stream.json()) as any;
      expect([stream.status, refusal.errors[0].extensions.code]).toEqual([404, 'NOT_FOUND']);
      const start = await fetch(url, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${intruder}`,
          'content-type': 'application/json',
          'x-graphql-event-stream-token': reservation,
        },
        body: JSON.stringify({ query: TICKS, extensions: { operationId: 'x' } }),
      });
      expect(start.status).toBe(404);
    }
    // The reservation token alone is no credential either.
    const tokenOnly = await fetch(`${url}?token=${reservation}`, {
      headers: { accept: 'text/event-stream' },
    });
    expect(tokenOnly.status).toBe(401);
    expect(h.ticks.active).toBe(0);
    // Its owner, with a fresh token of the same principal (a refresh), still can.
    const client = singleClient(url, await h.token({ sub: 'alice', tenantId }));
    const s = follow(client, { from: 1 });
    expect((await s.next()).data?.ticks.n).toBe(1);
  });

  it('refuses a second event stream on one reservation (409), an operation without operationId (400), a repeated one (409)', async () => {
    h = await startHarness();
    const url = `${h.url}/graphql/stream`;
    const token = await h.token();
    const reservation = await (await put(url, token)).text();
    const headers = { authorization: `Bearer ${token}`, 'x-graphql-event-stream-token': reservation };
    const first = await fetch(url, { headers: { ...headers, accept: 'text/event-stream' } });
    expect(first.status).toBe(200);
    expect(first.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const second = await fetch(url, { headers: { ...headers, accept: 'text/event-stream' } });
    expect(second.status).toBe(409);
    const post = (body: unknown) =>
      fetch(url, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const noId = await post({ query: TICKS });
    expect(noId.status).toBe(400);
    expect(((await noId.json()) as any).errors[0].message).toContain('operationId');
    expect(
      (await post({ query: TICKS, variables: { from: 1 }, extensions: { operationId: 'op-1' } })).status,
    ).toBe(202);
    expect((await post({ query: TICKS, extensions: { operationId: 'op-1' } })).status).toBe(409);
    // A document error is the spec's GraphQL-over-HTTP answer, not a 202.
    const invalid = await post({ query: 'subscription { nope }', extensions: { operationId: 'op-2' } });
    expect(invalid.status).toBe(400);
    expect(((await invalid.json()) as any).errors[0].extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
    // The started operation's events arrive on the event stream, wrapped with its id.
    const reader = first.body!.getReader();
    let text = '';
    while (!text.includes('"payload"')) text += new TextDecoder().decode((await reader.read()).value);
    expect(text).toContain('event: next\ndata: {"id":"op-1","payload":{"data":{"ticks":{"n":1}}}}');
    // DELETE stops it; an unknown operation id is fine (200), a missing one is not (400).
    const del = (q: string) => fetch(`${url}${q}`, { method: 'DELETE', headers });
    expect((await del('?operationId=op-1')).status).toBe(200);
    await h.ticks.activeBecomes(0);
    while (!text.includes('event: complete')) text += new TextDecoder().decode((await reader.read()).value);
    expect(text).toContain('event: complete\ndata: {"id":"op-1"}');
    expect((await del('?operationId=unknown')).status).toBe(200);
    expect((await del('')).status).toBe(400);
    await reader.cancel();
  });

  it("relays the subgraph's refusal of an operation with its status and code, and starts nothing", async () => {
    h = await startHarness();
    const url = `${h.url}/graphql/stream`;
    const writeOnly = await h.token({ scope: 'api:write' });
    const reservation = await (await put(url, writeOnly)).text();
    const headers = { authorization: `Bearer ${writeOnly}`, 'x-graphql-event-stream-token': reservation };
    const stream = await fetch(url, { headers: { ...headers, accept: 'text/event-stream' } });
    expect(stream.status).toBe(200);
    const res = await fetch(url, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ query: TICKS, extensions: { operationId: 'a' } }),
    });
    expect(res.status).toBe(403);
    expect(((await res.json()) as any).errors[0].extensions.code).toBe('FORBIDDEN');
    expect(h.ticks.active).toBe(0);
    await stream.body!.cancel();
  });

  it('limits reservations per principal (429 RATE_LIMITED) and drops one never connected after its TTL', async () => {
    let now = 1_000_000;
    h = await startHarness(
      {},
      { streamReservations: { perPrincipal: 2, pendingTtlMs: 30_000 }, now: () => now },
    );
    const url = `${h.url}/graphql/stream`;
    const token = await h.token();
    const r1 = await (await put(url, token)).text();
    expect((await put(url, token)).status).toBe(201);
    const third = await put(url, token);
    expect(third.status).toBe(429);
    const body = (await third.json()) as any;
    expect(body.errors[0].extensions.code).toBe('RATE_LIMITED');
    expect(body.errors[0].extensions.retryAfterMs).toBe(1000);
    // Another principal has its own allowance.
    expect((await put(url, await h.token({ sub: 'someone-else' }))).status).toBe(201);
    // Never connected: after the TTL both are gone, r1 cannot be used, new ones can be made.
    now += 30_001;
    const late = await fetch(url, {
      headers: {
        authorization: `Bearer ${token}`,
        accept: 'text/event-stream',
        'x-graphql-event-stream-token': r1,
      },
    });
    expect(late.status).toBe(404);
    expect((await put(url, token)).status).toBe(201);
    expect((await put(url, token)).status).toBe(201);
  });

  it('ends with its event stream: the client leaving cancels every operation upstream', async () => {
    h = await startHarness();
    const client = singleClient(`${h.url}/graphql/stream`, await h.token());
    const a = follow(client, { from: 1 });
    const b = follow(client, { from: 1 });
    await a.next();
    await b.next();
    await h.ticks.activeBecomes(2);
    client.dispose();
    await h.ticks.activeBecomes(0);
    await expect.poll(() => h!.gateway.openStreams).toBe(0);
  });

  it('completes every operation on shutdown', async () => {
    h = await startHarness();
    const client = singleClient(`${h.url}/graphql/stream`, await h.token());
    const a = follow(client, { from: 1 });
    await a.next();
    await h.ticks.activeBecomes(1);
    const closing = h.gateway.close();
    await a.ended();
    await closing;
  });
});

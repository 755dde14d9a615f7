/**
 * How /graphql/stream reaches the subgraph: by default every stream is an operation on one shared connection
 * (graphql-sse single-connection mode, stream-mux.ts); with `streamMultiplex: false` each stream has a connection of
 * its own (stream-relay.ts). Both must look the same to clients.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from './harness.js';
import { openRaw, subscribe } from '../../test/src/sse.js';

const TICKS = 'subscription S($from: Int) { ticks(from: $from) { n } }';
type Tick = { ticks: { n: number } };

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

function connections(h: Harness): Promise<number> {
  return new Promise((resolve, reject) =>
    h.alpha.server.getConnections((err, n) => (err ? reject(err) : resolve(n))),
  );
}

describe('streams multiplexed over one connection per subgraph (default)', () => {
  it('carries many streams, each with its own events and its own end', async () => {
    h = await startHarness();
    const token = await h.token();
    const streams: Array<ReturnType<typeof subscribe<Tick>>> = [];
    for (let i = 0; i < 5; i++) {
      const s = subscribe<Tick>(`${h.url}/graphql/stream`, token, TICKS, { from: 1 });
      expect((await s.next()).data?.ticks.n).toBe(1);
      streams.push(s);
    }
    await h.ticks.activeBecomes(5);
    expect(h.gateway.openStreams).toBe(5);
    // The event stream, and one keep-alive connection that carried the short start requests one after the other.
    expect(await connections(h)).toBe(2);
    h.ticks.push(2);
    for (const s of streams) expect((await s.next()).data?.ticks.n).toBe(2);
    // One client leaves: only its operation ends upstream; the others go on.
    streams[0]!.dispose();
    await h.ticks.activeBecomes(4);
    h.ticks.push(3);
    for (const s of streams.slice(1)) expect((await s.next()).data?.ticks.n).toBe(3);
    h.ticks.completeAll();
    for (const s of streams.slice(1)) await s.ended;
    await h.ticks.activeBecomes(0);
    expect(h.gateway.openStreams).toBe(0);
  });

  it('tells every stream, with a code, when the shared connection breaks; the next stream opens a new one', async () => {
    h = await startHarness();
    const token = await h.token();
    const a = subscribe<Tick>(`${h.url}/graphql/stream`, token, TICKS, { from: 1 });
    const b = subscribe<Tick>(`${h.url}/graphql/stream`, token, TICKS, { from: 1 });
    await a.next();
    await b.next();
    h.alpha.server.closeAllConnections();
    for (const s of [a, b]) {
      const last = await s.next();
      expect(last.errors?.[0]?.extensions?.['code']).toBe('SERVICE_UNAVAILABLE');
      expect(last.errors?.[0]?.extensions?.['retryAfterMs']).toBe(1000);
      await s.ended;
    }
    expect(h.gateway.openStreams).toBe(0);
    await h.ticks.activeBecomes(0);
    expect(h.logs.some((l) => l.includes('upstream stream failed'))).toBe(true);
    const c = subscribe<Tick>(`${h.url}/graphql/stream`, token, TICKS, { from: 1 });
    expect((await c.next()).data?.ticks.n).toBe(1);
    c.dispose();
    await h.ticks.activeBecomes(0);
  });

  it('keeps a failing subscription to itself: it ends with SERVICE_UNAVAILABLE, its neighbour streams on', async () => {
    h = await startHarness();
    const token = await h.token();
    const ok = subscribe<Tick>(`${h.url}/graphql/stream`, token, TICKS, { from: 1 });
    await ok.next();
    const bad = subscribe<Tick>(`${h.url}/graphql/stream`, token, TICKS, { from: 1 });
    await bad.next();
    await h.ticks.activeBecomes(2);
    // -1 makes every open source throw; a new one then joins and must be unaffected by the others' failure.
    h.ticks.push(-1);
    for (const s of [ok, bad]) {
      const last = await s.next();
      expect(last.errors?.[0]?.extensions?.['code']).toBe('SERVICE_UNAVAILABLE');
      expect(JSON.stringify(last)).not.toContain('secret detail');
      await s.ended;
    }
    await h.ticks.activeBecomes(0);
    const next = subscribe<Tick>(`${h.url}/graphql/stream`, token, TICKS, { from: 1 });
    expect((await next.next()).data?.ticks.n).toBe(1);
    await h.ticks.activeBecomes(1);
    h.ticks.push(7);
    expect((await next.next()).data?.ticks.n).toBe(7);
    next.dispose();
    await h.ticks.activeBecomes(0);
  });

  it('answers the client only once the subgraph accepted, and relays its refusal with status and code', async () => {
    h = await startHarness();
    // The gateway checks the token; the subgraph also checks its scope (a subscription needs api:read).
    const writeOnly = await h.token({ scope: 'api:write' });
    const res = await fetch(`${h.url}/graphql/stream`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'text/event-stream',
        authorization: `Bearer ${writeOnly}`,
      },
      body: JSON.stringify({ query: TICKS }),
    });
    expect(res.status).toBe(403);
    const body = (await res.json()) as any;
    expect(body.errors[0].extensions.code).toBe('FORBIDDEN');
    expect(body.errors[0].extensions.requiredScope).toBe('api:read');
    expect(h.ticks.active).toBe(0);
    // The shared connection stays usable for others.
    const ok = subscribe<Tick>(`${h.url}/graphql/stream`, await h.token(), TICKS, { from: 1 });
    expect((await ok.next()).data?.ticks.n).toBe(1);
    ok.dispose();
    await h.ticks.activeBecomes(0);
  });
});

describe("the subgraph server's single-connection mode", () => {
  it('makes a reservation only for a caller with a valid token', async () => {
    h = await startHarness();
    const url = `${h.alpha.url}/graphql/stream`;
    const anonymous = await fetch(url, { method: 'PUT', headers: { accept: 'text/plain' } });
    expect(anonymous.status).toBe(401);
    expect(((await anonymous.json()) as any).errors[0].extensions.code).toBe('UNAUTHENTICATED');
    const forged = await fetch(url, {
      method: 'PUT',
      headers: { accept: 'text/plain', authorization: 'Bearer not-a-token' },
    });
    expect(forged.status).toBe(401);
    const ok = await fetch(url, {
      method: 'PUT',
      headers: { accept: 'text/plain', authorization: `Bearer ${await h.token()}` },
    });
    expect(ok.status).toBe(201);
    expect(await ok.text()).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('stream requests', () => {
  it('refuses a body over the limit with 413 PAYLOAD_TOO_LARGE, with or without content-length', async () => {
    h = await startHarness();
    const token = await h.token();
    const big = JSON.stringify({
      query: TICKS,
      variables: { pad: 'x'.repeat(h.config.limits.maxBodyBytes) },
    });
    const headers = {
      'content-type': 'application/json',
      accept: 'text/event-stream',
      authorization: `Bearer ${token}`,
    };
    const sized = await fetch(`${h.url}/graphql/stream`, { method: 'POST', headers, body: big });
    const chunked = await fetch(`${h.url}/graphql/stream`, {
      method: 'POST',
      headers,
      body: new ReadableStream({
        start(c) {
          c.enqueue(new TextEncoder().encode(big));
          c.close();
        },
      }),
      duplex: 'half',
    } as RequestInit);
    for (const res of [sized, chunked]) {
      expect(res.status).toBe(413);
      expect(((await res.json()) as any).errors[0].extensions.code).toBe('PAYLOAD_TOO_LARGE');
    }
    expect(h.ticks.active).toBe(0);
    const ok = subscribe<Tick>(`${h.url}/graphql/stream`, token, TICKS, { from: 1 });
    expect((await ok.next()).data?.ticks.n).toBe(1);
    ok.dispose();
    await h.ticks.activeBecomes(0);
  });
});

describe('one connection per stream (streamMultiplex: false)', () => {
  it('relays events, heartbeats, ends and failures the same way', async () => {
    h = await startHarness({}, { streamMultiplex: false });
    const token = await h.token();
    const a = subscribe<Tick>(`${h.url}/graphql/stream`, token, TICKS, { from: 1 });
    const b = subscribe<Tick>(`${h.url}/graphql/stream`, token, TICKS, { from: 1 });
    await a.next();
    await b.next();
    await h.ticks.activeBecomes(2);
    expect(await connections(h)).toBe(2);
    h.ticks.push(2);
    expect((await a.next()).data?.ticks.n).toBe(2);
    expect((await b.next()).data?.ticks.n).toBe(2);
    a.dispose();
    await h.ticks.activeBecomes(1);
    h.alpha.server.closeAllConnections();
    const last = await b.next();
    expect(last.errors?.[0]?.extensions?.['code']).toBe('SERVICE_UNAVAILABLE');
    await b.ended;
    expect(h.gateway.openStreams).toBe(0);

    const raw = await openRaw(`${h.url}/graphql/stream`, token, TICKS, { from: 1 });
    await raw.until((t) => t.includes('event: next'));
    const before = raw.text().split(':\n\n').length;
    h.timers.tick();
    await raw.until((t) => t.split(':\n\n').length > before);
    await raw.cancel();
    await h.ticks.activeBecomes(0);
    expect(h.timers.active).toBe(0);
  });
});

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startFaultProxy, type FaultProxy, type FaultProxyOptions, type Plan } from '../src/index.js';
import { post, readAll, startUpstream, type TestUpstream } from './upstream.js';

let upstream: TestUpstream;
const proxies: FaultProxy[] = [];

beforeEach(async () => {
  upstream = await startUpstream();
});
afterEach(async () => {
  for (const p of proxies.splice(0)) await p.close();
  await upstream.close();
});

async function proxy(
  options: Omit<FaultProxyOptions, 'upstream'> = {},
  base = upstream.url,
): Promise<FaultProxy> {
  const p = await startFaultProxy({ upstream: base, ...options });
  proxies.push(p);
  return p;
}

describe('fault proxy: forwarding', () => {
  it('forwards method, path, query, headers and body, and returns the upstream answer unchanged', async () => {
    const p = await proxy();
    const res = await fetch(`${p.url}/graphql?x=1`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': 'k-1', authorization: 'Bearer t' },
      body: '{"query":"{ a }"}',
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-upstream')).toBe('yes');
    expect(await res.json()).toEqual({
      data: { echo: '{"query":"{ a }"}', path: '/graphql', query: '?x=1' },
    });
    expect(upstream.seen).toHaveLength(1);
    expect(upstream.seen[0]!.headers['idempotency-key']).toBe('k-1');
    expect(upstream.seen[0]!.headers.authorization).toBe('Bearer t');
    expect(upstream.seen[0]!.headers.host).toBe(new URL(upstream.url).host);
    expect(p.stats()).toMatchObject({ requests: 1, forwarded: 1, droppedRequests: 0 });
  });

  it('keeps a base path of the upstream URL', async () => {
    const p = await proxy({}, `${upstream.url}/prefix/`);
    const res = await post(p.url, 'Op');
    expect(((await res.json()) as any).data.path).toBe('/prefix/graphql');
  });

  it('passes an SSE stream through whole when no cut is planned', async () => {
    const p = await proxy();
    const res = await fetch(`${p.url}/stream?events=3`);
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const { text, broke } = await readAll(res);
    expect(broke).toBe(false);
    expect(text.match(/data: /g)).toHaveLength(3);
  });

  it('answers 502 when the upstream does not answer', async () => {
    const dead = http.createServer();
    await new Promise<void>((r) => dead.listen(0, '127.0.0.1', r));
    const port = (dead.address() as AddressInfo).port;
    await new Promise<void>((r) => dead.close(() => r()));
    const p = await proxy({}, `http://127.0.0.1:${port}`);
    const res = await post(p.url, 'Op');
    expect(res.status).toBe(502);
    expect(p.stats().upstreamErrors).toBe(1);
  });
});

describe('fault proxy: rules', () => {
  it('drops a request: the client socket closes and the upstream never sees it', async () => {
    const p = await proxy({ rules: [{ name: 'drop', action: { type: 'dropRequest' } }] });
    await expect(post(p.url, 'PostMessage')).rejects.toThrow(TypeError);
    expect(upstream.seen).toHaveLength(0);
    expect(p.stats()).toMatchObject({ requests: 1, forwarded: 0, droppedRequests: 1, rules: { drop: 1 } });
  });

  it('drops a response after the upstream processed the request', async () => {
    const p = await proxy({ rules: [{ action: { type: 'dropResponse' } }] });
    await expect(post(p.url, 'PostMessage', { text: 'hi' })).rejects.toThrow(TypeError);
    expect(upstream.seen).toHaveLength(1);
    expect(JSON.parse(upstream.seen[0]!.body).variables).toEqual({ text: 'hi' });
    expect(p.stats()).toMatchObject({ forwarded: 1, droppedResponses: 1, rules: { rule0: 1 } });
  });

  it('answers 429 with Retry-After and a RATE_LIMITED error without forwarding', async () => {
    const p = await proxy({ rules: [{ action: { type: 'respond', status: 429, retryAfterSeconds: 7 } }] });
    const res = await post(p.url, 'PostMessage');
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('7');
    expect(res.headers.get('content-type')).toContain('application/graphql-response+json');
    expect(await res.json()).toMatchObject({
      errors: [{ extensions: { code: 'RATE_LIMITED', retryAfterMs: 7000 } }],
    });
    expect(upstream.seen).toHaveLength(0);
    expect(p.stats().rateLimited).toBe(1);
  });

  it('matches by operationName and nth: only the 2nd PostMessage is dropped, other operations pass', async () => {
    const p = await proxy({
      rules: [
        { name: 'second', match: { operationName: 'PostMessage', nth: 2 }, action: { type: 'dropRequest' } },
      ],
    });
    expect((await post(p.url, 'PostMessage', { i: 1 })).status).toBe(200);
    expect((await post(p.url, 'Other')).status).toBe(200);
    await expect(post(p.url, 'PostMessage', { i: 2 })).rejects.toThrow(TypeError);
    expect((await post(p.url, 'PostMessage', { i: 3 })).status).toBe(200);
    expect(upstream.seen.map((s) => JSON.parse(s.body).variables.i)).toEqual([1, undefined, 3]);
    expect(p.stats().rules).toEqual({ second: 1 });
  });

  it('nth with times fires on that many consecutive matches; method and path narrow the match', async () => {
    const p = await proxy({
      rules: [
        {
          match: { method: 'POST', path: '/graphql', nth: 2 },
          times: 2,
          action: { type: 'respond', status: 503, retryAfterSeconds: 2 },
        },
      ],
    });
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await post(p.url, 'Op', { i })).status);
    statuses.push((await fetch(`${p.url}/graphql`)).status); // GET: not matched
    expect(statuses).toEqual([200, 503, 503, 200, 200]);
    expect(p.stats().unavailable).toBe(2);
  });

  it('a pass rule shields matching requests from random faults', async () => {
    const p = await proxy({
      faults: { dropRequest: 1 },
      rules: [{ match: { operationName: 'Safe' }, action: { type: 'pass' } }],
    });
    expect((await post(p.url, 'Safe')).status).toBe(200);
    await expect(post(p.url, 'Unsafe')).rejects.toThrow(TypeError);
  });

  it('delays before forwarding: the upstream sees nothing until the delay ends', async () => {
    let release!: () => void;
    let reached!: (ms: number) => void;
    const sleeping = new Promise<number>((r) => (reached = r));
    const p = await proxy({
      rules: [{ action: { type: 'delay', ms: 1234 } }],
      sleep: (ms) => {
        reached(ms);
        return new Promise<void>((r) => (release = r));
      },
    });
    const pending = post(p.url, 'Op');
    expect(await sleeping).toBe(1234);
    expect(upstream.seen).toHaveLength(0);
    release();
    expect((await pending).status).toBe(200);
    expect(upstream.seen).toHaveLength(1);
    expect(p.stats().delayed).toBe(1);
  });

  it('cuts an SSE stream after N events and closes the upstream stream', async () => {
    const p = await proxy({ rules: [{ action: { type: 'cutStream', afterEvents: 2 } }] });
    const res = await fetch(`${p.url}/stream?events=5&keepOpen=1&heartbeat=1`);
    const { text, broke } = await readAll(res);
    expect(broke).toBe(true);
    // The heartbeat comment is not an event.
    expect(text).toBe(':\n\nevent: next\ndata: {"n":1}\n\nevent: next\ndata: {"n":2}\n\n');
    await upstream.streamClosed(0);
    expect(p.stats().streamsCut).toBe(1);
  });

  it('cuts an SSE stream after N bytes, and after 0 events right after the headers', async () => {
    const p = await proxy({
      rules: [
        { match: { nth: 1 }, action: { type: 'cutStream', afterBytes: 10 } },
        { match: { nth: 2 }, action: { type: 'cutStream', afterEvents: 0 } },
      ],
    });
    const first = await readAll(await fetch(`${p.url}/stream?events=3&keepOpen=1`));
    expect(first).toEqual({ text: 'event: nex', broke: true });
    const second = await fetch(`${p.url}/stream?events=3&keepOpen=1`);
    expect(second.status).toBe(200);
    expect(await readAll(second)).toEqual({ text: '', broke: true });
    expect(p.stats().streamsCut).toBe(2);
  });
});

describe('fault proxy: seeded random faults', () => {
  it('probability 1 applies the fault to every request; setFaults changes it at run time', async () => {
    const p = await proxy({ faults: { unavailable: 1, retryAfterSeconds: 3 } });
    const res = await post(p.url, 'Op');
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('3');
    expect(await res.json()).toMatchObject({ errors: [{ extensions: { code: 'SERVICE_UNAVAILABLE' } }] });
    p.setFaults({});
    expect((await post(p.url, 'Op')).status).toBe(200);
    expect(() => p.setFaults({ dropRequest: 0.6, rateLimit: 0.6 })).toThrow(/at most 1/);
  });

  it('the same seed gives the same faults to the same requests, whatever the arrival order', async () => {
    const faults = { dropRequest: 0.2, dropResponse: 0.2, rateLimit: 0.2 };
    const run = async (seed: number, order: number[]) => {
      const decisions = new Map<string, string>();
      const p = await proxy({
        seed,
        faults,
        onDecision: (facts, plan: Plan) =>
          decisions.set(facts.fingerprint, `${plan.kind}/${plan.status ?? ''}/${plan.dropResponse}`),
      });
      await Promise.all(order.map((i) => post(p.url, 'PostMessage', { i }).catch(() => null)));
      return decisions;
    };
    const forward = Array.from({ length: 30 }, (_, i) => i);
    const a = await run(42, forward);
    const b = await run(42, [...forward].reverse());
    expect(b).toEqual(a);
    const kinds = new Set(a.values());
    expect(kinds.size).toBe(4); // forward, dropRequest, dropResponse, 429 all occur in 30 requests for seed 42
    const c = await run(7, forward);
    expect(c).not.toEqual(a);
  });

  it('a retried request (same fingerprint) draws again: its next occurrence gets a fresh decision', async () => {
    const kinds: string[] = [];
    const p = await proxy({
      seed: 3,
      faults: { dropRequest: 0.5 },
      onDecision: (_f, plan) => kinds.push(plan.kind),
    });
    for (let i = 0; i < 12; i++) await post(p.url, 'Same', { i: 0 }).catch(() => null);
    expect(new Set(kinds)).toEqual(new Set(['forward', 'dropRequest']));
  });
});

describe('fault proxy: options', () => {
  it('refuses an upstream that is not on loopback, and explains invalid faults', async () => {
    await expect(startFaultProxy({ upstream: 'http://example.com' })).rejects.toThrow(/loopback/);
    await expect(startFaultProxy({ upstream: upstream.url, faults: { dropRequest: 2 } })).rejects.toThrow(
      /faults\.dropRequest/,
    );
    await expect(
      startFaultProxy({ upstream: upstream.url, rules: [{ action: { type: 'cutStream' } }] }),
    ).rejects.toThrow(/exactly one of afterEvents or afterBytes/);
  });

  it('answers 413 for a body over maxBodyBytes', async () => {
    const p = await proxy({ maxBodyBytes: 16 });
    const res = await post(p.url, 'ALongOperationName');
    expect(res.status).toBe(413);
    expect(upstream.seen).toHaveLength(0);
  });
});

import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from './harness.js';
import { openRaw, subscribe } from '../../test/src/sse.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

const GOOD = '{ things(first: 2) { id name detail } }';

async function stillServes(): Promise<void> {
  const r = await h.gql(GOOD);
  expect(r.status).toBe(200);
  expect(r.json.data.things).toHaveLength(2);
}

describe('gateway /graphql', () => {
  it('plans across two subgraphs (entity resolution) and forwards the correlation id', async () => {
    const correlationId = `test-${randomUUID()}`;
    h.seen.correlationIds.length = 0;
    const r = await h.gql(GOOD, undefined, undefined, { 'x-correlation-id': correlationId });
    expect(r.status).toBe(200);
    expect(r.json).toEqual({
      data: {
        things: [
          { id: 't1', name: 'thing 1', detail: 'detail of t1' },
          { id: 't2', name: 'thing 2', detail: 'detail of t2' },
        ],
      },
    });
    expect(r.headers.get('x-correlation-id')).toBe(correlationId);
    // alpha answered `things`, beta the entities: both saw the caller's correlation id.
    expect(h.seen.correlationIds.length).toBeGreaterThanOrEqual(2);
    expect(new Set(h.seen.correlationIds)).toEqual(new Set([correlationId]));
  });

  it('makes up a correlation id when the client sends none or a malformed one', async () => {
    const r = await h.gql(GOOD, undefined, undefined, { 'x-correlation-id': 'bad id with spaces' });
    expect(r.headers.get('x-correlation-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('forwards the Authorization header so each subgraph verifies the caller itself', async () => {
    const sub = `user-${randomUUID()}`;
    const token = await h.token({ sub });
    const r = await h.gql('{ thing(id: "x") { id viewer } }', undefined, token);
    expect(r.json.data.thing).toEqual({ id: 'x', viewer: sub });
  });

  it('answers 401 UNAUTHENTICATED for a bad token before asking any subgraph', async () => {
    const before = h.seen.alphaRequests;
    const r = await h.gql(GOOD, undefined, 'not-a-jwt');
    expect(r.status).toBe(401);
    expect(r.json.errors[0].extensions.code).toBe('UNAUTHENTICATED');
    expect(r.json.errors[0].extensions.correlationId).toBeTruthy();
    const expired = await h.token({ expiresIn: '-10m' });
    const r2 = await h.gql(GOOD, undefined, expired);
    expect(r2.status).toBe(401);
    expect(h.seen.alphaRequests).toBe(before);
    await stillServes();
  });

  it('uses application/graphql-response+json when the client accepts it', async () => {
    const ok = await h.gql(GOOD, undefined, undefined, { accept: 'application/graphql-response+json' });
    expect(ok.headers.get('content-type')).toContain('application/graphql-response+json');
    const bad = await h.post('{nope', { accept: 'application/graphql-response+json' });
    expect(bad.headers.get('content-type')).toContain('application/graphql-response+json');
  });

  describe('bad input: a coded 4xx each, and the server keeps serving', () => {
    it('malformed JSON → 400 GRAPHQL_PARSE_FAILED', async () => {
      const r = await h.post('{"query": "{ things { id } }"');
      expect(r.status).toBe(400);
      expect(r.json.errors[0].extensions.code).toBe('GRAPHQL_PARSE_FAILED');
      await stillServes();
    });

    it('a body over the limit → 413 PAYLOAD_TOO_LARGE', async () => {
      const r = await h.post({ query: GOOD, variables: { pad: 'x'.repeat(h.config.limits.maxBodyBytes) } });
      expect(r.status).toBe(413);
      expect(r.json.errors[0].extensions.code).toBe('PAYLOAD_TOO_LARGE');
      await stillServes();
    });

    it('a body over the limit without content-length (chunked) → 413', async () => {
      const big = 'x'.repeat(h.config.limits.maxBodyBytes + 10);
      const res = await fetch(`${h.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: new ReadableStream({
          start(c) {
            c.enqueue(new TextEncoder().encode(`{"query":"${big}"}`));
            c.close();
          },
        }),
        duplex: 'half',
      } as RequestInit);
      expect(res.status).toBe(413);
      expect(((await res.json()) as any).errors[0].extensions.code).toBe('PAYLOAD_TOO_LARGE');
      await stillServes();
    });

    // Document errors: 400 for a client accepting application/graphql-response+json (the SDKs), 200 for one
    // accepting only application/json or sending no Accept (GraphQL over HTTP; test/e2e/graphql-http-audit.test.ts).
    it('a query that does not parse → GRAPHQL_PARSE_FAILED, 400 (200 for application/json)', async () => {
      const r = await h.gql('{ things { id ', undefined, undefined, {
        accept: 'application/graphql-response+json',
      });
      expect(r.status).toBe(400);
      expect(r.json.errors[0].extensions.code).toBe('GRAPHQL_PARSE_FAILED');
      const legacy = await h.gql('{ things { id ');
      expect(legacy.status).toBe(200);
      expect(legacy.json.errors[0].extensions.code).toBe('GRAPHQL_PARSE_FAILED');
      await stillServes();
    });

    it('a depth bomb → 400 QUERY_TOO_COMPLEX', async () => {
      const bomb = '{ node ' + '{ child '.repeat(20) + '{ name }' + ' }'.repeat(20) + ' }';
      const r = await h.gql(bomb);
      expect(r.status).toBe(400);
      expect(r.json.errors[0].extensions.code).toBe('QUERY_TOO_COMPLEX');
      expect(r.json.errors[0].extensions.limit).toBe('maxDepth');
      // Cached verdict: the same bomb again is refused the same way.
      expect((await h.gql(bomb)).status).toBe(400);
      await stillServes();
    });

    it('a depth bomb hidden in fragments → 400 QUERY_TOO_COMPLEX', async () => {
      const frags = Array.from(
        { length: 10 },
        (_, i) => `fragment F${i} on Node { child { ...F${i + 1} } }`,
      ).join('\n');
      const r = await h.gql(`{ node { ...F0 } }\n${frags}\nfragment F10 on Node { name }`);
      expect(r.status).toBe(400);
      expect(r.json.errors[0].extensions.code).toBe('QUERY_TOO_COMPLEX');
      await stillServes();
    });

    it('an alias bomb → 400 QUERY_TOO_COMPLEX', async () => {
      const aliases = Array.from({ length: 50 }, (_, i) => `a${i}: things { id }`).join(' ');
      const r = await h.gql(`{ ${aliases} }`);
      expect(r.status).toBe(400);
      expect(r.json.errors[0].extensions.code).toBe('QUERY_TOO_COMPLEX');
      expect(r.json.errors[0].extensions.limit).toBe('maxAliases');
      await stillServes();
    });

    it('first: 100000 → 400 BAD_USER_INPUT, literal, variable or variable default', async () => {
      const literal = await h.gql('{ things(first: 100000) { id } }');
      expect(literal.status).toBe(400);
      expect(literal.json.errors[0].extensions.code).toBe('BAD_USER_INPUT');
      const q = 'query Q($n: Int) { things(first: $n) { id } }';
      const variable = await h.gql(q, { n: 100000 });
      expect(variable.status).toBe(400);
      expect(variable.json.errors[0].extensions.code).toBe('BAD_USER_INPUT');
      // Same document, a fine value: the per-request check passes it.
      const fine = await h.gql(q, { n: 2 });
      expect(fine.status).toBe(200);
      expect(fine.json.data.things).toHaveLength(2);
      const dflt = await h.gql('query D($n: Int = 100000) { things(first: $n) { id } }');
      expect(dflt.status).toBe(400);
      expect(dflt.json.errors[0].extensions.code).toBe('BAD_USER_INPUT');
      await stillServes();
    });

    it('wrong variable types → BAD_USER_INPUT, 400 (200 for application/json; Apollo variable coercion)', async () => {
      const r = await h.gql('query Q($n: Int) { things(first: $n) { id } }', { n: 'many' }, undefined, {
        accept: 'application/graphql-response+json',
      });
      expect(r.status).toBe(400);
      expect(r.json.errors[0].extensions.code).toBe('BAD_USER_INPUT');
      const missing = await h.gql('query Q($id: ID!) { thing(id: $id) { id } }', {}, undefined, {
        accept: 'application/graphql-response+json',
      });
      expect(missing.status).toBe(400);
      expect(missing.json.errors[0].extensions.code).toBe('BAD_USER_INPUT');
      const legacy = await h.gql('query Q($n: Int) { things(first: $n) { id } }', { n: 'many' });
      expect(legacy.status).toBe(200);
      expect(legacy.json.errors[0].extensions.code).toBe('BAD_USER_INPUT');
      await stillServes();
    });

    it('an unknown field → GRAPHQL_VALIDATION_FAILED, 400 (200 for application/json)', async () => {
      const r = await h.gql('{ things { id nope } }', undefined, undefined, {
        accept: 'application/graphql-response+json',
      });
      expect(r.status).toBe(400);
      expect(r.json.errors[0].extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
      const legacy = await h.gql('{ things { id nope } }');
      expect(legacy.status).toBe(200);
      expect(legacy.json.errors[0].extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
      await stillServes();
    });

    it('a body that is not a GraphQL request → 400 BAD_USER_INPUT', async () => {
      for (const body of ['[1,2]', '"query"', '{"variables":{}}']) {
        const r = await h.post(body);
        expect(r.status).toBe(400);
        expect(r.json.errors[0].extensions.code).toBe('BAD_USER_INPUT');
      }
      await stillServes();
    });

    it('a text/plain POST (CSRF-style simple request) is refused: 415, not run', async () => {
      const res = await fetch(`${h.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain' },
        body: JSON.stringify({ query: GOOD }),
      });
      expect(res.status).toBe(415);
      expect(((await res.json()) as any).errors[0].extensions.code).toBe('BAD_USER_INPUT');
      await stillServes();
    });
  });

  it('keeps the code of a subgraph field error and drops the topology (serviceName)', async () => {
    const r = await h.gql('{ missing { id } }');
    expect(r.status).toBe(200); // data is { missing: null }: a field error inside a 200
    expect(r.json.data).toEqual({ missing: null });
    expect(r.json.errors[0].extensions.code).toBe('NOT_FOUND');
    expect(r.json.errors[0].extensions.serviceName).toBeUndefined();
  });

  it('masks internal errors and names the correlation id', async () => {
    const r = await h.gql('{ boom }', undefined, undefined, { 'x-correlation-id': 'masked-1' });
    expect(r.status).toBe(200);
    expect(r.json.errors[0].extensions.code).toBe('INTERNAL_SERVER_ERROR');
    expect(r.json.errors[0].message).toContain('masked-1');
    expect(JSON.stringify(r.json)).not.toContain('hunter2');
  });

  it('passes idempotentReplay from the subgraph into the response extensions', async () => {
    const token = await h.token();
    const q = 'mutation T($k: ID!, $l: String!) { touch(idempotencyKey: $k, label: $l) { id name } }';
    const key = randomUUID();
    const first = await h.gql(q, { k: key, l: 'one' }, token);
    expect(first.status).toBe(200);
    expect(first.json.extensions?.idempotentReplay).toBeUndefined();
    const second = await h.gql(q, { k: key, l: 'one' }, token);
    expect(second.json.extensions?.idempotentReplay).toBe(true);
    expect(second.json.data).toEqual(first.json.data);
    const reused = await h.gql(q, { k: key, l: 'two' }, token);
    expect(reused.json.errors[0].extensions.code).toBe('IDEMPOTENCY_KEY_REUSED');
    // No data at all and a coded error: the code's status (422), so clients classify it without parsing.
    expect(reused.status).toBe(422);
    expect(reused.json.data).toBeNull();
  });

  describe('identical in-flight reads', () => {
    /** Waits (by yielding to the event loop, not by time) until a condition holds. */
    async function until(cond: () => boolean): Promise<void> {
      while (!cond()) await new Promise((r) => setImmediate(r));
    }

    it('share one subgraph fetch, each caller getting its own answer', async () => {
      const gate = h.newGate();
      const token = await h.token();
      const calls = h.seen.slowCalls;
      const shared = h.gateway.stats.sharedFetches;
      const pending = [
        h.gql('{ slow }', undefined, token),
        h.gql('{ slow }', undefined, token),
        h.gql('{ slow }', undefined, token),
      ];
      await gate.entered;
      await until(() => h.gateway.stats.sharedFetches === shared + 2);
      gate.release();
      const answers = await Promise.all(pending);
      expect(answers.map((a) => a.json.data)).toEqual([
        { slow: 'finally' },
        { slow: 'finally' },
        { slow: 'finally' },
      ]);
      expect(h.seen.slowCalls).toBe(calls + 1);
    });

    it('are not shared across tokens', async () => {
      const gate = h.newGate();
      const calls = h.seen.slowCalls;
      const pending = [
        h.gql('{ slow }', undefined, await h.token()),
        h.gql('{ slow }', undefined, await h.token()),
      ];
      await until(() => h.seen.slowCalls === calls + 2);
      gate.release();
      await Promise.all(pending);
    });

    it('never join a fetch that started before a mutation completed (read-your-writes)', async () => {
      const gate = h.newGate();
      const token = await h.token();
      const calls = h.seen.slowCalls;
      const before = h.gql('{ slow }', undefined, token);
      await gate.entered;
      const write = await h.gql(
        'mutation { touch(idempotencyKey: "ryw-1", label: "w") { id } }',
        undefined,
        token,
      );
      expect(write.status).toBe(200);
      const after = h.gql('{ slow }', undefined, token);
      await until(() => h.seen.slowCalls === calls + 2); // a fetch of its own
      gate.release();
      await Promise.all([before, after]);
    });
  });

  it('serves GET queries too, but no mutations over GET', async () => {
    const res = await fetch(`${h.url}/graphql?query=${encodeURIComponent(GOOD)}`, {
      headers: { 'apollo-require-preflight': '1' },
    });
    expect(res.status).toBe(200);
    const m = await fetch(
      `${h.url}/graphql?query=${encodeURIComponent('mutation { touch(idempotencyKey: "k", label: "x") { id } }')}`,
      { headers: { 'apollo-require-preflight': '1' } },
    );
    expect(m.status).toBe(405);
  });

  it('writes one JSON access-log line per request, without the token', async () => {
    const token = await h.token();
    const marker = `log-${randomUUID()}`;
    await h.gql('query Named { things(first: 1) { id } }', undefined, token, { 'x-correlation-id': marker });
    const line = h.logs
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l['correlationId'] === marker && l['msg'] === 'request');
    expect(line).toMatchObject({ method: 'POST', path: '/graphql', operationName: 'Named', status: 200 });
    expect(typeof line!['latencyMs']).toBe('number');
    expect(h.logs.join('\n')).not.toContain(token);
  });
});

describe('gateway /graphql/stream', () => {
  const TICKS = 'subscription S($from: Int) { ticks(from: $from) { n thing { id name } } }';

  it('forwards a subscription to the owning subgraph: backlog, then live events in order', async () => {
    const token = await h.token();
    const s = subscribe<{ ticks: { n: number } }>(`${h.url}/graphql/stream`, token, TICKS, { from: 2 });
    expect((await s.next()).data?.ticks.n).toBe(1);
    expect((await s.next()).data?.ticks.n).toBe(2);
    await h.ticks.activeBecomes(1);
    h.ticks.push(3);
    h.ticks.push(4);
    expect((await s.next()).data).toEqual({ ticks: { n: 3, thing: { id: 't3', name: 'thing t3' } } });
    expect((await s.next()).data?.ticks.n).toBe(4);
    // The client goes away: the gateway closes the upstream subscription.
    s.dispose();
    await h.ticks.activeBecomes(0);
    expect(h.gateway.openStreams).toBe(0);
  });

  it('completes the client stream when the subgraph completes', async () => {
    const token = await h.token();
    const s = subscribe(`${h.url}/graphql/stream`, token, TICKS, { from: 1 });
    await s.next();
    await h.ticks.activeBecomes(1);
    h.ticks.completeAll();
    await s.ended;
    await h.ticks.activeBecomes(0);
  });

  it('masks internal errors inside relayed events, keeps streaming', async () => {
    const token = await h.token();
    const s = subscribe<{ ticks: { n: number; note: string | null } }>(
      `${h.url}/graphql/stream`,
      token,
      'subscription { ticks { n note } }',
    );
    await h.ticks.activeBecomes(1);
    h.ticks.push(99);
    h.ticks.push(5);
    const bad = await s.next();
    expect(bad.errors?.[0]?.extensions?.['code']).toBe('INTERNAL_SERVER_ERROR');
    expect(JSON.stringify(bad)).not.toContain('secret detail');
    expect((await s.next()).data).toEqual({ ticks: { n: 5, note: null } });
    s.dispose();
    await h.ticks.activeBecomes(0);
  });

  it('tells the client, with a code, when the subgraph drops the stream, then completes', async () => {
    const token = await h.token();
    const s = subscribe(`${h.url}/graphql/stream`, token, TICKS);
    await h.ticks.activeBecomes(1);
    h.ticks.push(-1); // the source throws: the subgraph drops the connection without `complete`
    const last = await s.next();
    expect(last.errors?.[0]?.extensions?.['code']).toBe('SERVICE_UNAVAILABLE');
    await s.ended;
    await h.ticks.activeBecomes(0);
    expect(h.gateway.openStreams).toBe(0);
  });

  it('sends the SSE headers and an injectable heartbeat comment', async () => {
    const token = await h.token();
    const raw = await openRaw(`${h.url}/graphql/stream`, token, TICKS, { from: 1 });
    expect(raw.response.status).toBe(200);
    expect(raw.response.headers.get('content-type')).toContain('text/event-stream');
    expect(raw.response.headers.get('x-accel-buffering')).toBe('no');
    expect(raw.response.headers.get('cache-control')).toBe('no-cache, no-transform');
    expect(raw.response.headers.get('content-encoding')).not.toMatch(/gzip|br|deflate/);
    await raw.until((t) => t.includes('event: next'));
    const before = raw.text().split(':\n\n').length;
    h.timers.tick();
    await raw.until((t) => t.split(':\n\n').length > before);
    await raw.cancel();
    await h.ticks.activeBecomes(0);
    expect(h.timers.active).toBe(0);
  });

  it('refuses a stream without a valid token: 401 UNAUTHENTICATED', async () => {
    for (const auth of [undefined, 'Bearer nope']) {
      const res = await fetch(`${h.url}/graphql/stream`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'text/event-stream',
          ...(auth ? { authorization: auth } : {}),
        },
        body: JSON.stringify({ query: TICKS }),
      });
      expect(res.status).toBe(401);
      expect(((await res.json()) as any).errors[0].extensions.code).toBe('UNAUTHENTICATED');
    }
  });

  it('validates against the API schema and the limits before forwarding', async () => {
    const token = await h.token();
    const send = async (query: string, variables?: Record<string, unknown>) => {
      const res = await fetch(`${h.url}/graphql/stream`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'text/event-stream',
          authorization: `Bearer ${token}`,
        },
        body: JSON.stringify({ query, variables }),
      });
      return { status: res.status, json: (await res.json()) as any };
    };
    const unknown = await send('subscription { ticks { nope } }');
    expect(unknown.status).toBe(400);
    expect(unknown.json.errors[0].extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
    const parseFail = await send('subscription { ticks { n ');
    expect(parseFail.json.errors[0].extensions.code).toBe('GRAPHQL_PARSE_FAILED');
    const query = await send('{ things { id } }');
    expect(query.status).toBe(400);
    expect(query.json.errors[0].message).toContain('/graphql');
    const aliases = Array.from({ length: 20 }, (_, i) => `a${i}: n`).join(' ');
    const bomb = await send(`subscription { ticks { ${aliases} } }`);
    expect(bomb.json.errors[0].extensions.code).toBe('QUERY_TOO_COMPLEX');
    // A page size left to its variable's default is checked like a given one.
    const dflt = await send('subscription S($n: Int = 100000) { ticks(first: $n) { n } }');
    expect(dflt.status).toBe(400);
    expect(dflt.json.errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', limit: 'maxPageSize' });
    const given = await send('subscription S($n: Int) { ticks(first: $n) { n } }', { n: 100000 });
    expect(given.json.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    expect(h.ticks.active).toBe(0);
  });

  it('says which fields must come from a query when the owner cannot resolve them', async () => {
    const token = await h.token();
    const res = await fetch(`${h.url}/graphql/stream`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'text/event-stream',
        authorization: `Bearer ${token}`,
      },
      body: JSON.stringify({ query: 'subscription { ticks { n thing { id detail } } }' }),
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as any;
    expect(body.errors[0].extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
    expect(body.errors[0].message).toContain('alpha');
    expect(body.errors[0].message).toContain('detail');
    expect(body.errors[0].message).toContain('query on /graphql');
  });

  it('asks for Accept: text/event-stream', async () => {
    const token = await h.token();
    const res = await fetch(`${h.url}/graphql/stream`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json',
        authorization: `Bearer ${token}`,
      },
      body: JSON.stringify({ query: TICKS }),
    });
    expect(res.status).toBe(406);
    expect(((await res.json()) as any).errors[0].extensions.code).toBe('BAD_USER_INPUT');
  });
});

describe('health', () => {
  it('/healthz is 200 ok without I/O, /readyz 200 ready when every subgraph is', async () => {
    const live = await fetch(`${h.url}/healthz`);
    expect(live.status).toBe(200);
    expect(await live.json()).toEqual({ status: 'ok' });
    const ready = await fetch(`${h.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready' });
  });

  it('unknown paths are 404', async () => {
    expect((await fetch(`${h.url}/nope`)).status).toBe(404);
  });
});

/**
 * /metrics and the access line of the subgraph server, over real HTTP on loopback with a real database: a query, a
 * mutation replayed and its key reused (idempotentMutation), a rate-limited call (a limiter counting through
 * ctx.metrics), a stream opened and closed; each scrape is parsed (prom-client's text format) and the series must
 * move by exactly the right amount. Production without METRICS_TOKEN refuses every scrape; with it, only the token.
 */
import { randomUUID } from 'node:crypto';
import {
  GraphQLNonNull,
  GraphQLObjectType,
  GraphQLSchema,
  GraphQLString,
  GraphQLID,
  GraphQLInt,
} from 'graphql';
import { createClient } from 'graphql-sse';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TokenVerifier } from '../src/auth.js';
import { loadConfig, type Config } from '../src/config.js';
import { AppError } from '../src/errors.js';
import { createLogger } from '../src/log.js';
import { createMetrics, type Metrics } from '../src/metrics/index.js';
import { idempotentMutation } from '../src/mutation.js';
import { createSubgraphServer, type RunningServer, type SubgraphContext } from '../src/subgraph-server.js';
import { drivers, openTestDatabase, type TestDb } from './helpers.js';
import { parseMetrics, sample } from '../../test/src/prometheus-text.js';

const schema = new GraphQLSchema({
  query: new GraphQLObjectType({
    name: 'Query',
    fields: { hello: { type: GraphQLString, resolve: () => 'world' } },
  }),
  mutation: new GraphQLObjectType({
    name: 'Mutation',
    fields: {
      put: {
        type: GraphQLString,
        args: { idempotencyKey: { type: new GraphQLNonNull(GraphQLID) }, value: { type: GraphQLString } },
        resolve: (_r, args: { idempotencyKey: string; value: string }, ctx: SubgraphContext) =>
          idempotentMutation(ctx, 'Mutation.put', args, async () => args.value),
      },
      limited: {
        type: GraphQLString,
        // A limiter that always refuses, counting the way the real ones do (coordination's takeRateToken).
        resolve: (_r, _a, ctx: SubgraphContext) => {
          ctx.metrics?.rateLimited('test_limiter');
          throw new AppError('RATE_LIMITED', 'Too many.', { retryAfterMs: 1000 });
        },
      },
    },
  }),
  subscription: new GraphQLObjectType({
    name: 'Subscription',
    fields: {
      waits: {
        type: GraphQLInt,
        subscribe: async function* (_r: unknown, _a: unknown, ctx: SubgraphContext) {
          yield 1;
          await new Promise((r) => ctx.signal.addEventListener('abort', r));
        },
        resolve: (n: unknown) => n,
      },
    },
  }),
});

const TENANT = randomUUID();
const verifyToken: TokenVerifier = async (authorization) =>
  authorization
    ? {
        tenantId: TENANT,
        principalId: 'user-1',
        role: 'OWNER',
        scopes: ['api:read', 'api:write'],
        tokenId: 't',
        expiresAt: Math.floor(Date.now() / 1000) + 3600,
      }
    : null;

async function serve(t: TestDb, config: Config, metrics: Metrics, lines: string[]): Promise<RunningServer> {
  const log = createLogger({ service: 'metrics-test' }, { write: (l) => lines.push(l) });
  return createSubgraphServer({ name: 'stub', schema, config, db: t.db, log, verifyToken, metrics }).listen(
    0,
    '127.0.0.1',
  );
}

describe.each(drivers)('subgraph /metrics on %s', (driver) => {
  let t: TestDb;
  let running: RunningServer;
  let metrics: Metrics;
  const lines: string[] = [];

  beforeAll(async () => {
    t = await openTestDatabase(driver);
    metrics = createMetrics({ service: 'stub' });
    running = await serve(t, t.config, metrics, lines);
  });
  afterAll(async () => {
    await running?.close();
    await t?.close();
  });

  const gql = async (query: string, headers: Record<string, string> = {}) => {
    const res = await fetch(`${running.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer x', ...headers },
      body: JSON.stringify({ query }),
    });
    return (await res.json()) as {
      data?: Record<string, unknown>;
      errors?: { extensions: { code: string } }[];
    };
  };
  const scrape = async () => {
    const res = await fetch(`${running.url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain');
    return parseMetrics(await res.text());
  };

  it('counts a query by root field and outcome, with the service label', async () => {
    const before = await scrape();
    const labels = { service: 'stub', operation: 'Query.hello', code: 'OK' };
    expect((await gql('{ hello }')).data).toEqual({ hello: 'world' });
    const after = await scrape();
    const count = 'agentgraph_request_duration_seconds_count';
    expect(sample(after, count, labels) - sample(before, count, labels)).toBe(1);
    // Default process metrics carry the service label too. (Not the CPU counter: it counts from the registry's
    // creation in the kernel's accounting ticks, and a PostgreSQL run can scrape before the process has one.)
    expect(sample(after, 'agentgraph_process_resident_memory_bytes', { service: 'stub' })).toBeGreaterThan(0);
    // PGlite: its one connection; PostgreSQL: the pool's open connections (the query above needed one).
    expect(
      sample(after, 'agentgraph_db_pool_connections', { service: 'stub', state: 'total' }),
    ).toBeGreaterThan(0);
  });

  it('counts an idempotency replay and a reused key once each', async () => {
    const key = `key-${randomUUID()}`;
    const before = await scrape();
    expect((await gql(`mutation { put(idempotencyKey: "${key}", value: "a") }`)).data).toEqual({ put: 'a' });
    expect((await gql(`mutation { put(idempotencyKey: "${key}", value: "a") }`)).data).toEqual({ put: 'a' });
    const conflict = await gql(`mutation { put(idempotencyKey: "${key}", value: "b") }`);
    expect(conflict.errors?.[0]?.extensions.code).toBe('IDEMPOTENCY_KEY_REUSED');
    const after = await scrape();
    const n = 'agentgraph_idempotency_total';
    expect(sample(after, n, { outcome: 'replay' }) - sample(before, n, { outcome: 'replay' })).toBe(1);
    expect(sample(after, n, { outcome: 'conflict' }) - sample(before, n, { outcome: 'conflict' })).toBe(1);
    const count = 'agentgraph_request_duration_seconds_count';
    const reused = { operation: 'Mutation.put', code: 'IDEMPOTENCY_KEY_REUSED' };
    expect(sample(after, count, reused) - sample(before, count, reused)).toBe(1);
    expect(sample(after, count, { operation: 'Mutation.put', code: 'OK' })).toBe(
      sample(before, count, { operation: 'Mutation.put', code: 'OK' }) + 2,
    );
  });

  it('counts a rate-limited call by limiter and by its outcome code', async () => {
    const before = await scrape();
    expect((await gql('mutation { limited }')).errors?.[0]?.extensions.code).toBe('RATE_LIMITED');
    const after = await scrape();
    const n = 'agentgraph_rate_limited_total';
    expect(
      sample(after, n, { limiter: 'test_limiter' }) - sample(before, n, { limiter: 'test_limiter' }),
    ).toBe(1);
    const labels = { operation: 'Mutation.limited', code: 'RATE_LIMITED' };
    const count = 'agentgraph_request_duration_seconds_count';
    expect(sample(after, count, labels) - sample(before, count, labels)).toBe(1);
  });

  it('shows an open stream in the gauge until it closes', async () => {
    expect(sample(await scrape(), 'agentgraph_open_streams', { service: 'stub' })).toBe(0);
    const client = createClient({
      url: `${running.url}/graphql/stream`,
      headers: { authorization: 'Bearer x' },
      retryAttempts: 0,
    });
    const first = new Promise<unknown>((resolve, reject) => {
      const stop = client.subscribe(
        { query: 'subscription { waits }' },
        { next: (v) => resolve([v, stop]), error: reject, complete: () => undefined },
      );
    });
    const [event, stop] = (await first) as [unknown, () => void];
    expect(event).toEqual({ data: { waits: 1 } });
    expect(sample(await scrape(), 'agentgraph_open_streams', { service: 'stub' })).toBe(1);
    stop();
    await expect.poll(async () => sample(await scrape(), 'agentgraph_open_streams', {})).toBe(0);
    client.dispose();
  });

  it('writes one access line per request with the correlation id and principal, never the token', async () => {
    const correlationId = `corr-${randomUUID()}`;
    await gql('{ hello }', { 'x-correlation-id': correlationId, authorization: 'Bearer secret-token-value' });
    await expect.poll(() => lines.filter((l) => l.includes(correlationId)).length).toBe(1);
    const line = JSON.parse(lines.find((l) => l.includes(correlationId))!) as Record<string, unknown>;
    expect(line).toMatchObject({
      level: 'info',
      msg: 'request',
      method: 'POST',
      path: '/graphql',
      status: 200,
      operationName: 'Query.hello',
      principal: 'PERSON',
      correlationId,
    });
    expect(typeof line['latencyMs']).toBe('number');
    expect(JSON.stringify(line)).not.toContain('secret-token-value');
    await fetch(`${running.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-correlation-id': `${correlationId}-anon` },
      body: JSON.stringify({ query: '{ hello }' }),
    });
    await expect.poll(() => lines.find((l) => l.includes(`${correlationId}-anon`))).toContain('"ANONYMOUS"');
  });
});

describe('subgraph /metrics access', () => {
  const production = {
    DATA_DIR: 'memory://',
    AGENTGRAPH_MODE: 'production',
    CURSOR_SECRET: 'c'.repeat(48),
    GATEWAY_SECRET: 'g'.repeat(48),
    KEY_ENCRYPTION_KEYS: Buffer.alloc(32, 7).toString('base64'),
    COOKIE_SECRET: 'k'.repeat(48),
    // Read only by loadConfig: the servers here run on the test's database.
    DATABASE_URL: 'postgres://unused@127.0.0.1:1/unused',
    TOKEN_ISSUER: 'https://identity.test',
    JWKS_URL: 'https://identity.test/jwks',
  };
  let t: TestDb;
  beforeAll(async () => {
    t = await openTestDatabase('pglite');
  });
  afterAll(async () => t?.close());

  it('refuses every scrape in production without METRICS_TOKEN', async () => {
    const running = await serve(t, loadConfig(production), createMetrics({ service: 'stub' }), []);
    try {
      const res = await fetch(`${running.url}/metrics`);
      expect(res.status).toBe(403);
      expect(await res.text()).not.toContain('agentgraph_');
      expect((await fetch(`${running.url}/metrics`, { headers: { authorization: 'Bearer x' } })).status).toBe(
        403,
      );
    } finally {
      await running.close();
    }
  });

  it('with METRICS_TOKEN answers only that bearer token', async () => {
    const token = randomUUID();
    const config = loadConfig({ ...production, METRICS_TOKEN: token });
    const running = await serve(t, config, createMetrics({ service: 'stub' }), []);
    try {
      const none = await fetch(`${running.url}/metrics`);
      expect(none.status).toBe(401);
      expect(none.headers.get('www-authenticate')).toContain('Bearer');
      const wrong = await fetch(`${running.url}/metrics`, { headers: { authorization: `Bearer ${token}x` } });
      expect(wrong.status).toBe(401);
      const right = await fetch(`${running.url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
      expect(right.status).toBe(200);
      expect(await right.text()).toContain('agentgraph_request_duration_seconds');
    } finally {
      await running.close();
    }
  });

  it('keeps one registry per server: two servers in one process do not share series', async () => {
    const a = createMetrics({ service: 'a', processMetrics: false });
    const b = createMetrics({ service: 'b', processMetrics: false });
    a.rateLimited('x');
    expect(sample(parseMetrics(await a.scrape()), 'agentgraph_rate_limited_total', { limiter: 'x' })).toBe(1);
    expect(sample(parseMetrics(await b.scrape()), 'agentgraph_rate_limited_total', { limiter: 'x' })).toBe(0);
  });
});

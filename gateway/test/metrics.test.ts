/**
 * The gateway's /metrics over real HTTP (stub subgraphs, test/harness.ts): a query observed by operation label and
 * outcome code, an open stream in the gauge, 1,000 client-chosen operation names that all land in `other` (the
 * label's values stay bounded), production without METRICS_TOKEN refused, and the access line's principal.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { parseMetrics, sample } from '../../test/src/prometheus-text.js';
import { subscribe } from '../../test/src/sse.js';
import { startHarness, type Harness } from './harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const COUNT = 'agentgraph_request_duration_seconds_count';

async function scrape(h: Harness, headers: Record<string, string> = {}) {
  const res = await fetch(`${h.url}/metrics`, { headers });
  expect(res.status).toBe(200);
  return parseMetrics(await res.text());
}

/** A name of the operations manifest (schemas/operations.manifest.json), which the gateway labels by name. */
const MANIFEST_NAME = (
  JSON.parse(readFileSync(new URL('../../schemas/operations.manifest.json', import.meta.url), 'utf8')) as {
    operations: { name: string }[];
  }
).operations[0]!.name;

describe('gateway /metrics', () => {
  it('observes a query by its manifest name and outcome, and an unnamed one as anonymous', async () => {
    h = await startHarness();
    const token = await h.token();
    const before = await scrape(h);
    const named = await h.post(
      { query: `query ${MANIFEST_NAME} { things { id } }`, operationName: MANIFEST_NAME },
      { authorization: `Bearer ${token}` },
    );
    expect(named.status).toBe(200);
    expect((await h.gql('{ things { id } }', {}, token)).status).toBe(200);
    expect((await h.gql('{ boom }', {}, token)).json.errors[0].extensions.code).toBe('INTERNAL_SERVER_ERROR');
    expect((await h.gql('{ things { id } }', {}, 'not-a-token')).status).toBe(401);
    const after = await scrape(h);
    const moved = (labels: Record<string, string>) =>
      sample(after, COUNT, { service: 'gateway', ...labels }) - sample(before, COUNT, labels);
    expect(moved({ operation: MANIFEST_NAME, code: 'OK' })).toBe(1);
    expect(moved({ operation: 'anonymous', code: 'OK' })).toBe(1);
    expect(moved({ operation: 'anonymous', code: 'INTERNAL_SERVER_ERROR' })).toBe(1);
    expect(moved({ operation: 'anonymous', code: 'UNAUTHENTICATED' })).toBe(1);
    const line = h.logs
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l['msg'] === 'request' && l['operationName'] === MANIFEST_NAME);
    expect(line).toMatchObject({ path: '/graphql', status: 200, principal: 'PERSON' });
    expect(JSON.stringify(line)).not.toContain(token);
  });

  it('keeps the operation label bounded under 1,000 random operation names', async () => {
    h = await startHarness();
    const token = await h.token();
    const names = Array.from({ length: 1000 }, () => `Op${randomUUID().replaceAll('-', '')}`);
    // { __typename } is answered by the gateway itself: the label is the point here, not the subgraphs.
    for (let i = 0; i < names.length; i += 50) {
      await Promise.all(
        names.slice(i, i + 50).map(async (name) => {
          const r = await h!.post(
            { query: `query ${name} { __typename }`, operationName: name },
            { authorization: `Bearer ${token}` },
          );
          expect(r.status).toBe(200);
        }),
      );
    }
    const samples = await scrape(h);
    const operations = new Set(samples.filter((s) => s.name === COUNT).map((s) => s.labels['operation']));
    expect([...operations]).toEqual(['other']);
    expect(sample(samples, COUNT, { operation: 'other', code: 'OK' })).toBe(1000);
    const series = samples.filter((s) => s.name.startsWith('agentgraph_request_duration_seconds')).length;
    expect(series).toBeLessThan(20);
  }, 180_000);

  it('shows an open stream in the gauge until it ends', async () => {
    h = await startHarness();
    const token = await h.token();
    const s = subscribe<{ ticks: { n: number } }>(
      `${h.url}/graphql/stream`,
      token,
      'subscription { ticks(from: 1) { n } }',
    );
    expect((await s.next()).data?.ticks.n).toBe(1);
    expect(sample(await scrape(h), 'agentgraph_open_streams', { service: 'gateway' })).toBe(1);
    h.ticks.completeAll();
    await s.ended;
    await expect.poll(async () => sample(await scrape(h!), 'agentgraph_open_streams')).toBe(0);
    s.dispose();
  });

  it('refuses scrapes in production without METRICS_TOKEN, and answers the token when set', async () => {
    const production = {
      AGENTGRAPH_MODE: 'production',
      CURSOR_SECRET: 'c'.repeat(48),
      GATEWAY_SECRET: 'g'.repeat(48),
      KEY_ENCRYPTION_KEYS: Buffer.alloc(32, 7).toString('base64'),
      COOKIE_SECRET: 'k'.repeat(48),
      DATABASE_URL: 'postgres://unused@127.0.0.1:1/unused',
    };
    h = await startHarness(production);
    const refused = await fetch(`${h.url}/metrics`);
    expect(refused.status).toBe(403);
    expect(await refused.text()).not.toContain('agentgraph_');
    await h.close();
    const token = randomUUID();
    h = await startHarness({ ...production, METRICS_TOKEN: token });
    expect((await fetch(`${h.url}/metrics`)).status).toBe(401);
    expect(
      (await fetch(`${h.url}/metrics`, { headers: { authorization: 'Bearer nope-nope-nope' } })).status,
    ).toBe(401);
    expect(sample(await scrape(h, { authorization: `Bearer ${token}` }), 'agentgraph_open_streams')).toBe(0);
  });
});

/**
 * Coordination's /metrics on the real platform: an intent created through the gateway, delivered and approved by its
 * device's signed reports, moves the transition counter once per state and the dispatch histogram once per stage; a
 * second intent over the principal's limit counts one refusal of limiter coordination_intent; the intent outbox shows
 * the rows the changes wrote. Every server serves its own registry: the gateway's scrape has service="gateway" only.
 */
import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrolTestDevice } from '../src/devices.js';
import { startTestPlatform, type TestPlatform, type TestUser } from '../src/platform.js';
import { parseMetrics, sample, type Sample } from '../src/prometheus-text.js';

let p: TestPlatform;
let alice: TestUser;

const CREATE =
  'mutation C($i: CreateIntentInput!, $k: ID!) { createIntent(input: $i, idempotencyKey: $k) { intent { id state } } }';
const REPORT =
  'mutation R($r: String!, $k: ID!) { reportIntentState(report: $r, idempotencyKey: $k) { intent { id state } } }';

beforeAll(async () => {
  p = await startTestPlatform({
    // One intent per principal, refilled once in 1,000 s: the second creation is refused whatever the machine's speed.
    RATE_LIMIT_INTENT_PRINCIPAL: '0.001/s:1',
    RATE_LIMIT_INTENT_TENANT: 'off',
  });
  alice = await p.tokenFor({ tenant: 'metrics' });
});
afterAll(async () => {
  if (p?.errorLogs.length) console.error(p.errorLogs.join('\n'));
  await p?.close();
});

async function scrape(origin: string): Promise<Sample[]> {
  const res = await fetch(`${origin}/metrics`);
  expect(res.status).toBe(200);
  return parseMetrics(await res.text());
}

describe('metrics end to end', () => {
  it('counts an intent’s transitions, its dispatch latency, a rate-limit refusal and the outbox', async () => {
    const coordination = new URL(p.subgraphs.coordination).origin;
    const device = await enrolTestDevice(p, alice, 'laptop', { enableRemoteActions: true });
    const before = await scrape(coordination);

    const input = {
      deviceId: device.id,
      action: 'open-app',
      params: '{"app":"notes"}',
      expiresInSeconds: 600,
    };
    const created = await p.gql(CREATE, { i: input, k: randomUUID() }, alice.token);
    expect(created.errors).toBeUndefined();
    const intentId = created.data.createIntent.intent.id as string;
    const refused = await p.gql(CREATE, { i: input, k: randomUUID() }, alice.token);
    expect(refused.errors?.[0]?.extensions?.['code']).toBe('RATE_LIMITED');

    for (const state of ['DELIVERED', 'LOCALLY_APPROVED']) {
      const jws = await new SignJWT({ intent: intentId, state })
        .setProtectedHeader({ alg: 'ES256', typ: 'intent-report+jwt' })
        .setIssuer(device.id)
        .setAudience(coordination)
        .setJti(randomUUID())
        .setIssuedAt()
        .sign(device.privateKey);
      const r = await p.gql(REPORT, { r: jws, k: randomUUID() }, device.token);
      expect(r.errors).toBeUndefined();
      expect(r.data.reportIntentState.intent.state).toBe(state);
    }

    const after = await scrape(coordination);
    const moved = (name: string, labels: Record<string, string>) =>
      sample(after, name, { service: 'coordination', ...labels }) - sample(before, name, labels);
    for (const state of ['QUEUED', 'DELIVERED', 'LOCALLY_APPROVED'])
      expect(moved('agentgraph_intent_transitions_total', { state }), state).toBe(1);
    expect(moved('agentgraph_intent_dispatch_seconds_count', { stage: 'delivered' })).toBe(1);
    expect(moved('agentgraph_intent_dispatch_seconds_count', { stage: 'acknowledged' })).toBe(1);
    expect(moved('agentgraph_rate_limited_total', { limiter: 'coordination_intent' })).toBe(1);
    // Creation, delivery and approval each wrote an outbox row (rows stay until the hourly purge).
    expect(moved('agentgraph_outbox_pending', { outbox: 'intent_outbox' })).toBe(3);
    expect(
      sample(after, 'agentgraph_outbox_oldest_age_seconds', { outbox: 'intent_outbox' }),
    ).toBeGreaterThanOrEqual(0);
    expect(sample(after, 'agentgraph_outbox_scrape_errors_total')).toBe(0);
    // Revocation list: loaded at start (the platform shares one list between its in-process verifiers).
    expect(after.some((s) => s.name === 'agentgraph_revocation_list_age_seconds')).toBe(true);

    const gateway = await scrape(p.gatewayUrl);
    expect(new Set(gateway.map((s) => s.labels['service']))).toEqual(new Set(['gateway']));
    expect(sample(gateway, 'agentgraph_request_duration_seconds_count', { code: 'RATE_LIMITED' })).toBe(1);
  });
});

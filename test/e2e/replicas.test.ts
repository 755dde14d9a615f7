/**
 * Two replicas of the platform on one PostgreSQL: each with its own coordination server, gateway,
 * connection pools and LISTEN connection, as two processes would run them. Intents created through one gateway
 * stream to a device connected to the other, through 20 cuts of a 1,000-intent burst; a report made through the
 * other replica verifies (one public intent issuer); rate limits and the emergency stop hold across both.
 * PostgreSQL only: PGlite is one in-process database, so there is no second replica to run.
 */
import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrolTestDevice, type TestDevice } from '../src/devices.js';
import { burstWithCuts } from '../src/intent-burst.js';
import { startTestPlatform, type TestPlatform, type TestUser } from '../src/platform.js';
import { subscribe } from '../src/sse.js';

const onPostgres = Boolean(process.env['DATABASE_URL']);

const CREATE =
  'mutation C($i: CreateIntentInput!, $k: ID!) { createIntent(input: $i, idempotencyKey: $k) { intent { id seq } } }';
// One public name for both replicas, as a load balancer gives them.
const TOKEN_ISSUER = 'http://identity.agentgraph.test';
const INTENT_ISSUER = 'http://coordination.agentgraph.test';

async function gql(gatewayUrl: string, query: string, variables: Record<string, unknown>, token: string) {
  const res = await fetch(`${gatewayUrl}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
  });
  return { status: res.status, ...((await res.json()) as { data?: any; errors?: any[] }) };
}

describe.skipIf(!onPostgres)('two replicas on one PostgreSQL', () => {
  let p: TestPlatform;
  let b: { gatewayUrl: string; close(): Promise<void> };
  let alice: TestUser;
  let device: TestDevice;

  beforeAll(async () => {
    p = await startTestPlatform({
      TOKEN_ISSUER,
      INTENT_ISSUER,
      RATE_LIMIT_INTENT_PRINCIPAL: '1000/s:2000',
      RATE_LIMIT_INTENT_TENANT: '1000/s:2000',
      RATE_LIMIT_POST_PRINCIPAL: '0.01/s:10',
    });
    b = await p.replica();
    alice = await p.tokenFor({ tenant: 'replicated' });
    device = await enrolTestDevice(p, alice, 'two-homed', { enableRemoteActions: true });
  });
  afterAll(async () => {
    await p?.close();
  });

  const intentVia = (gatewayUrl: string) =>
    gql(
      gatewayUrl,
      CREATE,
      { i: { deviceId: device.id, action: 'open-app', expiresInSeconds: 600 }, k: randomUUID() },
      alice.token,
    );

  it('streams through one gateway what is created through the other: 1,000 intents, 20 cuts, each once in order', async () => {
    const { received, connections } = await burstWithCuts({
      total: 1000,
      cuts: 20,
      create: async () => {
        const r = await intentVia(p.gatewayUrl);
        if (r.errors) throw new Error(JSON.stringify(r.errors));
      },
      streamUrl: `${b.gatewayUrl}/graphql/stream`,
      deviceToken: device.token,
      seed: 0x2ab,
    });
    expect(connections).toBe(21);
    expect(received).toEqual(Array.from({ length: 1000 }, (_, i) => i + 1));
  });

  it('verifies a report made through the other replica (one intent issuer)', async () => {
    const created = await intentVia(p.gatewayUrl);
    const report = await new SignJWT({ intent: created.data.createIntent.intent.id, state: 'DELIVERED' })
      .setProtectedHeader({ alg: 'ES256', typ: 'intent-report+jwt' })
      .setIssuer(device.id)
      .setAudience(INTENT_ISSUER)
      .setJti(randomUUID())
      .setIssuedAt()
      .sign(device.privateKey);
    const r = await gql(
      b.gatewayUrl,
      'mutation R($r: String!, $k: ID!) { reportIntentState(report: $r, idempotencyKey: $k) { intent { state } } }',
      { r: report, k: randomUUID() },
      device.token,
    );
    expect(r.errors).toBeUndefined();
    expect(r.data.reportIntentState.intent.state).toBe('DELIVERED');
  });

  it('shares the rate-limit buckets and the emergency stop across replicas', async () => {
    // A tenant of its own with a tight post limit, drawn from alternately through both gateways.
    const tenant = `shared-${randomUUID().slice(0, 8)}`;
    const bob = await p.tokenFor({ tenant });
    const room = await gql(
      p.gatewayUrl,
      'mutation R($k: ID!) { createRoom(input: {name: "r"}, idempotencyKey: $k) { room { id } } }',
      { k: randomUUID() },
      bob.token,
    );
    const roomId = room.data.createRoom.room.id;
    const post = (url: string) =>
      gql(
        url,
        'mutation P($r: ID!, $k: ID!) { postMessage(roomId: $r, input: {body: "x"}, idempotencyKey: $k) { message { seq } } }',
        { r: roomId, k: randomUUID() },
        bob.token,
      );
    // A burst of 10 per principal (0.01/s refill): 10 pass, alternating replicas, then both refuse.
    const results = [];
    for (let i = 0; i < 10; i++) results.push(await post(i % 2 ? b.gatewayUrl : p.gatewayUrl));
    expect(results.every((r) => !r.errors)).toBe(true);
    const [viaA, viaB] = [await post(p.gatewayUrl), await post(b.gatewayUrl)];
    expect([viaA.status, viaB.status]).toEqual([429, 429]);

    // The stop engaged through replica A ends a stream held by replica B.
    const s = subscribe(
      `${b.gatewayUrl}/graphql/stream`,
      device.token,
      'subscription D { deviceIntents { seq } }',
    );
    // Let the subscription reach the subgraph (a live intent proves it) before engaging.
    expect((await intentVia(p.gatewayUrl)).errors).toBeUndefined();
    expect((await s.next()).data).toBeDefined();
    const engage = await gql(
      p.gatewayUrl,
      'mutation E($k: ID!) { engageEmergencyStop(reason: "replica test", idempotencyKey: $k) { status { engaged } } }',
      { k: randomUUID() },
      alice.token,
    );
    expect(engage.errors).toBeUndefined();
    for (;;) {
      const event = await s.next();
      if (event.errors) {
        expect(event.errors[0]!.extensions?.['code']).toBe('EMERGENCY_STOP');
        break;
      }
    }
    expect((await intentVia(b.gatewayUrl)).errors?.[0]?.extensions?.code).toBe('EMERGENCY_STOP');
  });
});

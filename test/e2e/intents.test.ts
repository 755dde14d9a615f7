/**
 * Signed intents end to end (docs/architecture.md#an-intents-path): a user creates an intent through the gateway, the device's graphql-sse
 * stream (graphql-sse createClient) receives it, the JWS verifies against coordination's published intent JWKS
 * with the SDK's verifier, the device reports DELIVERED → LOCALLY_APPROVED → EXECUTING → COMPLETED with its own
 * signatures, and a web subscriber sees every change. Refusals (forged, wrong device, wrong audience, stale,
 * replayed, illegal transitions), the sweeper on a fake clock, and resume after cutting the device stream.
 */
import { randomUUID } from 'node:crypto';
import { INTENT_JWKS_PATH, sweepIntents } from '@agentgraph/coordination';
import { generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createIntentVerifier, MemoryReplayCache } from '../../sdk-templates/typescript/src/intents/index.js';
import { startTestPlatform, type TestPlatform, type TestUser } from '../src/platform.js';
import { enrolTestDevice, type TestDevice } from '../src/devices.js';
import { burstWithCuts } from '../src/intent-burst.js';
import { subscribe } from '../src/sse.js';

let p: TestPlatform;
let alice: TestUser;
let issuer: string;

/** An ENROLLED device of the user's tenant with a key pair the test holds, and its own device access token. */
function enrolDevice(user: TestUser, name: string, enableRemote = true): Promise<TestDevice> {
  return enrolTestDevice(p, user, name, { enableRemoteActions: enableRemote });
}

const CREATE =
  'mutation C($i: CreateIntentInput!, $k: ID!) { createIntent(input: $i, idempotencyKey: $k) { intent { id seq state jws device { id } requester { id } } } }';
const REPORT =
  'mutation R($r: String!, $k: ID!) { reportIntentState(report: $r, idempotencyKey: $k) { intent { id state } } }';
const DEVICE_STREAM =
  'subscription D($a: Int) { deviceIntents(afterSeq: $a) { id seq action params state jws } }';
const UPDATES =
  'subscription U($i: ID!) { intentUpdates(intentId: $i) { n state actor reason intent { id } } }';

async function createIntent(
  deviceId: string,
  extra: Record<string, unknown> = {},
  token = alice.token,
): Promise<{ id: string; seq: number; state: string; jws: string }> {
  const r = await p.gql(
    CREATE,
    {
      i: { deviceId, action: 'open-app', params: '{"app":"notes"}', expiresInSeconds: 600, ...extra },
      k: randomUUID(),
    },
    token,
  );
  expect(r.errors).toBeUndefined();
  return r.data.createIntent.intent;
}

async function signReport(
  device: TestDevice,
  intentId: string,
  state: string,
  o: { key?: CryptoKey; iss?: string; aud?: string; iat?: number; jti?: string } = {},
): Promise<string> {
  return new SignJWT({ intent: intentId, state })
    .setProtectedHeader({ alg: 'ES256', typ: 'intent-report+jwt' })
    .setIssuer(o.iss ?? device.id)
    .setAudience(o.aud ?? issuer)
    .setJti(o.jti ?? randomUUID())
    .setIssuedAt(o.iat ?? Math.floor(Date.now() / 1000))
    .sign(o.key ?? device.privateKey);
}

async function report(device: TestDevice, jws: string) {
  return p.gql(REPORT, { r: jws, k: randomUUID() }, device.token);
}

beforeAll(async () => {
  p = await startTestPlatform({
    // A resume test under volume, not a rate-limit test (test/e2e/rate-limits.test.ts is that).
    RATE_LIMIT_INTENT_PRINCIPAL: 'off',
    RATE_LIMIT_INTENT_TENANT: 'off',
  });
  alice = await p.tokenFor({ tenant: 'intents' });
  issuer = new URL(p.subgraphs.coordination).origin;
});
afterAll(async () => {
  if (p?.errorLogs.length) console.error(p.errorLogs.join('\n'));
  await p?.close();
});

type DeviceEvent = {
  deviceIntents: { id: string; seq: number; action: string; params: string; state: string; jws: string };
};
type UpdateEvent = {
  intentUpdates: { n: number; state: string; actor: string; reason: string | null; intent: { id: string } };
};

describe('intents end to end', () => {
  it('streams a signed intent to its device, which reports each state; a web subscriber sees every change', async () => {
    const device = await enrolDevice(alice, 'laptop');
    const stream = subscribe<DeviceEvent>(`${p.gatewayUrl}/graphql/stream`, device.token, DEVICE_STREAM, {
      a: 0,
    });
    try {
      const created = await createIntent(device.id);
      expect(created).toMatchObject({ seq: 1, state: 'QUEUED', device: { id: device.id } });
      const updates = subscribe<UpdateEvent>(`${p.gatewayUrl}/graphql/stream`, alice.token, UPDATES, {
        i: created.id,
      });
      try {
        const event = (await stream.next()).data!.deviceIntents;
        expect(event).toMatchObject({ id: created.id, seq: 1, action: 'open-app', state: 'QUEUED' });
        expect(JSON.parse(event.params)).toEqual({ app: 'notes' });

        // The desktop's check: published JWKS at coordination's origin, typ, aud = this device, times, jti.
        const jwks = await fetch(`${issuer}${INTENT_JWKS_PATH}`);
        expect(jwks.status).toBe(200);
        const published = (await jwks.json()) as { keys: JWK[] };
        expect(published.keys.length).toBeGreaterThanOrEqual(1);
        expect(published.keys.every((k) => !('d' in k))).toBe(true);
        const verifier = createIntentVerifier({
          issuer,
          deviceId: device.id,
          jwksUrl: `${issuer}${INTENT_JWKS_PATH}`,
          replayCache: new MemoryReplayCache(),
        });
        const verified = await verifier.verify(event.jws);
        expect(verified).toMatchObject({
          id: created.id,
          tenantId: alice.tenantId,
          deviceId: device.id,
          requester: alice.userId,
          sequence: 1,
          action: 'open-app',
          params: { app: 'notes' },
        });
        expect(verified.expiresAt - verified.issuedAt).toBe(600_000);
        expect(verified.notBefore).toBe(verified.issuedAt);
        // Another device is not the audience.
        const other = createIntentVerifier({
          issuer,
          deviceId: randomUUID(),
          jwksUrl: `${issuer}${INTENT_JWKS_PATH}`,
          replayCache: new MemoryReplayCache(),
        });
        await expect(other.verify(event.jws)).rejects.toMatchObject({ reason: 'WRONG_AUDIENCE' });

        for (const state of ['DELIVERED', 'LOCALLY_APPROVED', 'EXECUTING', 'COMPLETED']) {
          const r = await report(device, await signReport(device, created.id, state));
          expect(r.errors).toBeUndefined();
          expect(r.data.reportIntentState.intent).toEqual({ id: created.id, state });
        }
        const seen: UpdateEvent['intentUpdates'][] = [];
        for (let i = 0; i < 5; i++) seen.push((await updates.next()).data!.intentUpdates);
        expect(seen.map((e) => [e.n, e.state, e.actor])).toEqual([
          [1, 'QUEUED', alice.userId],
          [2, 'DELIVERED', `device:${device.id}`],
          [3, 'LOCALLY_APPROVED', `device:${device.id}`],
          [4, 'EXECUTING', `device:${device.id}`],
          [5, 'COMPLETED', `device:${device.id}`],
        ]);
        expect(seen.every((e) => e.intent.id === created.id)).toBe(true);
        // A terminal state ends the web stream.
        await updates.ended;

        const q = await p.gql(
          'query Q($i: ID!) { intent(id: $i) { state executionDeadline history(first: 10) { edges { node { n state actor } } } } }',
          { i: created.id },
          alice.token,
        );
        expect(q.errors).toBeUndefined();
        expect(q.data.intent.state).toBe('COMPLETED');
        expect(q.data.intent.executionDeadline).not.toBeNull();
        expect(q.data.intent.history.edges.map((e: any) => e.node.state)).toEqual([
          'QUEUED',
          'DELIVERED',
          'LOCALLY_APPROVED',
          'EXECUTING',
          'COMPLETED',
        ]);
      } finally {
        updates.dispose();
      }
    } finally {
      stream.dispose();
    }
  });

  it('refuses intents to devices without remote actions, from viewers, and with bad arguments', async () => {
    const off = await enrolDevice(alice, 'locked', false);
    const r1 = await p.gql(
      CREATE,
      { i: { deviceId: off.id, action: 'x', expiresInSeconds: 60 }, k: randomUUID() },
      alice.token,
    );
    expect(r1.errors?.[0]?.extensions).toMatchObject({
      code: 'FORBIDDEN',
      reason: 'REMOTE_ACTIONS_DISABLED',
    });
    const viewer = await p.tokenFor({ tenant: 'intents', role: 'VIEWER' });
    const device = await enrolDevice(alice, 'desk');
    const r2 = await p.gql(
      CREATE,
      { i: { deviceId: device.id, action: 'x', expiresInSeconds: 60 }, k: randomUUID() },
      viewer.token,
    );
    expect(r2.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const bad: Array<[Record<string, unknown>, string]> = [
      [{ expiresInSeconds: 5 }, 'input.expiresInSeconds'],
      [{ expiresInSeconds: 3601 }, 'input.expiresInSeconds'],
      [{ params: '[1]' }, 'input.params'],
      [{ action: '' }, 'input.action'],
    ];
    for (const [input, argument] of bad) {
      const r = await p.gql(
        CREATE,
        { i: { deviceId: device.id, action: 'x', expiresInSeconds: 60, ...input }, k: randomUUID() },
        alice.token,
      );
      expect(r.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', argument });
    }
    const unknown = await p.gql(
      CREATE,
      { i: { deviceId: randomUUID(), action: 'x', expiresInSeconds: 60 }, k: randomUUID() },
      alice.token,
    );
    expect(unknown.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    // A user's token cannot open a device stream.
    const s = subscribe(`${p.gatewayUrl}/graphql/stream`, alice.token, DEVICE_STREAM, { a: 0 });
    try {
      const e = await s.next();
      expect(e.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    } finally {
      s.dispose();
    }
  });

  it('refuses forged, wrong-device, wrong-audience, stale and replayed reports, and illegal transitions', async () => {
    const device = await enrolDevice(alice, 'reporter');
    const intruder = await enrolDevice(alice, 'intruder');
    const intent = await createIntent(device.id);
    const reason = (r: Awaited<ReturnType<typeof report>>) => r.errors?.[0]?.extensions?.['reason'];

    const stranger = (await generateKeyPair('ES256')).privateKey;
    expect(
      reason(await report(device, await signReport(device, intent.id, 'DELIVERED', { key: stranger }))),
    ).toBe('FORGED');
    // The other device, with its own token and key, reporting on this device's intent.
    expect(reason(await report(intruder, await signReport(intruder, intent.id, 'DELIVERED')))).toBe(
      'WRONG_DEVICE',
    );
    // The right token, but a report claiming another issuer.
    expect(
      reason(await report(device, await signReport(device, intent.id, 'DELIVERED', { iss: intruder.id }))),
    ).toBe('WRONG_DEVICE');
    expect(
      reason(
        await report(device, await signReport(device, intent.id, 'DELIVERED', { aud: 'https://evil.test' })),
      ),
    ).toBe('WRONG_AUDIENCE');
    const old = Math.floor(Date.now() / 1000) - 300;
    expect(reason(await report(device, await signReport(device, intent.id, 'DELIVERED', { iat: old })))).toBe(
      'STALE',
    );
    // A user's token cannot report.
    const byUser = await p.gql(
      REPORT,
      { r: await signReport(device, intent.id, 'DELIVERED'), k: randomUUID() },
      alice.token,
    );
    expect(byUser.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');

    // Illegal: QUEUED → COMPLETED; the device may not set EXPIRED (the server's alone).
    for (const state of ['COMPLETED', 'EXPIRED', 'OUTCOME_UNKNOWN', 'CANCELLED']) {
      const r = await report(device, await signReport(device, intent.id, state));
      expect(r.errors?.[0]?.extensions).toMatchObject({ code: 'VERSION_CONFLICT', state: 'QUEUED' });
    }

    const delivered = await signReport(device, intent.id, 'DELIVERED');
    const key = randomUUID();
    const ok = await p.gql(REPORT, { r: delivered, k: key }, device.token);
    expect(ok.data?.reportIntentState.intent.state).toBe('DELIVERED');
    // The same request again (same idempotency key) is the idempotent replay, not a second change.
    const again = await p.gql(REPORT, { r: delivered, k: key }, device.token);
    expect(again.extensions?.['idempotentReplay']).toBe(true);
    // The same report under a new key is a replay attack.
    expect(reason(await report(device, delivered))).toBe('REPLAYED');

    // Cancel: only the requester, and only while QUEUED or DELIVERED.
    const cancel = (id: string, token: string) =>
      p.gql(
        'mutation X($i: ID!, $k: ID!) { cancelIntent(id: $i, idempotencyKey: $k) { intent { state } } }',
        {
          i: id,
          k: randomUUID(),
        },
        token,
      );
    const other = await p.tokenFor({ tenant: 'intents-elsewhere' });
    expect((await cancel(intent.id, other.token)).errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    expect((await cancel(intent.id, alice.token)).data?.cancelIntent.intent.state).toBe('CANCELLED');
    expect((await cancel(intent.id, alice.token)).errors?.[0]?.extensions?.code).toBe('VERSION_CONFLICT');
    const late = await report(device, await signReport(device, intent.id, 'LOCALLY_APPROVED'));
    expect(late.errors?.[0]?.extensions).toMatchObject({ code: 'VERSION_CONFLICT', state: 'CANCELLED' });

    // Another tenant sees nothing.
    const foreign = await p.gql('query Q($i: ID!) { intent(id: $i) { id } }', { i: intent.id }, other.token);
    expect(foreign.data?.intent).toBeNull();
  });

  it('resumes the device stream after 20 cuts at random during a burst of 1,000 intents: each once, in order', async () => {
    const device = await enrolDevice(alice, 'flaky');
    const total = 1000;
    const { received, connections } = await burstWithCuts({
      total,
      cuts: 20,
      create: async () => void (await createIntent(device.id)),
      streamUrl: `${p.gatewayUrl}/graphql/stream`,
      deviceToken: device.token,
    });
    expect(connections).toBe(21);
    expect(received).toEqual(Array.from({ length: total }, (_, i) => i + 1));

    // The same backlog as a query (polling fallback).
    const page = await p.gql(
      'query P($d: ID!, $a: Int) { deviceIntents(deviceId: $d, afterSeq: $a, first: 5) { edges { node { seq } } pageInfo { hasNextPage } } }',
      { d: device.id, a: 50 },
      device.token,
    );
    expect(page.errors).toBeUndefined();
    expect(page.data.deviceIntents.edges.map((e: any) => e.node.seq)).toEqual([51, 52, 53, 54, 55]);
    expect(page.data.deviceIntents.pageInfo.hasNextPage).toBe(true);
    const intruder = await enrolDevice(alice, 'peeker');
    const peek = await p.gql(
      'query P($d: ID!) { deviceIntents(deviceId: $d) { edges { node { seq } } } }',
      { d: device.id },
      intruder.token,
    );
    expect(peek.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
  });

  it('expires open intents and marks overdue executions OUTCOME_UNKNOWN on a fake clock', async () => {
    const device = await enrolDevice(alice, 'sleepy');
    const open = await createIntent(device.id, { expiresInSeconds: 60 });
    const running = await createIntent(device.id, { expiresInSeconds: 60, executionTimeoutSeconds: 120 });
    for (const state of ['DELIVERED', 'LOCALLY_APPROVED', 'EXECUTING']) {
      expect((await report(device, await signReport(device, running.id, state))).errors).toBeUndefined();
    }
    const stateOf = async (id: string) =>
      (await p.gql('query Q($i: ID!) { intent(id: $i) { state } }', { i: id }, alice.token)).data.intent
        .state;
    const t0 = Date.now();
    // Before expiry nothing of ours changes.
    await sweepIntents(p.platform.dbs.coordination, new Date(t0 + 30_000));
    expect([await stateOf(open.id), await stateOf(running.id)]).toEqual(['QUEUED', 'EXECUTING']);
    // Past expiry: the open one expires; the executing one is not expired (it has its own deadline).
    await sweepIntents(p.platform.dbs.coordination, new Date(t0 + 61_000));
    expect([await stateOf(open.id), await stateOf(running.id)]).toEqual(['EXPIRED', 'EXECUTING']);
    // Past the execution deadline: OUTCOME_UNKNOWN, set by the server.
    await sweepIntents(p.platform.dbs.coordination, new Date(t0 + 121_000));
    expect(await stateOf(running.id)).toBe('OUTCOME_UNKNOWN');
    const h = await p.gql(
      'query Q($i: ID!) { intent(id: $i) { history { edges { node { state actor reason } } } } }',
      { i: running.id },
      alice.token,
    );
    expect(h.data.intent.history.edges.at(-1).node).toEqual({
      state: 'OUTCOME_UNKNOWN',
      actor: 'system',
      reason: 'no outcome reported before the deadline',
    });
    // Final: a late outcome from the device is refused.
    const late = await report(device, await signReport(device, running.id, 'COMPLETED'));
    expect(late.errors?.[0]?.extensions).toMatchObject({
      code: 'VERSION_CONFLICT',
      state: 'OUTCOME_UNKNOWN',
    });
  });
});

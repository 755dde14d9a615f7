/**
 * The emergency stop and the rate limits through the gateway (coordination README, "Rate limits, the emergency stop, audit"). A tenant admin engages the stop: within a
 * second the tenant's open streams (a device's intent stream, a room stream) get a last EMERGENCY_STOP event and
 * end, another tenant's stream goes on, new streams and intents are refused (HTTP 423), and after the lift both work
 * again. Each use is audited with who, when, why and from where (the address the gateway saw, not the one the
 * client claimed). The deployment-wide stop (operators, on the owner connection) ends every tenant's streams.
 * Rate limits: RATE_LIMITED with retryAfterMs, and HTTP 429 with Retry-After when the whole request is refused.
 */
import { randomUUID } from 'node:crypto';
import { engageStop, liftStop, runOperatorCli } from '@agentgraph/coordination';
import type { ExecutionResult } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrolTestDevice, type TestDevice } from '../src/devices.js';
import { startTestPlatform, type TestPlatform, type TestUser } from '../src/platform.js';
import { subscribe, type Subscription } from '../src/sse.js';

let p: TestPlatform;
let admin: TestUser;
let operator: TestUser;
let other: TestUser;
let device: TestDevice;
let streamUrl: string;

const ENGAGE =
  'mutation E($r: String!, $k: ID!) { engageEmergencyStop(reason: $r, idempotencyKey: $k) { status { engaged tenant { scope reason engagedBy } } } }';
const LIFT =
  'mutation L($k: ID!) { liftEmergencyStop(idempotencyKey: $k) { status { engaged tenant { reason } } } }';
const STATUS = `{ emergencyStop { engaged tenant { reason } global { reason engagedBy }
  events(first: 10) { edges { node { action scope actor reason origin { ip forwardedFor userAgent clientId correlationId } } } } } }`;
const CREATE_ROOM =
  'mutation R($n: String!, $k: ID!) { createRoom(input: {name: $n}, idempotencyKey: $k) { room { id } } }';
const POST =
  'mutation P($r: ID!, $b: String!, $k: ID!) { postMessage(roomId: $r, input: {body: $b}, idempotencyKey: $k) { message { seq } } }';
const ROOM_STREAM = 'subscription S($r: ID!) { roomMessages(roomId: $r, afterSeq: 0) { seq body } }';
const DEVICE_STREAM = 'subscription D { deviceIntents(afterSeq: 0) { id seq } }';
const CREATE_INTENT =
  'mutation C($i: CreateIntentInput!, $k: ID!) { createIntent(input: $i, idempotencyKey: $k) { intent { id seq } } }';

const code = (r: { errors?: { extensions?: Record<string, unknown> }[] }) =>
  r.errors?.[0]?.extensions?.['code'];

async function room(user: TestUser, name: string): Promise<string> {
  const r = await p.gql(CREATE_ROOM, { n: name, k: randomUUID() }, user.token);
  expect(r.errors).toBeUndefined();
  return r.data.createRoom.room.id;
}

function intent(token = admin.token) {
  return p.gql(
    CREATE_INTENT,
    { i: { deviceId: device.id, action: 'open-app', expiresInSeconds: 600 }, k: randomUUID() },
    token,
  );
}

/** Waits for the stream's last event: an EMERGENCY_STOP error; resolves with the time it arrived. */
async function stoppedEvent(s: Subscription): Promise<{ event: ExecutionResult; at: number }> {
  for (;;) {
    const event = await s.next();
    if (event.errors) return { event, at: performance.now() };
  }
}

beforeAll(async () => {
  p = await startTestPlatform({ RATE_LIMIT_POST_PRINCIPAL: '0.01/s:3', RATE_LIMIT_POST_TENANT: '0.01/s:5' });
  streamUrl = `${p.gatewayUrl}/graphql/stream`;
  admin = await p.tokenFor({ tenant: 'stop-tenant', role: 'ADMIN' });
  operator = await p.tokenFor({ tenant: 'stop-tenant', role: 'OPERATOR' });
  other = await p.tokenFor({ tenant: 'bystander' });
  device = await enrolTestDevice(p, admin, 'desk', { enableRemoteActions: true });
});

afterAll(async () => {
  await p?.close();
});

describe('the tenant emergency stop', () => {
  it('ends the tenant’s streams within a second, spares other tenants, refuses new work, and lifts', async () => {
    const ownRoom = await room(admin, 'ops');
    const otherRoom = await room(other, 'elsewhere');
    const deviceStream = subscribe(streamUrl, device.token, DEVICE_STREAM);
    const roomStream = subscribe(streamUrl, admin.token, ROOM_STREAM, { r: ownRoom });
    const bystander = subscribe<{ roomMessages: { seq: number } }>(streamUrl, other.token, ROOM_STREAM, {
      r: otherRoom,
    });
    // The streams are live: each has received an event.
    expect((await intent()).errors).toBeUndefined();
    expect((await deviceStream.next()).data).toBeDefined();
    expect(
      (await p.gql(POST, { r: ownRoom, b: 'before', k: randomUUID() }, admin.token)).errors,
    ).toBeUndefined();
    expect((await roomStream.next()).data).toBeDefined();

    const engagedAt = performance.now();
    const engage = await p.gql(ENGAGE, { r: 'runaway agent on desk', k: randomUUID() }, admin.token, {
      'user-agent': 'console-test/1.0',
      'x-forwarded-for': '203.0.113.7',
    });
    expect(engage.errors).toBeUndefined();
    expect(engage.data.engageEmergencyStop.status).toEqual({
      engaged: true,
      tenant: { scope: 'TENANT', reason: 'runaway agent on desk', engagedBy: admin.userId },
    });
    const [d, r] = await Promise.all([stoppedEvent(deviceStream), stoppedEvent(roomStream)]);
    for (const { event, at } of [d, r]) {
      expect(event.errors?.[0]?.extensions?.['code']).toBe('EMERGENCY_STOP');
      // The promise of the switch: within a second of the engage mutation's answer being sent.
      expect(at - engagedAt).toBeLessThan(1000);
    }
    await Promise.all([deviceStream.ended, roomStream.ended]);

    // Another tenant's stream is untouched.
    expect(
      (await p.gql(POST, { r: otherRoom, b: 'still here', k: randomUUID() }, other.token)).errors,
    ).toBeUndefined();
    expect((await bystander.next()).data?.roomMessages.seq).toBe(1);

    // New streams and intents are refused while it is engaged.
    const refusedStream = subscribe(streamUrl, device.token, DEVICE_STREAM);
    expect((await refusedStream.next()).errors?.[0]?.extensions?.['code']).toBe('EMERGENCY_STOP');
    refusedStream.dispose();
    const refused = await intent();
    expect(code(refused)).toBe('EMERGENCY_STOP');
    expect(refused.status).toBe(423);

    // Engaging again changes nothing; an OPERATOR or a device token cannot lift it.
    const again = await p.gql(ENGAGE, { r: 'second reason', k: randomUUID() }, admin.token);
    expect(again.data.engageEmergencyStop.status.tenant.reason).toBe('runaway agent on desk');
    expect(code(await p.gql(LIFT, { k: randomUUID() }, operator.token))).toBe('FORBIDDEN');
    expect(code(await p.gql(LIFT, { k: randomUUID() }, device.token))).toBe('FORBIDDEN');

    const lift = await p.gql(LIFT, { k: randomUUID() }, admin.token, { 'user-agent': 'console-test/1.0' });
    expect(lift.data.liftEmergencyStop.status).toEqual({ engaged: false, tenant: null });
    const resumed = subscribe<{ deviceIntents: { seq: number } }>(streamUrl, device.token, DEVICE_STREAM);
    expect((await resumed.next()).data?.deviceIntents.seq).toBe(1);
    expect((await intent()).errors).toBeUndefined();
    expect((await resumed.next()).data?.deviceIntents.seq).toBe(2);
    resumed.dispose();
    bystander.dispose();

    // The audit: who, what, when, why, from where; the origin only for ADMIN and OWNER.
    const status = await p.gql(STATUS, {}, admin.token);
    expect(status.errors).toBeUndefined();
    const events = status.data.emergencyStop.events.edges.map((e: { node: unknown }) => e.node);
    expect(events).toHaveLength(2);
    expect(events[0]).toMatchObject({ action: 'LIFTED', scope: 'TENANT', actor: admin.userId, reason: null });
    expect(events[1]).toMatchObject({
      action: 'ENGAGED',
      scope: 'TENANT',
      actor: admin.userId,
      reason: 'runaway agent on desk',
      origin: {
        ip: '127.0.0.1', // what the gateway saw, not the address the client claimed
        forwardedFor: '203.0.113.7, 127.0.0.1',
        userAgent: 'console-test/1.0',
      },
    });
    expect(events[1].origin.correlationId).toMatch(/.+/);
    const asOperator = await p.gql(
      STATUS.replace(/events\(first: 10\)[\s\S]*\} \} \} \}/, '} }'),
      {},
      operator.token,
    );
    expect(asOperator.data?.emergencyStop).toEqual({ engaged: false, tenant: null, global: null });
    expect(code(await p.gql(STATUS, {}, operator.token))).toBe('FORBIDDEN');
  });

  it('records where each intent change came from, shown to admins only', async () => {
    const created = await p.gql(
      CREATE_INTENT,
      { i: { deviceId: device.id, action: 'lock-screen', expiresInSeconds: 600 }, k: randomUUID() },
      admin.token,
      { 'user-agent': 'audit-ua/2', 'x-forwarded-for': '198.51.100.4' },
    );
    expect(created.errors).toBeUndefined();
    const query = `query H($id: ID!) { intent(id: $id) { history { edges { node { state actor origin { ip forwardedFor userAgent clientId } } } } } }`;
    const seen = await p.gql(query, { id: created.data.createIntent.intent.id }, admin.token);
    expect(seen.data.intent.history.edges[0].node).toEqual({
      state: 'QUEUED',
      actor: admin.userId,
      origin: {
        ip: '127.0.0.1',
        forwardedFor: '198.51.100.4, 127.0.0.1',
        userAgent: 'audit-ua/2',
        clientId: null,
      },
    });
    const hidden = await p.gql(query, { id: created.data.createIntent.intent.id }, operator.token);
    expect(hidden.data.intent.history.edges[0].node.origin).toBeNull();
  });
});

describe('the deployment-wide emergency stop', () => {
  it('ends every tenant’s streams and is lifted by operators only', async () => {
    const a = subscribe(streamUrl, admin.token, ROOM_STREAM, { r: await room(admin, 'global-a') });
    const b = subscribe(streamUrl, other.token, ROOM_STREAM, { r: await room(other, 'global-b') });
    // The operator CLI's transaction on the owner connection (the CLI itself opens DATABASE_URL).
    const change = {
      tenantId: null,
      actor: 'operator:oncall',
      at: new Date(),
      origin: { userAgent: 'coordination-admin' },
    };
    expect(
      await p.platform.owner.transaction((tx) => engageStop(tx, { ...change, reason: 'incident 42' })),
    ).toBe(true);
    for (const s of [a, b]) {
      const { event } = await stoppedEvent(s);
      expect(event.errors?.[0]?.extensions).toMatchObject({ code: 'EMERGENCY_STOP', scope: 'GLOBAL' });
    }
    const status = await p.gql(
      '{ emergencyStop { engaged tenant { reason } global { reason engagedBy } } }',
      {},
      other.token,
    );
    expect(status.data.emergencyStop).toEqual({
      engaged: true,
      tenant: null,
      global: { reason: 'incident 42', engagedBy: 'operator:oncall' },
    });
    // A tenant admin cannot lift the global stop (lifting changes only the tenant's own).
    expect((await p.gql(LIFT, { k: randomUUID() }, admin.token)).data.liftEmergencyStop.status.engaged).toBe(
      true,
    );
    expect(code(await intent())).toBe('EMERGENCY_STOP');
    expect(await p.platform.owner.transaction((tx) => liftStop(tx, change))).toBe(true);
    expect((await intent()).errors).toBeUndefined();
  });

  it('the operator CLI refuses bad usage before touching any database', async () => {
    const err: string[] = [];
    const io = { out: () => undefined, err: (l: string) => err.push(l) };
    expect(await runOperatorCli(['emergency-stop', 'engage'], {}, io)).toBe(2);
    expect(err.at(-1)).toContain('--reason');
    expect(await runOperatorCli(['emergency-stop', 'explode'], {}, io)).toBe(2);
    expect(await runOperatorCli(['emergency-stop', 'lift', '--reason', 'x'], {}, io)).toBe(2);
  });
});

describe('rate limits', () => {
  it('refuses the fourth post of a principal and the sixth of the tenant with 429, Retry-After and retryAfterMs', async () => {
    const tenant = `limits-${randomUUID().slice(0, 8)}`;
    const alice = await p.tokenFor({ tenant });
    // Another principal of the same tenant: the user's desktop (a device token has a bucket of its own).
    const bob = { ...alice, token: (await enrolTestDevice(p, alice, 'bob-desk')).token };
    const r = await room(alice, 'busy');
    const post = (u: TestUser) => p.gql(POST, { r, b: 'x', k: randomUUID() }, u.token);
    for (let i = 0; i < 3; i++) expect((await post(alice)).errors).toBeUndefined();
    const limited = await post(alice);
    expect(limited.status).toBe(429);
    expect(code(limited)).toBe('RATE_LIMITED');
    const wait = limited.errors![0]!.extensions!['retryAfterMs'] as number;
    // 0.01 tokens/s: a whole token takes about 100 s (less the trickle since the burst).
    expect(wait).toBeGreaterThan(90_000);
    expect(wait).toBeLessThanOrEqual(100_000);
    expect(Number(limited.headers.get('retry-after'))).toBe(Math.ceil(wait / 1000));
    // The device has its own principal bucket but shares the tenant's: two more pass, then the tenant is out.
    expect((await post(bob)).errors).toBeUndefined();
    expect((await post(bob)).errors).toBeUndefined();
    const tenantLimited = await post(bob);
    expect(code(tenantLimited)).toBe('RATE_LIMITED');
    expect(tenantLimited.errors![0]!.message).toContain('your tenant');
    // Nothing was appended for the refused posts.
    const seqs = await p.gql(
      'query Q($r: ID!) { room(id: $r) { messages(first: 50) { edges { node { seq } } } } }',
      { r },
      alice.token,
    );
    expect(seqs.data.room.messages.edges).toHaveLength(5);
  });
});

/**
 * Who may call what (identity README): a device's token carries its approving member's role, but may do only what a device does, and a
 * sidecar's (exchanged) token only what the sidecar does; everything else is a person's. One test per row of the
 * table in subgraphs/identity/README.md ("Who may call what"), over real HTTP through the gateway (and straight at
 * the subgraphs: each enforces it itself). The two reported exploits come first: a device token making a member ADMIN,
 * and a device token creating intents for another device.
 */
import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deviceAccessToken, enrolTestDevice, type TestDevice } from '../src/devices.js';
import { startTestPlatform, type GraphQLResult, type TestPlatform, type TestUser } from '../src/platform.js';
import { subscribe } from '../src/sse.js';

let p: TestPlatform;
let owner: TestUser;
/** A VIEWER member of the owner's tenant (the target of the role change). */
let bob: { userId: string; email: string };
let desk: TestDevice;
let other: TestDevice;
/** The desk's sidecar: an exchanged token (act) carrying the desk's device id, read and write scopes. */
let sidecar: string;
let workspaceId: string;
let roomId: string;

const k = () => randomUUID();
const codeOf = (r: GraphQLResult) => r.errors?.[0]?.extensions?.code;

/** A token obtained by token exchange for the desk, as identity issues it (act, did, the member's role). */
async function sidecarToken(device: TestDevice): Promise<string> {
  return deviceAccessToken(p, owner, device.id, 300, { act: { sub: 'agentgraph-desktop' } });
}

/** Refused as a device's or sidecar's operation, before any resolver ran. */
function expectPrincipalRefusal(r: GraphQLResult, kind: 'DEVICE' | 'SIDECAR', field: string) {
  // No answer: no data at all, or (a nullable root field through the gateway) null.
  expect(Object.values(r.data ?? {}).filter((v) => v !== null)).toEqual([]);
  expect(r.errors?.[0]?.extensions).toMatchObject({ code: 'FORBIDDEN', principalKind: kind, field });
  if (kind === 'SIDECAR') expect(r.errors![0]!.message).toContain('token exchange');
}

/** Refused for both the device and its sidecar. */
async function personsOnly(field: string, query: string, vars: () => Record<string, unknown>) {
  expectPrincipalRefusal(await p.gql(query, vars(), desk.token), 'DEVICE', field);
  expectPrincipalRefusal(await p.gql(query, vars(), sidecar), 'SIDECAR', field);
}

async function ok(query: string, vars: Record<string, unknown>, token: string): Promise<any> {
  const r = await p.gql(query, vars, token);
  expect(r.errors).toBeUndefined();
  return r.data;
}

/** POSTs straight to a subgraph's /graphql (not through the gateway). */
async function atSubgraph(url: string, query: string, variables: Record<string, unknown>, token: string) {
  const res = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
  });
  return { status: res.status, ...((await res.json()) as Omit<GraphQLResult, 'status' | 'headers'>) };
}

/** Opens a stream through the gateway and answers its refusal (status and body), or null if it opened. */
async function streamRefusal(token: string, query: string, variables: Record<string, unknown> = {}) {
  const res = await fetch(`${p.gatewayUrl}/graphql/stream`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'text/event-stream',
      authorization: `Bearer ${token}`,
    },
    body: JSON.stringify({ query, variables }),
  });
  if (res.ok) {
    await res.body?.cancel();
    return null;
  }
  return { status: res.status, body: (await res.json()) as { errors: GraphQLResult['errors'] } };
}

const ROLE_OF = 'query { tenant { members(first: 20) { edges { node { role user { id } } } } } }';
async function roleOf(userId: string): Promise<string | undefined> {
  const d = await ok(ROLE_OF, {}, owner.token);
  return d.tenant.members.edges.find((e: any) => e.node.user.id === userId)?.node.role;
}

const CHANGE_ROLE =
  'mutation C($u: ID!, $r: Role!, $k: ID!) { changeMemberRole(userId: $u, role: $r, idempotencyKey: $k) { membership { role } } }';
const CREATE_INTENT =
  'mutation C($d: ID!, $k: ID!) { createIntent(input: { deviceId: $d, action: "open-app", params: "{}", expiresInSeconds: 600 }, idempotencyKey: $k) { intent { id } } }';
const DEVICE_INTENTS =
  'query D($d: ID!) { deviceIntents(deviceId: $d, first: 50) { edges { node { id } } } }';

beforeAll(async () => {
  p = await startTestPlatform();
  owner = await p.tokenFor({ tenant: 'principals' });
  // Bob: the owner of a tenant of his own, added to this one as a VIEWER by e-mail.
  const home = await p.tokenFor({ tenant: 'bob-home' });
  bob = { userId: home.userId, email: home.email };
  await ok(
    'mutation A($e: String!, $k: ID!) { addMember(input: { email: $e, role: VIEWER }, idempotencyKey: $k) { membership { role } } }',
    { e: bob.email, k: k() },
    owner.token,
  );
  // Remote actions switched on by each device's own token (the "allowed" half of that row).
  desk = await enrolTestDevice(p, owner, 'desk', { enableRemoteActions: true });
  other = await enrolTestDevice(p, owner, 'other', { enableRemoteActions: true });
  sidecar = await sidecarToken(desk);
  workspaceId = (
    await ok(
      'mutation W($k: ID!) { createWorkspace(input: { name: "notes" }, idempotencyKey: $k) { workspace { id } } }',
      { k: k() },
      owner.token,
    )
  ).createWorkspace.workspace.id;
  roomId = (
    await ok(
      'mutation R($k: ID!) { createRoom(input: { name: "ops" }, idempotencyKey: $k) { room { id } } }',
      { k: k() },
      owner.token,
    )
  ).createRoom.room.id;
}, 60_000);
afterAll(async () => {
  if (p?.errorLogs.length) console.error(p.errorLogs.join('\n'));
  await p?.close();
});

describe('the reported exploits', () => {
  it('a device token cannot make a member ADMIN (through the gateway or straight at identity)', async () => {
    expect(owner.role).toBe('OWNER'); // the device's token carries OWNER: the role alone would allow it
    const vars = () => ({ u: bob.userId, r: 'ADMIN', k: k() });
    expectPrincipalRefusal(
      await p.gql(CHANGE_ROLE, vars(), desk.token),
      'DEVICE',
      'Mutation.changeMemberRole',
    );
    const direct = await atSubgraph(p.subgraphs.identity, CHANGE_ROLE, vars(), desk.token);
    expect(direct.status).toBe(403);
    expectPrincipalRefusal(direct as GraphQLResult, 'DEVICE', 'Mutation.changeMemberRole');
    // Hidden behind a fragment spread: still the same root field.
    const spread = await atSubgraph(
      p.subgraphs.identity,
      'mutation C($u: ID!, $k: ID!) { ...F } fragment F on Mutation { changeMemberRole(userId: $u, role: ADMIN, idempotencyKey: $k) { membership { role } } }',
      { u: bob.userId, k: k() },
      desk.token,
    );
    expectPrincipalRefusal(spread as GraphQLResult, 'DEVICE', 'Mutation.changeMemberRole');
    expect(await roleOf(bob.userId)).toBe('VIEWER');
    // The member's own token may (and the role is put back for the other tests).
    await ok(CHANGE_ROLE, { u: bob.userId, r: 'ADMIN', k: k() }, owner.token);
    expect(await roleOf(bob.userId)).toBe('ADMIN');
    await ok(CHANGE_ROLE, { u: bob.userId, r: 'VIEWER', k: k() }, owner.token);
  });

  it('a device token cannot create intents, for another device or for itself', async () => {
    for (const target of [other, desk]) {
      const vars = () => ({ d: target.id, k: k() });
      expectPrincipalRefusal(
        await p.gql(CREATE_INTENT, vars(), desk.token),
        'DEVICE',
        'Mutation.createIntent',
      );
      const direct = await atSubgraph(p.subgraphs.coordination, CREATE_INTENT, vars(), desk.token);
      expectPrincipalRefusal(direct as GraphQLResult, 'DEVICE', 'Mutation.createIntent');
      expectPrincipalRefusal(await p.gql(CREATE_INTENT, vars(), sidecar), 'SIDECAR', 'Mutation.createIntent');
      const intents = await ok(DEVICE_INTENTS, { d: target.id }, owner.token);
      expect(intents.deviceIntents.edges).toEqual([]);
    }
  });
});

describe('who may call what (subgraphs/identity/README.md)', () => {
  it('identity reads (viewer, tenant, device, capabilities): every kind', async () => {
    const q = '{ viewer { user { id } } tenant { id } capabilities { schemaVersion } }';
    for (const t of [owner.token, desk.token, sidecar]) {
      const d = await ok(q, {}, t);
      expect(d.viewer.user.id).toBe(owner.userId);
      expect(d.tenant.id).toBe(owner.tenantId);
      const dev = await ok('query D($i: ID!) { device(id: $i) { id status } }', { i: other.id }, t);
      expect(dev.device).toEqual({ id: other.id, status: 'ENROLLED' });
    }
  });

  it("deviceAuthorization, approve and deny enrolment: a person's (OPERATOR+)", async () => {
    await personsOnly(
      'Query.deviceAuthorization',
      'query V($c: String!) { deviceAuthorization(userCode: $c) { userCode } }',
      () => ({ c: 'BCDF-GHJK' }),
    );
    for (const field of ['approveDeviceAuthorization', 'denyDeviceAuthorization']) {
      await personsOnly(
        `Mutation.${field}`,
        `mutation A($c: String!, $k: ID!) { ${field}(userCode: $c, idempotencyKey: $k) { __typename } }`,
        () => ({ c: 'BCDF-GHJK', k: k() }),
      );
    }
  });

  it("revokeDevice and renameDevice (another device or its own): a person's (the owner or ADMIN+)", async () => {
    for (const target of [other, desk]) {
      await personsOnly(
        'Mutation.revokeDevice',
        'mutation V($i: ID!, $k: ID!) { revokeDevice(id: $i, idempotencyKey: $k) { device { status } } }',
        () => ({ i: target.id, k: k() }),
      );
      await personsOnly(
        'Mutation.renameDevice',
        'mutation N($i: ID!, $k: ID!) { renameDevice(id: $i, name: "taken", idempotencyKey: $k) { device { name } } }',
        () => ({ i: target.id, k: k() }),
      );
    }
    const d = await ok('query D($i: ID!) { device(id: $i) { status name } }', { i: other.id }, owner.token);
    expect(d.device).toEqual({ status: 'ENROLLED', name: 'other' });
  });

  it("addMember, changeMemberRole, removeMember: a person's (ADMIN+)", async () => {
    await personsOnly(
      'Mutation.addMember',
      'mutation A($k: ID!) { addMember(input: { email: "x@principals.test", role: ADMIN }, idempotencyKey: $k) { membership { role } } }',
      () => ({ k: k() }),
    );
    await personsOnly('Mutation.changeMemberRole', CHANGE_ROLE, () => ({
      u: bob.userId,
      r: 'OWNER',
      k: k(),
    }));
    await personsOnly(
      'Mutation.removeMember',
      'mutation R($u: ID!, $k: ID!) { removeMember(userId: $u, idempotencyKey: $k) { userId } }',
      () => ({ u: bob.userId, k: k() }),
    );
    expect(await roleOf(bob.userId)).toBe('VIEWER');
  });

  it("updateProfile and registerDevice: a person's", async () => {
    await personsOnly(
      'Mutation.updateProfile',
      'mutation U($k: ID!) { updateProfile(input: { displayName: "Mallory" }, idempotencyKey: $k) { user { displayName } } }',
      () => ({ k: k() }),
    );
    await personsOnly(
      'Mutation.registerDevice',
      'mutation G($k: ID!) { registerDevice(input: { name: "rogue", platform: "linux" }, idempotencyKey: $k) { device { id } } }',
      () => ({ k: k() }),
    );
  });

  it('setRemoteActionsEnabled: the device itself only (not a person, not its sidecar)', async () => {
    const q =
      'mutation S($e: Boolean!, $k: ID!) { setRemoteActionsEnabled(enabled: $e, idempotencyKey: $k) { device { id remoteActionsEnabled } } }';
    const d = await ok(q, { e: true, k: k() }, desk.token);
    expect(d.setRemoteActionsEnabled.device).toEqual({ id: desk.id, remoteActionsEnabled: true });
    expectPrincipalRefusal(
      await p.gql(q, { e: false, k: k() }, sidecar),
      'SIDECAR',
      'Mutation.setRemoteActionsEnabled',
    );
    expect(codeOf(await p.gql(q, { e: false, k: k() }, owner.token))).toBe('FORBIDDEN');
  });

  it("createIntent and cancelIntent: a person's (OPERATOR+)", async () => {
    const created = await ok(CREATE_INTENT, { d: desk.id, k: k() }, owner.token);
    const id = created.createIntent.intent.id as string;
    await personsOnly(
      'Mutation.cancelIntent',
      'mutation X($i: ID!, $k: ID!) { cancelIntent(id: $i, idempotencyKey: $k) { intent { state } } }',
      () => ({ i: id, k: k() }),
    );
    const state = await ok('query I($i: ID!) { intent(id: $i) { state } }', { i: id }, owner.token);
    expect(state.intent.state).toBe('QUEUED');
  });

  it('its own intents (stream, backlog, one intent, reports): the device only, and only its own', async () => {
    const created = await ok(CREATE_INTENT, { d: desk.id, k: k() }, owner.token);
    const id = created.createIntent.intent.id as string;
    const mine = await ok(DEVICE_INTENTS, { d: desk.id }, desk.token);
    expect(mine.deviceIntents.edges.map((e: any) => e.node.id)).toContain(id);
    expect((await ok('query I($i: ID!) { intent(id: $i) { id } }', { i: id }, desk.token)).intent).toEqual({
      id,
    });
    // Another device's backlog and intents stay closed to it (the resolvers' own-device checks).
    expect(codeOf(await p.gql(DEVICE_INTENTS, { d: desk.id }, other.token))).toBe('FORBIDDEN');
    expect(
      (await ok('query I($i: ID!) { intent(id: $i) { id } }', { i: id }, other.token)).intent,
    ).toBeNull();

    const stream = subscribe<{ deviceIntents: { id: string } }>(
      `${p.gatewayUrl}/graphql/stream`,
      desk.token,
      'subscription { deviceIntents(afterSeq: 0) { id } }',
    );
    try {
      const first = await stream.next();
      expect(first.errors).toBeUndefined();
    } finally {
      stream.dispose();
    }
    const jws = await new SignJWT({ intent: id, state: 'DELIVERED' })
      .setProtectedHeader({ alg: 'ES256', typ: 'intent-report+jwt' })
      .setIssuer(desk.id)
      .setAudience(new URL(p.subgraphs.coordination).origin)
      .setJti(randomUUID())
      .setIssuedAt()
      .sign(desk.privateKey);
    const REPORT =
      'mutation R($r: String!, $k: ID!) { reportIntentState(report: $r, idempotencyKey: $k) { intent { state } } }';
    expectPrincipalRefusal(
      await p.gql(REPORT, { r: jws, k: k() }, sidecar),
      'SIDECAR',
      'Mutation.reportIntentState',
    );
    const reported = await ok(REPORT, { r: jws, k: k() }, desk.token);
    expect(reported.reportIntentState.intent.state).toBe('DELIVERED');
    // The audit of its intents (who asked from where) is an ADMIN's read, not the device's, whatever its token's role.
    const HISTORY =
      'query H($i: ID!) { intent(id: $i) { history { edges { node { state origin { userAgent } } } } } }';
    const origins = async (t: string) =>
      (await ok(HISTORY, { i: id }, t)).intent.history.edges.map((e: any) => e.node.origin);
    expect((await origins(owner.token)).every((o: unknown) => o !== null)).toBe(true);
    expect(await origins(desk.token)).toEqual([null, null]);

    const UPDATES = 'subscription U($i: ID!) { intentUpdates(intentId: $i) { state } }';
    expect(await streamRefusal(desk.token, UPDATES, { i: id })).toBeNull();
    expect((await streamRefusal(sidecar, UPDATES, { i: id }))?.body.errors?.[0]?.extensions).toMatchObject({
      principalKind: 'SIDECAR',
      field: 'Subscription.intentUpdates',
    });
    expectPrincipalRefusal(
      await p.gql('query I($i: ID!) { intent(id: $i) { id } }', { i: id }, sidecar),
      'SIDECAR',
      'Query.intent',
    );
    // The sidecar has no intents: not the backlog, not the stream.
    expectPrincipalRefusal(
      await p.gql(DEVICE_INTENTS, { d: desk.id }, sidecar),
      'SIDECAR',
      'Query.deviceIntents',
    );
    const refused = await streamRefusal(sidecar, 'subscription { deviceIntents { id } }');
    expect(refused?.status).toBe(403);
    expect(refused?.body.errors?.[0]?.extensions).toMatchObject({
      code: 'FORBIDDEN',
      principalKind: 'SIDECAR',
      field: 'Subscription.deviceIntents',
    });
  });

  it("the emergency stop (status, engage, lift): a person's (ADMIN+ to switch)", async () => {
    await personsOnly('Query.emergencyStop', '{ emergencyStop { engaged } }', () => ({}));
    await personsOnly(
      'Mutation.engageEmergencyStop',
      'mutation E($k: ID!) { engageEmergencyStop(reason: "device says stop", idempotencyKey: $k) { status { engaged } } }',
      () => ({ k: k() }),
    );
    await personsOnly(
      'Mutation.liftEmergencyStop',
      'mutation L($k: ID!) { liftEmergencyStop(idempotencyKey: $k) { status { engaged } } }',
      () => ({ k: k() }),
    );
    expect((await ok('{ emergencyStop { engaged } }', {}, owner.token)).emergencyStop.engaged).toBe(false);
  });

  it('rooms: the device and its sidecar create, read, stream and post', async () => {
    const POST =
      'mutation P($r: ID!, $b: String!, $k: ID!) { postMessage(roomId: $r, input: { body: $b }, idempotencyKey: $k) { message { seq } } }';
    for (const t of [desk.token, sidecar]) {
      await ok(POST, { r: roomId, b: 'status: green', k: k() }, t);
      const room = await ok(
        'query R($r: ID!) { room(id: $r) { id } rooms { edges { node { id } } } }',
        { r: roomId },
        t,
      );
      expect(room.room).toEqual({ id: roomId });
      expect(
        await streamRefusal(t, 'subscription R($r: ID!) { roomMessages(roomId: $r) { seq } }', { r: roomId }),
      ).toBeNull();
      await ok(
        'mutation R($k: ID!) { createRoom(input: { name: "agent room" }, idempotencyKey: $k) { room { id } } }',
        { k: k() },
        t,
      );
    }
  });

  it('agent messages (send, inbox, acknowledge, stream): the device and its sidecar, as the device', async () => {
    const SEND =
      'mutation S($d: ID!, $k: ID!) { sendAgentMessage(input: { to: { deviceId: $d }, body: "ping" }, idempotencyKey: $k) { message { id } } }';
    const sent = await ok(SEND, { d: desk.id, k: k() }, other.token);
    const id = sent.sendAgentMessage.message.id as string;
    const inbox = await ok('{ agentInbox { edges { node { id } } } }', {}, sidecar);
    expect(inbox.agentInbox.edges.map((e: any) => e.node.id)).toContain(id);
    const ACK =
      'mutation A($i: ID!, $k: ID!) { acknowledgeAgentMessage(id: $i, state: DELIVERED, idempotencyKey: $k) { message { state } } }';
    expect((await ok(ACK, { i: id, k: k() }, desk.token)).acknowledgeAgentMessage.message.state).toBe(
      'DELIVERED',
    );
    await ok(SEND, { d: other.id, k: k() }, sidecar);
    const one = await ok('query M($i: ID!) { agentMessage(id: $i) { id } }', { i: id }, desk.token);
    expect(one.agentMessage).toEqual({ id });
    const mine = await ok('{ sentAgentMessages { edges { node { id } } } }', {}, sidecar);
    expect(mine.sentAgentMessages.edges).toHaveLength(1);
    expect(await streamRefusal(desk.token, 'subscription { agentMessages { id } }')).toBeNull();
    expect(await streamRefusal(sidecar, 'subscription { agentMessages { id } }')).toBeNull();
  });

  it("memory: the device and its sidecar read, create workspaces and write records; deleting and erasing are a person's", async () => {
    for (const t of [desk.token, sidecar]) {
      const id = randomUUID();
      await ok(
        'mutation M($i: ID!, $w: ID!, $k: ID!) { putMemory(id: $i, input: { workspaceId: $w, kind: "note", content: "build green" }, idempotencyKey: $k) { record { id } } }',
        { i: id, w: workspaceId, k: k() },
        t,
      );
      await ok(
        'query Q($i: ID!, $w: ID!) { memoryRecord(id: $i) { id } workspace(id: $w) { id } workspaces { edges { node { id } } } searchMemory(workspaceId: $w, query: { text: "green" }) { edges { node { id } } } }',
        { i: id, w: workspaceId },
        t,
      );
      await ok(
        'mutation W($k: ID!) { createWorkspace(input: { name: "agent scratch" }, idempotencyKey: $k) { workspace { id } } }',
        { k: k() },
        t,
      );
    }
    await personsOnly(
      'Mutation.deleteMemory',
      'mutation D($i: ID!, $k: ID!) { deleteMemory(id: $i, idempotencyKey: $k) { deletedId } }',
      () => ({ i: randomUUID(), k: k() }),
    );
    await personsOnly(
      'Mutation.deleteWorkspace',
      'mutation D($i: ID!, $k: ID!) { deleteWorkspace(id: $i, idempotencyKey: $k) { deletedId } }',
      () => ({ i: workspaceId, k: k() }),
    );
    await personsOnly(
      'Mutation.eraseTenantMemory',
      'mutation E($k: ID!) { eraseTenantMemory(idempotencyKey: $k) { __typename } }',
      () => ({ k: k() }),
    );
    await personsOnly('Query.memoryJobs', '{ memoryJobs { edges { node { id } } } }', () => ({}));
    const ws = await ok('query W($w: ID!) { workspace(id: $w) { id } }', { w: workspaceId }, owner.token);
    expect(ws.workspace).toEqual({ id: workspaceId });
  });

  it("memory: a device changes only the records it wrote (itself or its sidecar), never a person's or another device's", async () => {
    const PUT =
      'mutation M($i: ID!, $w: ID!, $c: String!, $k: ID!) { putMemory(id: $i, input: { workspaceId: $w, kind: "note", content: $c }, idempotencyKey: $k) { record { id version content } } }';
    const READ = 'query R($i: ID!) { memoryRecord(id: $i) { content version } }';
    const put = (id: string, content: string, token: string) =>
      p.gql(PUT, { i: id, w: workspaceId, c: content, k: k() }, token);
    const contentOf = async (id: string) => (await ok(READ, { i: id }, owner.token)).memoryRecord;
    // The device's own record: it, and its sidecar (the same device), may change it.
    const mine = randomUUID();
    expect((await put(mine, 'desk v1', desk.token)).errors).toBeUndefined();
    expect((await put(mine, 'desk v2', desk.token)).errors).toBeUndefined();
    expect((await put(mine, 'sidecar v3', sidecar)).errors).toBeUndefined();
    expect(await contentOf(mine)).toEqual({ content: 'sidecar v3', version: 3 });
    // A person's record, and the other device's: refused, unchanged.
    const persons = randomUUID();
    expect((await put(persons, "owner's note", owner.token)).errors).toBeUndefined();
    const theirs = randomUUID();
    expect((await put(theirs, "other's note", other.token)).errors).toBeUndefined();
    for (const [id, token] of [
      [persons, desk.token],
      [persons, sidecar],
      [theirs, desk.token],
      [mine, other.token],
    ] as const) {
      const r = await put(id, 'overwritten', token);
      expect(codeOf(r), JSON.stringify(r.errors)).toBe('FORBIDDEN');
    }
    expect(await contentOf(persons)).toEqual({ content: "owner's note", version: 1 });
    expect(await contentOf(theirs)).toEqual({ content: "other's note", version: 1 });
    expect(await contentOf(mine)).toEqual({ content: 'sidecar v3', version: 3 });
    // A person may still change a device's record; it is then the person's.
    expect((await put(mine, 'taken over', owner.token)).errors).toBeUndefined();
    expect(codeOf(await put(mine, 'back again', desk.token))).toBe('FORBIDDEN');
  });

  it("the catalog: the device reads plugins and the TUF repository; publishing and review are a person's", async () => {
    const none = randomUUID();
    const read = await ok(
      'query C($i: ID!) { plugins { edges { node { id } } } plugin(id: $i) { id } release(id: $i) { id } tufRepository { metadataPath } analyzerJwks }',
      { i: none },
      desk.token,
    );
    expect([read.plugin, read.release]).toEqual([null, null]);
    expectPrincipalRefusal(
      await p.gql('{ plugins { edges { node { id } } } }', {}, sidecar),
      'SIDECAR',
      'Query.plugins',
    );
    await personsOnly('Query.reviewQueue', '{ reviewQueue { edges { node { id } } } }', () => ({}));
    await personsOnly(
      'Mutation.declareRelease',
      'mutation D($p: ID!, $k: ID!) { declareRelease(pluginId: $p, input: { version: "1.0.0" }, idempotencyKey: $k) { __typename } }',
      () => ({ p: randomUUID(), k: k() }),
    );
    await personsOnly(
      'Mutation.createPlugin',
      'mutation C($k: ID!) { createPlugin(input: { name: "rogue", displayName: "Rogue" }, idempotencyKey: $k) { __typename } }',
      () => ({ k: k() }),
    );
    const id = randomUUID();
    for (const field of ['approveRelease', 'promoteRelease']) {
      await personsOnly(
        `Mutation.${field}`,
        `mutation R($i: ID!, $k: ID!) { ${field}(releaseId: $i, idempotencyKey: $k) { __typename } }`,
        () => ({ i: id, k: k() }),
      );
    }
    for (const field of ['rejectRelease', 'revokeRelease']) {
      await personsOnly(
        `Mutation.${field}`,
        `mutation R($i: ID!, $k: ID!) { ${field}(releaseId: $i, reason: "x", idempotencyKey: $k) { __typename } }`,
        () => ({ i: id, k: k() }),
      );
    }
    await personsOnly(
      'Mutation.rotateTufKey',
      'mutation T($k: ID!) { rotateTufKey(role: TIMESTAMP, idempotencyKey: $k) { __typename } }',
      () => ({ k: k() }),
    );
    // The package upload (an HTTP route of the catalog, not GraphQL): a person's too.
    for (const [t, kind] of [
      [desk.token, 'DEVICE'],
      [sidecar, 'SIDECAR'],
    ] as const) {
      const res = await fetch(`${p.subgraphs.catalog}/packages?plugin=rogue&version=1.0.0`, {
        method: 'POST',
        headers: { authorization: `Bearer ${t}`, 'content-type': 'application/octet-stream' },
        body: new Uint8Array([1, 2, 3]),
      });
      expect(res.status).toBe(403);
      const body = (await res.json()) as { errors: Array<{ extensions: Record<string, unknown> }> };
      expect(body.errors[0]!.extensions).toMatchObject({ code: 'FORBIDDEN', principalKind: kind });
    }
  });
});

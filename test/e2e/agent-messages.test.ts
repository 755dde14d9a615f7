/**
 * Targeted agent messages end to end (coordination README, "Agent messages"): through the gateway, with graphql-sse's createClient
 * on the inbox streams. Request/reply by correlation id between two devices, a gap-free inbox under concurrent
 * senders, resume after a cut redelivering exactly the open messages, a poison message acknowledged FAILED, the
 * acknowledgement rules (forward only, recipient only), tenant isolation, and idempotent replay of a send.
 * Below the API, on the same database: expiry on a fake clock and what the database refuses the app role.
 */
import { randomUUID } from 'node:crypto';
import { withTenant, type AuthContext } from '@agentgraph/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestPlatform, type GraphQLResult, type TestPlatform, type TestUser } from '../src/platform.js';
import { enrolTestDevice, type TestDevice } from '../src/devices.js';
import { subscribe, type Subscription } from '../src/sse.js';
import type { AgentAddressModel } from '../../subgraphs/coordination/src/messages/models.js';
import {
  acknowledge,
  agentMessagesById,
  inboxAfter,
  inboxPage,
  inboxPosition,
  insertAgentMessage,
} from '../../subgraphs/coordination/src/messages/store.js';

let p: TestPlatform;
let alice: TestUser;
let stream: string;

/** An ENROLLED device of the user's tenant (inserted as identity stores it) and its own device access token. */
function enrolDevice(user: TestUser, name: string): Promise<TestDevice> {
  return enrolTestDevice(p, user, name);
}

const FIELDS =
  'id seq body contentType correlationId state failureReason createdAt deliveredAt readAt handledAt acknowledgedAt failedAt ' +
  'from { kind deviceId userId } to { kind deviceId userId } replyTo { id }';

interface Msg {
  id: string;
  seq: number;
  body: string;
  contentType: string;
  correlationId: string | null;
  state: string;
  failureReason: string | null;
  createdAt: string;
  deliveredAt: string | null;
  readAt: string | null;
  handledAt: string | null;
  acknowledgedAt: string | null;
  failedAt: string | null;
  from: { kind: string; deviceId: string | null; userId: string | null };
  to: { kind: string; deviceId: string | null; userId: string | null };
  replyTo: { id: string } | null;
}

const SEND = `mutation S($i: SendAgentMessageInput!, $k: ID!) { sendAgentMessage(input: $i, idempotencyKey: $k) { message { ${FIELDS} } } }`;
const ACK = `mutation A($id: ID!, $s: AgentMessageState!, $r: String, $k: ID!) {
  acknowledgeAgentMessage(id: $id, state: $s, reason: $r, idempotencyKey: $k) { message { ${FIELDS} } } }`;
const INBOX = `query I($first: Int, $after: String, $state: AgentMessageState) {
  agentInbox(first: $first, after: $after, state: $state) { lastSeq cursorSeq edges { node { ${FIELDS} } } pageInfo { hasNextPage endCursor } } }`;
const STREAM = `subscription M($a: Int) { agentMessages(afterSeq: $a) { ${FIELDS} } }`;

async function send(
  token: string,
  input: Record<string, unknown>,
  key = randomUUID(),
): Promise<GraphQLResult> {
  return p.gql(SEND, { i: input, k: key }, token);
}

async function sent(token: string, input: Record<string, unknown>): Promise<Msg> {
  const r = await send(token, input);
  expect(r.errors).toBeUndefined();
  return r.data.sendAgentMessage.message as Msg;
}

async function ack(token: string, id: string, state: string, reason?: string): Promise<GraphQLResult> {
  return p.gql(ACK, { id, s: state, r: reason ?? null, k: randomUUID() }, token);
}

async function acked(token: string, id: string, state: string, reason?: string): Promise<Msg> {
  const r = await ack(token, id, state, reason);
  expect(r.errors).toBeUndefined();
  return r.data.acknowledgeAgentMessage.message as Msg;
}

async function inbox(
  token: string,
  vars: Record<string, unknown> = {},
): Promise<{
  lastSeq: number;
  cursorSeq: number;
  nodes: Msg[];
  hasNextPage: boolean;
  endCursor: string | null;
}> {
  const r = await p.gql(INBOX, { first: 100, ...vars }, token);
  expect(r.errors).toBeUndefined();
  const c = r.data.agentInbox;
  return {
    lastSeq: c.lastSeq,
    cursorSeq: c.cursorSeq,
    nodes: c.edges.map((e: { node: Msg }) => e.node),
    hasNextPage: c.pageInfo.hasNextPage,
    endCursor: c.pageInfo.endCursor,
  };
}

function open(token: string, afterSeq?: number): Subscription<{ agentMessages: Msg }> {
  return subscribe<{ agentMessages: Msg }>(
    stream,
    token,
    STREAM,
    afterSeq === undefined ? {} : { a: afterSeq },
  );
}

async function take(s: Subscription<{ agentMessages: Msg }>, n: number): Promise<Msg[]> {
  const out: Msg[] = [];
  for (let i = 0; i < n; i++) {
    const e = await s.next();
    expect(e.errors).toBeUndefined();
    out.push(e.data!.agentMessages);
  }
  return out;
}

const codeOf = (r: GraphQLResult) => r.errors?.[0]?.extensions?.code;

beforeAll(async () => {
  p = await startTestPlatform();
  alice = await p.tokenFor({ tenant: 'agent-messages' });
  stream = `${p.gatewayUrl}/graphql/stream`;
});
afterAll(async () => {
  if (p?.errorLogs.length) console.error(p.errorLogs.join('\n'));
  await p?.close();
});

describe('agent messages', () => {
  it('request/reply by correlation id between two devices, each reading its inbox stream', async () => {
    const asker = await enrolDevice(alice, 'asker');
    const worker = await enrolDevice(alice, 'worker');
    const workerInbox = open(worker.token);
    const askerInbox = open(asker.token);
    try {
      const request = await sent(asker.token, {
        to: { deviceId: worker.id },
        body: '{"op":"summarise","doc":7}',
        contentType: 'application/json',
        correlationId: 'req-7',
      });
      expect(request).toMatchObject({
        seq: 1,
        state: 'QUEUED',
        correlationId: 'req-7',
        from: { kind: 'DEVICE', deviceId: asker.id, userId: null },
        to: { kind: 'DEVICE', deviceId: worker.id, userId: null },
        replyTo: null,
      });

      const [got] = await take(workerInbox, 1);
      expect(got).toMatchObject({
        id: request.id,
        body: '{"op":"summarise","doc":7}',
        contentType: 'application/json',
      });
      expect((await acked(worker.token, got!.id, 'DELIVERED')).deliveredAt).not.toBeNull();
      expect((await acked(worker.token, got!.id, 'READ')).state).toBe('READ');

      // The reply names only the message it answers: recipient and correlation id come from it.
      const reply = await sent(worker.token, { replyTo: got!.id, body: '{"summary":"ok"}' });
      expect(reply).toMatchObject({
        seq: 1,
        correlationId: 'req-7',
        from: { kind: 'DEVICE', deviceId: worker.id, userId: null },
        to: { kind: 'DEVICE', deviceId: asker.id, userId: null },
        replyTo: { id: request.id },
        contentType: 'text/plain',
      });
      const [answer] = await take(askerInbox, 1);
      expect(answer).toMatchObject({ id: reply.id, correlationId: 'req-7', replyTo: { id: request.id } });
      const handled = await acked(worker.token, request.id, 'ACKNOWLEDGED');
      expect(handled).toMatchObject({ state: 'ACKNOWLEDGED', handledAt: null });
      expect(handled.acknowledgedAt).not.toBeNull();

      // The sender sees what became of its request, by correlation id.
      const mine = await p.gql(
        'query S($c: String) { sentAgentMessages(correlationId: $c) { edges { node { id state deliveredAt readAt acknowledgedAt } } } }',
        { c: 'req-7' },
        asker.token,
      );
      expect(mine.errors).toBeUndefined();
      const nodes = mine.data.sentAgentMessages.edges.map((e: { node: unknown }) => e.node);
      expect(nodes).toHaveLength(1);
      expect(nodes[0]).toMatchObject({ id: request.id, state: 'ACKNOWLEDGED' });
      expect(nodes[0].readAt).not.toBeNull();
      // A reply to a message the caller did not receive, or one naming another recipient, is refused.
      expect(codeOf(await send(asker.token, { replyTo: request.id, body: 'x' }))).toBe('NOT_FOUND');
      expect(
        codeOf(await send(asker.token, { replyTo: reply.id, to: { userId: alice.userId }, body: 'x' })),
      ).toBe('BAD_USER_INPUT');
    } finally {
      workerInbox.dispose();
      askerInbox.dispose();
    }
  });

  it('numbers an inbox 1..200 without a gap under 4 concurrent senders × 50, streamed in order', async () => {
    const target = await p.tokenFor({ tenant: 'agent-messages-busy' });
    const senders: string[] = [
      target.token,
      (await p.tokenFor({ tenant: 'agent-messages-busy', role: 'OPERATOR' })).token,
      (await enrolDevice(target, 'busy-1')).token,
      (await enrolDevice(target, 'busy-2')).token,
    ];
    const live = open(target.token, 0);
    try {
      const receiving = take(live, 200);
      await Promise.all(
        senders.map(async (token, s) => {
          for (let i = 0; i < 50; i++)
            await sent(token, { to: { userId: target.userId }, body: `s${s}-${i}` });
        }),
      );
      const streamed = await receiving;
      expect(streamed.map((m) => m.seq)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
      // Each sender's messages keep its own order.
      for (let s = 0; s < 4; s++) {
        const own = streamed.filter((m) => m.body.startsWith(`s${s}-`)).map((m) => m.body);
        expect(own).toEqual(Array.from({ length: 50 }, (_, i) => `s${s}-${i}`));
      }
      const first = await inbox(target.token);
      const second = await inbox(target.token, { after: first.endCursor });
      expect([...first.nodes, ...second.nodes].map((m) => m.seq)).toEqual(streamed.map((m) => m.seq));
      expect(first).toMatchObject({ lastSeq: 200, cursorSeq: 0, hasNextPage: true });
    } finally {
      live.dispose();
    }
  });

  it('after a cut, the stream restarts at the server-side cursor and redelivers exactly the open messages', async () => {
    const agent = await enrolDevice(alice, 'resumer');
    const msgs: Msg[] = [];
    for (let i = 1; i <= 6; i++)
      msgs.push(await sent(alice.token, { to: { deviceId: agent.id }, body: `m${i}` }));

    const first = open(agent.token);
    const seen = await take(first, 6);
    expect(seen.map((m) => m.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    await acked(agent.token, msgs[0]!.id, 'ACKNOWLEDGED');
    await acked(agent.token, msgs[1]!.id, 'HANDLED');
    await acked(agent.token, msgs[2]!.id, 'ACKNOWLEDGED');
    await acked(agent.token, msgs[3]!.id, 'DELIVERED');
    first.dispose(); // the cut

    expect(await inbox(agent.token)).toMatchObject({ lastSeq: 6, cursorSeq: 1 });
    const second = open(agent.token);
    try {
      expect((await take(second, 3)).map((m) => [m.seq, m.state])).toEqual([
        [2, 'HANDLED'],
        [4, 'DELIVERED'],
        [5, 'QUEUED'],
      ]);
      // …then the one still QUEUED and new messages, live.
      const last = (await take(second, 1))[0]!;
      expect(last.seq).toBe(6);
      await sent(alice.token, { to: { deviceId: agent.id }, body: 'm7' });
      expect((await take(second, 1))[0]!.seq).toBe(7);
    } finally {
      second.dispose();
    }
    for (const i of [1, 3, 4, 5]) await acked(agent.token, msgs[i]!.id, 'ACKNOWLEDGED');
    expect(await inbox(agent.token)).toMatchObject({ lastSeq: 7, cursorSeq: 6 });
    // With afterSeq the client's own position wins over the cursor; finished messages are still skipped.
    const third = open(agent.token, 0);
    try {
      expect((await take(third, 1))[0]!.seq).toBe(7);
    } finally {
      third.dispose();
    }
  });

  it('a poison message acknowledged FAILED lets the cursor move on and is never redelivered', async () => {
    const agent = await enrolDevice(alice, 'poisoned');
    const poison = await sent(alice.token, { to: { deviceId: agent.id }, body: '\u{1F4A3} not json' });
    const good = await sent(alice.token, { to: { deviceId: agent.id }, body: '{"ok":true}' });
    const s1 = open(agent.token);
    expect((await take(s1, 2)).map((m) => m.id)).toEqual([poison.id, good.id]);
    s1.dispose();

    const noReason = await ack(agent.token, poison.id, 'FAILED');
    expect(noReason.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', argument: 'reason' });
    const failed = await acked(agent.token, poison.id, 'FAILED', 'body is not JSON (3 attempts)');
    expect(failed).toMatchObject({ state: 'FAILED', failureReason: 'body is not JSON (3 attempts)' });
    expect(failed.failedAt).not.toBeNull();
    expect(await inbox(agent.token)).toMatchObject({ lastSeq: 2, cursorSeq: 1 });

    const s2 = open(agent.token);
    try {
      expect((await take(s2, 1))[0]!.id).toBe(good.id);
      await acked(agent.token, good.id, 'ACKNOWLEDGED');
      const third = await sent(alice.token, { to: { deviceId: agent.id }, body: 'after' });
      expect((await take(s2, 1))[0]!.id).toBe(third.id);
    } finally {
      s2.dispose();
    }
    // FAILED is final.
    const after = await ack(agent.token, poison.id, 'ACKNOWLEDGED');
    expect(after.errors?.[0]?.extensions).toMatchObject({ code: 'VERSION_CONFLICT', state: 'FAILED' });
    const failedOnly = await inbox(agent.token, { state: 'FAILED' });
    expect(failedOnly.nodes.map((m) => m.id)).toEqual([poison.id]);
  });

  it('refuses illegal acknowledgement moves with VERSION_CONFLICT and the current state', async () => {
    const agent = await enrolDevice(alice, 'strict');
    const m = await sent(alice.token, { to: { deviceId: agent.id }, body: 'one' });
    // Skipping forward is allowed; the skipped state keeps no timestamp.
    expect(await acked(agent.token, m.id, 'READ')).toMatchObject({ state: 'READ', deliveredAt: null });
    for (const back of ['DELIVERED', 'READ']) {
      expect((await ack(agent.token, m.id, back)).errors?.[0]?.extensions).toMatchObject({
        code: 'VERSION_CONFLICT',
        state: 'READ',
      });
    }
    for (const notAck of ['QUEUED', 'EXPIRED']) {
      expect((await ack(agent.token, m.id, notAck)).errors?.[0]?.extensions).toMatchObject({
        code: 'BAD_USER_INPUT',
        argument: 'state',
      });
    }
    expect((await ack(agent.token, m.id, 'HANDLED', 'why')).errors?.[0]?.extensions).toMatchObject({
      code: 'BAD_USER_INPUT',
      argument: 'reason',
    });
    await acked(agent.token, m.id, 'ACKNOWLEDGED');
    for (const late of ['HANDLED', 'ACKNOWLEDGED']) {
      expect((await ack(agent.token, m.id, late)).errors?.[0]?.extensions).toMatchObject({
        code: 'VERSION_CONFLICT',
        state: 'ACKNOWLEDGED',
      });
    }
    expect((await ack(agent.token, m.id, 'FAILED', 'too late')).errors?.[0]?.extensions).toMatchObject({
      code: 'VERSION_CONFLICT',
      state: 'ACKNOWLEDGED',
    });
  });

  it('lets only the recipient acknowledge; others are told FORBIDDEN (the sender) or NOT_FOUND', async () => {
    const agent = await enrolDevice(alice, 'owner-of-inbox');
    const bystander = await enrolDevice(alice, 'bystander');
    const m = await sent(alice.token, { to: { deviceId: agent.id }, body: 'for agent' });
    expect(codeOf(await ack(alice.token, m.id, 'DELIVERED'))).toBe('FORBIDDEN');
    expect(codeOf(await ack(bystander.token, m.id, 'DELIVERED'))).toBe('NOT_FOUND');
    const peek = await p.gql(
      'query Q($i: ID!) { agentMessage(id: $i) { id } }',
      { i: m.id },
      bystander.token,
    );
    expect(peek.data?.agentMessage).toBeNull();
    expect((await inbox(bystander.token)).nodes).toEqual([]);
    // The sender sees it; the recipient acknowledges it.
    const seen = await p.gql(
      'query Q($i: ID!) { agentMessage(id: $i) { state from { kind userId user { id displayName } } to { device { id } } } }',
      { i: m.id },
      alice.token,
    );
    expect(seen.errors).toBeUndefined();
    expect(seen.data?.agentMessage).toEqual({
      state: 'QUEUED',
      from: {
        kind: 'USER',
        userId: alice.userId,
        user: { id: alice.userId, displayName: alice.displayName },
      },
      to: { device: { id: agent.id } },
    });
    expect((await acked(agent.token, m.id, 'DELIVERED')).state).toBe('DELIVERED');

    // Who may send: a VIEWER user may not; the unknown device is NOT_FOUND; bad addresses and bodies are refused.
    const viewer = await p.tokenFor({ tenant: 'agent-messages', role: 'VIEWER' });
    expect(codeOf(await send(viewer.token, { to: { deviceId: agent.id }, body: 'x' }))).toBe('FORBIDDEN');
    expect(codeOf(await send(alice.token, { to: { deviceId: randomUUID() }, body: 'x' }))).toBe('NOT_FOUND');
    const bad: Array<[Record<string, unknown>, string]> = [
      [{ to: { deviceId: agent.id, userId: alice.userId }, body: 'x' }, 'input.to'],
      [{ to: {}, body: 'x' }, 'input.to'],
      [{ body: 'x' }, 'input.to'],
      [{ to: { userId: alice.userId }, body: 'é'.repeat(8193) }, 'input.body'],
      [{ to: { userId: alice.userId }, body: 'a\u0000b' }, 'input.body'],
      [{ to: { userId: alice.userId }, body: 'x', correlationId: 'c'.repeat(201) }, 'input.correlationId'],
      [{ to: { userId: alice.userId }, body: 'x', contentType: 'not a type' }, 'input.contentType'],
      [{ to: { userId: alice.userId }, body: 'x', expiresInSeconds: 5 }, 'input.expiresInSeconds'],
    ];
    for (const [input, argument] of bad) {
      expect((await send(alice.token, input)).errors?.[0]?.extensions).toMatchObject({
        code: 'BAD_USER_INPUT',
        argument,
      });
    }
  });

  it('keeps tenants apart: foreign devices, messages and replies are NOT_FOUND', async () => {
    const agent = await enrolDevice(alice, 'home');
    const m = await sent(alice.token, { to: { deviceId: agent.id }, body: 'private', correlationId: 'c-1' });
    const mallory = await p.tokenFor({ tenant: 'agent-messages-other' });
    const malloryDevice = await enrolDevice(mallory, 'elsewhere');
    expect(codeOf(await send(mallory.token, { to: { deviceId: agent.id }, body: 'hi' }))).toBe('NOT_FOUND');
    expect(codeOf(await send(malloryDevice.token, { replyTo: m.id, body: 'hi' }))).toBe('NOT_FOUND');
    expect(codeOf(await ack(mallory.token, m.id, 'DELIVERED'))).toBe('NOT_FOUND');
    expect(codeOf(await ack(malloryDevice.token, m.id, 'DELIVERED'))).toBe('NOT_FOUND');
    const q = await p.gql('query Q($i: ID!) { agentMessage(id: $i) { id } }', { i: m.id }, mallory.token);
    expect(q.data?.agentMessage).toBeNull();
    const s = await p.gql('query { sentAgentMessages { edges { node { id } } } }', {}, mallory.token);
    expect(s.data?.sentAgentMessages.edges).toEqual([]);
    // Alice's user id is not a member of mallory's tenant: NOT_FOUND, nothing stored, nothing in alice's inbox.
    expect(codeOf(await send(mallory.token, { to: { userId: alice.userId }, body: 'spam' }))).toBe(
      'NOT_FOUND',
    );
    expect((await inbox(alice.token)).nodes.map((n) => n.body)).not.toContain('spam');
  });

  it('refuses a user address that is not a member of the tenant: unknown or foreign, the same NOT_FOUND', async () => {
    const bob = await p.tokenFor({ tenant: 'agent-messages-bob' });
    const erin = await p.tokenFor({ tenant: 'agent-messages-erin' });
    const bobDevice = await enrolDevice(bob, 'bob-desk');
    const unknown = randomUUID();
    for (const token of [bob.token, bobDevice.token]) {
      const foreign = await send(token, { to: { userId: erin.userId }, body: 'to erin' });
      const nobody = await send(token, { to: { userId: unknown }, body: 'to nobody' });
      expect(codeOf(foreign)).toBe('NOT_FOUND');
      expect(codeOf(nobody)).toBe('NOT_FOUND');
      // No existence oracle: the answer names neither the id nor whether it exists elsewhere.
      expect(foreign.errors![0]!.message).toBe(nobody.errors![0]!.message);
      expect(foreign.errors![0]!.message).not.toContain(erin.userId);
      expect(foreign.data).toBeNull();
    }
    // Nothing stored: neither sender sent anything, erin's inbox is empty.
    for (const token of [bob.token, bobDevice.token]) {
      const s = await p.gql('query { sentAgentMessages { edges { node { id } } } }', {}, token);
      expect(s.data?.sentAgentMessages.edges).toEqual([]);
    }
    expect((await inbox(erin.token)).nodes).toEqual([]);
    // A member of the tenant is fine, from a person's token and from a device's.
    await sent(bobDevice.token, { to: { userId: bob.userId }, body: 'to bob' });
    await sent(bob.token, { to: { userId: bob.userId.toUpperCase() }, body: 'to myself' });
    expect((await inbox(bob.token)).nodes.map((n) => n.body)).toEqual(['to bob', 'to myself']);
  });

  it('replays a send with the same idempotency key and refuses the key with other arguments', async () => {
    const agent = await enrolDevice(alice, 'replayed');
    const key = randomUUID();
    const input = { to: { deviceId: agent.id }, body: 'once', correlationId: 'r-1' };
    const a = await send(alice.token, input, key);
    const b = await send(alice.token, input, key);
    expect(a.errors).toBeUndefined();
    expect(b.extensions?.['idempotentReplay']).toBe(true);
    expect(b.data.sendAgentMessage.message.id).toBe(a.data.sendAgentMessage.message.id);
    expect(b.data.sendAgentMessage.message.seq).toBe(1);
    expect(codeOf(await send(alice.token, { ...input, body: 'twice' }, key))).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(await inbox(agent.token)).toMatchObject({ lastSeq: 1 });
    // Acknowledgements replay too: the same key is the same change, not a refused second one.
    const ackKey = randomUUID();
    const vars = { id: a.data.sendAgentMessage.message.id, s: 'DELIVERED', r: null, k: ackKey };
    expect((await p.gql(ACK, vars, agent.token)).errors).toBeUndefined();
    const again = await p.gql(ACK, vars, agent.token);
    expect(again.errors).toBeUndefined();
    expect(again.extensions?.['idempotentReplay']).toBe(true);
  });
});

describe('agent message store', () => {
  const auth = (tenantId: string): AuthContext => ({
    tenantId,
    principalId: `user-${tenantId}`,
    role: 'OPERATOR',
    scopes: [],
  });
  const t0 = new Date('2026-11-29T12:00:00.000Z');
  const at = (seconds: number) => new Date(t0.getTime() + seconds * 1000);

  it('reads a message still QUEUED past its expiry as EXPIRED: skipped by cursor and stream, refused for acks', async () => {
    const tenant = randomUUID();
    const inbox: AgentAddressModel = { kind: 'DEVICE', id: randomUUID() };
    const from: AgentAddressModel = { kind: 'USER', id: randomUUID() };
    const send = (body: string, expiresIn: number | null) =>
      withTenant(p.platform.dbs.coordination, auth(tenant), (tx) =>
        insertAgentMessage(tx, {
          tenantId: tenant,
          id: randomUUID(),
          to: inbox,
          from,
          body,
          contentType: 'text/plain',
          correlationId: null,
          replyTo: null,
          createdAt: t0,
          expiresAt: expiresIn === null ? null : at(expiresIn),
        }),
      );
    const short = await send('short-lived', 60);
    const delivered = await send('delivered in time', 60);
    const forever = await send('no expiry', null);
    expect([short.seq, delivered.seq, forever.seq]).toEqual([1, 2, 3]);
    const ack = (id: string, state: 'DELIVERED' | 'ACKNOWLEDGED', when: Date) =>
      withTenant(p.platform.dbs.coordination, auth(tenant), (tx) =>
        acknowledge(tx, { id, recipient: inbox, state, reason: null, at: when }),
      );
    // Confirmed delivery before the deadline: expiry no longer applies.
    await ack(delivered.id, 'DELIVERED', at(59));

    const read = (now: Date) =>
      withTenant(p.platform.dbs.coordination, auth(tenant), async (tx) => ({
        position: await inboxPosition(tx, inbox, now),
        stream: (await inboxAfter(tx, inbox, 0, 10, now)).map((i) => [i.seq, i.message?.state ?? null]),
        states: [...(await agentMessagesById(tx, [short.id, delivered.id, forever.id], now)).values()]
          .sort((a, b) => a.seq - b.seq)
          .map((m) => m.state),
        expired: (await inboxPage(tx, inbox, 0, 'EXPIRED', 10, now)).map((m) => m.seq),
        queued: (await inboxPage(tx, inbox, 0, 'QUEUED', 10, now)).map((m) => m.seq),
      }));

    expect(await read(at(59))).toEqual({
      position: { lastSeq: 3, cursorSeq: 0 },
      stream: [
        [1, 'QUEUED'],
        [2, 'DELIVERED'],
        [3, 'QUEUED'],
      ],
      states: ['QUEUED', 'DELIVERED', 'QUEUED'],
      expired: [],
      queued: [1, 3],
    });
    // At the expiry instant the short-lived one is EXPIRED: final, so the cursor passes it and the stream skips it.
    expect(await read(at(60))).toEqual({
      position: { lastSeq: 3, cursorSeq: 1 },
      stream: [
        [1, null],
        [2, 'DELIVERED'],
        [3, 'QUEUED'],
      ],
      states: ['EXPIRED', 'DELIVERED', 'QUEUED'],
      expired: [1],
      queued: [3],
    });
    await expect(ack(short.id, 'DELIVERED', at(61))).rejects.toMatchObject({
      extensions: { code: 'VERSION_CONFLICT', state: 'EXPIRED' },
    });
    await ack(delivered.id, 'ACKNOWLEDGED', at(62));
    await ack(forever.id, 'ACKNOWLEDGED', at(63));
    expect((await read(at(64))).position).toEqual({ lastSeq: 3, cursorSeq: 3 });
    const [done] = (
      await withTenant(p.platform.dbs.coordination, auth(tenant), (tx) =>
        agentMessagesById(tx, [delivered.id], at(64)),
      )
    ).values();
    expect(done).toMatchObject({
      state: 'ACKNOWLEDGED',
      deliveredAt: at(59).toISOString(),
      readAt: null,
      handledAt: null,
      acknowledgedAt: at(62).toISOString(),
    });

    // Another tenant sees none of it; nothing but the acknowledgement columns can change.
    const other = randomUUID();
    await withTenant(p.platform.dbs.coordination, auth(other), async (tx) => {
      expect((await agentMessagesById(tx, [short.id], at(64))).size).toBe(0);
      expect(await inboxPosition(tx, inbox, at(64))).toEqual({ lastSeq: 0, cursorSeq: 0 });
      await expect(
        acknowledge(tx, { id: forever.id, recipient: inbox, state: 'FAILED', reason: 'x', at: at(64) }),
      ).rejects.toMatchObject({ extensions: { code: 'NOT_FOUND' } });
    });
    for (const edit of [
      "UPDATE coordination.agent_messages SET body = 'edited' WHERE id = $1",
      'UPDATE coordination.agent_messages SET recipient_id = gen_random_uuid() WHERE id = $1',
      'DELETE FROM coordination.agent_messages WHERE id = $1',
    ]) {
      await expect(
        withTenant(p.platform.dbs.coordination, auth(tenant), (tx) => tx.query(edit, [short.id])),
      ).rejects.toThrow(/permission denied/);
    }
  });
});

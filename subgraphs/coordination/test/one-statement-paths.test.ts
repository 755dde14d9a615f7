/**
 * The hot paths folded into fewer statements (migrations/005_one_statement_paths.sql, intents/store.ts, store.ts):
 * insertIntent (stop check + seq, then intent + event + outbox + NOTIFY), transition (update + event + outbox +
 * NOTIFY), appendMessage (seq + insert + NOTIFY), and the device stream's one-statement read, which sets the tenant
 * itself: it must see only that tenant's rows and leave no tenant behind on the connection. PGlite or PostgreSQL.
 */
import { randomUUID } from 'node:crypto';
import { withTenant, type AuthContext, type Database } from '@agentgraph/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engageStop, liftStop } from '../src/emergency/store.js';
import {
  INTENTS_CHANNEL,
  insertIntent,
  intentsAfter,
  intentsAfterOnce,
  transition,
  type IntentNotification,
} from '../src/intents/store.js';
import type { IntentModel } from '../src/intents/models.js';
import { MESSAGES_CHANNEL, appendMessage, insertRoom } from '../src/store.js';
import { startHarness, type Harness } from './harness.js';

let h: Harness;
const T0 = new Date('2026-11-29T12:00:00.000Z');

function auth(tenantId: string): AuthContext {
  return { tenantId, principalId: randomUUID(), role: 'OPERATOR', scopes: ['api:read', 'api:write'] };
}

function create(db: Database, a: AuthContext, deviceId: string, action = 'run') {
  return withTenant(db, a, (tx) =>
    insertIntent(tx, {
      tenantId: a.tenantId,
      id: randomUUID(),
      deviceId,
      requester: a.principalId,
      action,
      params: { action },
      createdAt: T0,
      expiresAt: new Date(T0.getTime() + 60_000),
      executionTimeoutSeconds: 300,
      origin: { correlationId: 'c-1' },
      sign: async (seq) => `signed:${seq}`,
    }),
  );
}

async function created(
  db: Database,
  a: AuthContext,
  deviceId: string,
  action?: string,
): Promise<IntentModel> {
  const r = await create(db, a, deviceId, action);
  if ('stopped' in r) throw new Error('unexpected refusal');
  return r;
}

/** The NOTIFY payloads on `channel` while `fn` runs (delivered on commit; PGlite in-process, PostgreSQL async). */
async function notified(channel: string, count: number, fn: () => Promise<unknown>): Promise<unknown[]> {
  const got: unknown[] = [];
  let done: () => void = () => undefined;
  const all = new Promise<void>((resolve) => (done = resolve));
  const unlisten = await h.db.listen(channel, (payload) => {
    got.push(JSON.parse(payload));
    if (got.length === count) done();
  });
  try {
    await fn();
    await all;
    return got;
  } finally {
    await unlisten();
  }
}

beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

describe('intents in fewer statements', () => {
  it('numbers, signs and stores an intent with its event, outbox row and notification', async () => {
    const a = auth(randomUUID());
    const deviceId = randomUUID();
    let first: IntentModel | null = null;
    const notes = await notified(INTENTS_CHANNEL, 2, async () => {
      first = await created(h.db, a, deviceId, 'one');
      await created(h.db, a, deviceId, 'two');
    });
    expect(first).toMatchObject({ seq: 1, version: 1, state: 'QUEUED', jws: 'signed:1', action: 'one' });
    expect(JSON.parse(first!.params)).toEqual({ action: 'one' });
    const mine = notes.filter((n) => (n as IntentNotification).tenantId === a.tenantId);
    expect(mine).toEqual([
      { tenantId: a.tenantId, deviceId, intentId: first!.id, n: 1 },
      { tenantId: a.tenantId, deviceId, intentId: expect.any(String), n: 1 },
    ]);
    const rows = await withTenant(h.db, a, async (tx) => ({
      events: (
        await tx.query(
          'SELECT n, state, actor, origin FROM coordination.intent_events WHERE intent_id = $1',
          [first!.id],
        )
      ).rows,
      outbox: (
        await tx.query('SELECT n, state, device_id FROM coordination.intent_outbox WHERE intent_id = $1', [
          first!.id,
        ])
      ).rows,
    }));
    expect(rows.events).toEqual([
      { n: 1, state: 'QUEUED', actor: a.principalId, origin: { correlationId: 'c-1' } },
    ]);
    expect(rows.outbox).toEqual([{ n: 1, state: 'QUEUED', device_id: deviceId }]);
  });

  it('records each transition as event n = version with its outbox row and notification', async () => {
    const a = auth(randomUUID());
    const intent = await created(h.db, a, randomUUID());
    const at = new Date(T0.getTime() + 1000);
    const notes = await notified(INTENTS_CHANNEL, 2, () =>
      withTenant(h.db, a, async (tx) => {
        const delivered = await transition(tx, {
          intentId: intent.id,
          to: 'DELIVERED',
          source: 'device',
          actor: 'device:x',
          at,
        });
        const executing = await transition(tx, {
          intentId: intent.id,
          to: 'LOCALLY_APPROVED',
          source: 'device',
          actor: 'device:x',
          reason: 'ok',
          at,
        });
        expect([delivered.version, executing.version]).toEqual([2, 3]);
        expect(executing.state).toBe('LOCALLY_APPROVED');
      }),
    );
    expect(notes.map((n) => (n as IntentNotification).n)).toEqual([2, 3]);
    const events = await withTenant(h.db, a, (tx) =>
      tx.query('SELECT n, state, reason FROM coordination.intent_events WHERE intent_id = $1 ORDER BY n', [
        intent.id,
      ]),
    );
    expect(events.rows).toEqual([
      { n: 1, state: 'QUEUED', reason: null },
      { n: 2, state: 'DELIVERED', reason: null },
      { n: 3, state: 'LOCALLY_APPROVED', reason: 'ok' },
    ]);
  });

  it('refuses to create while a stop is engaged, without taking a seq', async () => {
    const a = auth(randomUUID());
    const deviceId = randomUUID();
    await created(h.db, a, deviceId);
    const change = { tenantId: a.tenantId, actor: a.principalId, at: T0, origin: {} };
    await withTenant(h.db, a, (tx) => engageStop(tx, { ...change, reason: 'test' }));
    expect(await create(h.db, a, deviceId)).toEqual({ stopped: { global: false } });
    // Another tenant is not stopped.
    expect(await created(h.db, auth(randomUUID()), deviceId)).toMatchObject({ seq: 1 });
    await withTenant(h.db, a, (tx) => liftStop(tx, change));
    expect(await created(h.db, a, deviceId)).toMatchObject({ seq: 2 });
  });

  it("reads a device's intents in one statement: its tenant's only, and leaves no tenant on the connection", async () => {
    const a = auth(randomUUID());
    const b = auth(randomUUID());
    const deviceId = randomUUID();
    for (let i = 0; i < 5; i++) await created(h.db, a, deviceId);
    await created(h.db, b, deviceId); // the same device id in another tenant
    const once = await intentsAfterOnce(h.db, a, deviceId, 1, 3);
    const inTx = await withTenant(h.db, a, (tx) => intentsAfter(tx, deviceId, 1, 3));
    expect(once.map((i) => i.seq)).toEqual([2, 3, 4]);
    expect(once).toEqual(inTx);
    expect((await intentsAfterOnce(h.db, b, deviceId, 0, 10)).map((i) => [i.tenantId, i.seq])).toEqual([
      [b.tenantId, 1],
    ]);
    expect(await intentsAfterOnce(h.db, auth(randomUUID()), deviceId, 0, 10)).toEqual([]);
    // The settings were local to the statement: a bare statement afterwards has no tenant and sees nothing.
    const after = await h.db.query<{ tenant: string | null; n: number }>(
      `SELECT nullif(current_setting('app.tenant_id', true), '') AS tenant,
              (SELECT count(*)::int FROM coordination.intents) AS n`,
    );
    expect(after.rows).toEqual([{ tenant: null, n: 0 }]);
  });
});

describe('room messages in one statement', () => {
  it('numbers, stores and notifies; a room of another tenant gets nothing', async () => {
    const a = auth(randomUUID());
    const room = await withTenant(h.db, a, (tx) =>
      insertRoom(tx, a.tenantId, a.principalId, 'one statement'),
    );
    const notes = await notified(MESSAGES_CHANNEL, 2, () =>
      withTenant(h.db, a, async (tx) => {
        const m1 = await appendMessage(tx, a.tenantId, room.id, a.principalId, 'first');
        const m2 = await appendMessage(tx, a.tenantId, room.id, a.principalId, 'second');
        expect([m1?.seq, m2?.seq, m2?.body, m2?.author]).toEqual([1, 2, 'second', a.principalId]);
      }),
    );
    expect(notes.filter((n) => (n as { roomId: string }).roomId === room.id)).toEqual([
      { tenantId: a.tenantId, roomId: room.id, seq: 1 },
      { tenantId: a.tenantId, roomId: room.id, seq: 2 },
    ]);
    const b = auth(randomUUID());
    expect(
      await withTenant(h.db, b, (tx) => appendMessage(tx, b.tenantId, room.id, b.principalId, 'x')),
    ).toBeNull();
    const last = await withTenant(h.db, a, (tx) =>
      tx.query<{ last_seq: number; n: number }>(
        'SELECT last_seq, (SELECT count(*)::int FROM coordination.messages WHERE room_id = $1) AS n FROM coordination.rooms WHERE id = $1',
        [room.id],
      ),
    );
    expect(last.rows).toEqual([{ last_seq: 2, n: 2 }]);
  });
});

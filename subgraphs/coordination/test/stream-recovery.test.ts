/**
 * The room stream's recovery paths, driven directly on a real database with the notifications under the test's
 * control: a lost notification is made good by the next one or by a listener reconnect, coalesced notifications
 * still yield every message, and reads span several pages. No gap, no duplicate, in order.
 */
import { randomUUID } from 'node:crypto';
import {
  createLogger,
  loadConfig,
  openDatabase,
  withTenant,
  type AuthContext,
  type Database,
  type DatabaseHandle,
  type NotificationHandler,
} from '@agentgraph/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { provisionTestDatabase, type TestDatabase } from '../../../test/src/database.js';
import { coordinationSubgraph } from '../src/index.js';
import type { MessageModel } from '../src/models.js';
import { appendMessage, insertRoom, MESSAGES_CHANNEL } from '../src/store.js';
import { roomMessageStream } from '../src/stream.js';

let testDb: TestDatabase;
let handle: DatabaseHandle;
let db: Database;
const log = createLogger({ service: 'coordination-test' }, { level: 'error', write: () => undefined });

beforeAll(async () => {
  testDb = await provisionTestDatabase();
  ({ db, handle } = await openDatabase(
    loadConfig({ ...testDb.env, LOG_LEVEL: 'error' }),
    [coordinationSubgraph.migrations],
    'coordination',
  ));
});
afterAll(async () => {
  await handle?.close();
  await testDb?.drop();
});

/** A database whose notifications the test delivers by hand (real ones are captured, not forwarded). */
function controlled() {
  const captured: string[] = [];
  let handler: NotificationHandler | null = null;
  let reconnect: (() => void) | null = null;
  let reads = 0;
  const wrapped: Database = {
    ...db,
    transaction(fn, settings) {
      reads++;
      return db.transaction(fn, settings);
    },
    async listen(channel, onNotify, onReconnect) {
      expect(channel).toBe(MESSAGES_CHANNEL);
      handler = onNotify;
      reconnect = onReconnect ?? null;
      const unlisten = await db.listen(channel, (p) => captured.push(p), onReconnect);
      return unlisten;
    },
  };
  return {
    db: wrapped,
    captured,
    reads: () => reads,
    deliver: (payload: string) => handler!(payload),
    /**
     * The n-th notification captured since the stream began listening. PostgreSQL delivers a NOTIFY to listeners
     * after its commit, asynchronously: wait for it rather than take whatever arrived so far.
     */
    nth: async (n: number) => {
      await expect.poll(() => captured.length).toBeGreaterThanOrEqual(n);
      return captured[n - 1]!;
    },
    reconnect: () => reconnect!(),
  };
}

async function setup(tenantId = randomUUID()) {
  const auth: AuthContext = { tenantId, principalId: 'tester', role: 'OPERATOR', scopes: [] };
  const room = await withTenant(db, auth, (tx) => insertRoom(tx, tenantId, 'tester', 'recovery'));
  const postN = async (n: number) => {
    for (let i = 0; i < n; i++) {
      await withTenant(db, auth, (tx) => appendMessage(tx, tenantId, room.id, 'tester', `m${i}`));
    }
  };
  return { auth, roomId: room.id, postN };
}

/** Pulls n messages from the stream. */
async function take(stream: AsyncGenerator<MessageModel>, n: number): Promise<number[]> {
  const seqs: number[] = [];
  while (seqs.length < n) {
    const r = await stream.next();
    if (r.done) throw new Error(`stream ended after ${seqs.length} of ${n}`);
    seqs.push(r.value.seq);
  }
  return seqs;
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('room stream recovery', () => {
  it('catches up on every message when notifications are lost, coalesced, or replaced by a reconnect', async () => {
    const { auth, roomId, postN } = await setup();
    // 7 messages, read in pages of 3, as the initial backlog.
    await postN(7);
    const c = controlled();
    const abort = new AbortController();
    const stream = roomMessageStream({
      db: c.db,
      auth,
      log,
      signal: abort.signal,
      roomId,
      afterSeq: 0,
      pageSize: 3,
    });
    expect(await take(stream, 7)).toEqual(range(1, 7));

    // Five posts whose notifications never arrive, then one notification for the last: all five come, in order.
    await postN(5);
    const pending = take(stream, 5);
    c.deliver(await c.nth(5));
    expect(await pending).toEqual(range(8, 12));

    // Lost entirely; the listener reconnects: the re-read yields them.
    await postN(4);
    const afterReconnect = take(stream, 4);
    c.reconnect();
    expect(await afterReconnect).toEqual(range(13, 16));

    // A stale notification (already yielded) and duplicates yield nothing new; the next real one continues.
    c.deliver(c.captured[0]!);
    c.deliver(c.captured[0]!);
    await postN(1);
    const next = take(stream, 1);
    c.deliver(await c.nth(10));
    expect(await next).toEqual([17]);

    // Abort ends the stream while it waits, without another message.
    const end = stream.next();
    abort.abort();
    expect(await end).toEqual({ done: true, value: undefined });
  });

  it('ignores notifications for other rooms, other tenants, and malformed payloads', async () => {
    const { auth, roomId, postN } = await setup();
    await postN(1);
    const c = controlled();
    const abort = new AbortController();
    const stream = roomMessageStream({ db: c.db, auth, log, signal: abort.signal, roomId, afterSeq: 0 });
    expect(await take(stream, 1)).toEqual([1]);

    await postN(1);
    const waiting = stream.next();
    let settled = false;
    void waiting.then(() => (settled = true));
    // Let the stream settle into waiting (its wake-up reads run in this turn), then count its reads.
    await new Promise<void>((r) => setImmediate(r));
    const readsBefore = c.reads();
    c.deliver('not json');
    c.deliver(JSON.stringify({ tenantId: randomUUID(), roomId, seq: 2 }));
    c.deliver(JSON.stringify({ tenantId: auth.tenantId, roomId: randomUUID(), seq: 2 }));
    // Run everything those deliveries could have scheduled: none may wake the stream into a read.
    await new Promise<void>((r) => setImmediate(r));
    expect(c.reads()).toBe(readsBefore);
    expect(settled).toBe(false);
    c.deliver(JSON.stringify({ tenantId: auth.tenantId, roomId, seq: 2 }));
    expect((await waiting).value?.seq).toBe(2);
    await stream.return();
  });
});

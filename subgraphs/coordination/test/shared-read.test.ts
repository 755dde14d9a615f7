/**
 * Shared reads (src/shared-read.ts): the streams of one room woken by one notification read once, and sharing never
 * costs a stream a message. `SharedReads` alone first (when a caller may join a read in flight), then room streams
 * on a real database whose notifications and reads the test controls: N streams one read, a stream that starts
 * listening while a read is in flight does not take that read's older rows, a failing read fails every sharer, and
 * one sharer aborting leaves the read to the others.
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
import { moment, SharedReads } from '../src/shared-read.js';
import { appendMessage, insertRoom, MESSAGES_CHANNEL } from '../src/store.js';
import { roomMessageStream } from '../src/stream.js';

/** A promise and the functions that settle it. */
function deferred<T>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

describe('SharedReads', () => {
  it('serves every caller that became dirty before the read started from that one read', async () => {
    const reads = new SharedReads();
    const since = moment();
    const rows = deferred<number[]>();
    let calls = 0;
    const read = () => (calls++, rows.promise);
    const sharers = Array.from({ length: 5 }, () => reads.read('t:r:0:100', since, read));
    // Joining later in time is fine too: what counts is that the caller's reason to read came before the start.
    await Promise.resolve();
    sharers.push(reads.read('t:r:0:100', since, read));
    expect(calls).toBe(1);
    expect(reads.inFlight).toBe(1);
    const page = [1, 2, 3];
    rows.resolve(page);
    for (const sharer of sharers) expect(await sharer).toBe(page);
    expect(reads.inFlight).toBe(0);
  });

  it('starts a new read for a caller that became dirty after the read in flight started, and for other keys', async () => {
    const reads = new SharedReads();
    const first = deferred<string>();
    const second = deferred<string>();
    const third = deferred<string>();
    const early = reads.read('t:r:0:100', moment(), () => first.promise);
    const late = reads.read('t:r:0:100', moment(), () => second.promise);
    const other = reads.read('t:r:5:100', 0, () => third.promise);
    // The newer read is the one later callers join.
    const joiner = reads.read('t:r:0:100', 0, () => Promise.reject(new Error('must not run')));
    first.resolve('old');
    second.resolve('new');
    third.resolve('other');
    expect([await early, await late, await other, await joiner]).toEqual(['old', 'new', 'other', 'new']);
    expect(reads.inFlight).toBe(0);
  });

  it('rejects every sharer when the read fails (also when it throws before returning a promise), then forgets it', async () => {
    const reads = new SharedReads();
    const since = moment();
    const failure = new Error('connection lost');
    const rows = deferred<number[]>();
    const sharers = [1, 2, 3].map(() => reads.read('k', since, () => rows.promise));
    rows.reject(failure);
    for (const sharer of sharers) await expect(sharer).rejects.toBe(failure);
    expect(reads.inFlight).toBe(0);
    await expect(
      reads.read('k', moment(), () => {
        throw failure;
      }),
    ).rejects.toBe(failure);
    expect(await reads.read('k', moment(), () => Promise.resolve([4]))).toEqual([4]);
  });
});

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

/**
 * A database handle of its own (so its hub and shared reads are the test's alone) whose notifications the test
 * delivers by hand, counting reads; `hold()` makes the next read run its statement and then wait for the returned
 * release before answering (or fail with the given error instead).
 */
function controlled() {
  const captured: string[] = [];
  let handler: NotificationHandler | null = null;
  let reads = 0;
  /** Reads that have answered (the statement done): a stream whose read answered is idle again. */
  let answered = 0;
  let held: { ran: () => void; gate: Promise<void> } | null = null;
  let failNext: Error | null = null;
  const wrapped: Database = {
    ...db,
    async transaction(fn, settings) {
      reads++;
      if (failNext) {
        const err = failNext;
        failNext = null;
        throw err;
      }
      const hold = held;
      held = null;
      const rows = await db.transaction(fn, settings);
      if (hold) {
        hold.ran();
        await hold.gate;
      }
      answered++;
      return rows;
    },
    async listen(channel, onNotify, onReconnect) {
      expect(channel).toBe(MESSAGES_CHANNEL);
      handler = onNotify;
      return db.listen(channel, (p) => captured.push(p), onReconnect);
    },
  };
  return {
    db: wrapped,
    reads: () => reads,
    answered: () => answered,
    deliver: (payload: string) => handler!(payload),
    /** The n-th notification captured (PostgreSQL delivers it after the commit, asynchronously: wait for it). */
    nth: async (n: number) => {
      await expect.poll(() => captured.length).toBeGreaterThanOrEqual(n);
      return captured[n - 1]!;
    },
    /** The next read's statement runs; its answer waits for `release()`. `ran` resolves once the statement ran. */
    hold() {
      const ran = deferred<void>();
      const gate = deferred<void>();
      held = { ran: () => ran.resolve(), gate: gate.promise };
      return { ran: ran.promise, release: () => gate.resolve() };
    },
    failNextRead(err: Error) {
      failNext = err;
    },
  };
}

async function setup() {
  const tenantId = randomUUID();
  const auth = (principalId: string): AuthContext => ({
    tenantId,
    principalId,
    role: 'OPERATOR',
    scopes: [],
  });
  const writer = auth('writer');
  const room = await withTenant(db, writer, (tx) => insertRoom(tx, tenantId, 'writer', 'fan-out'));
  const post = () => withTenant(db, writer, (tx) => appendMessage(tx, tenantId, room.id, 'writer', 'hello'));
  return { auth, roomId: room.id, post };
}

/**
 * `n` room streams from seq `afterSeq` on `c`'s handle, each as a different principal of the tenant, each with its
 * first `next()` pending and its initial read answered (so it waits for a notification).
 */
async function idleStreams(
  c: ReturnType<typeof controlled>,
  s: Awaited<ReturnType<typeof setup>>,
  n: number,
  afterSeq: number,
) {
  const answeredBefore = c.answered();
  const streams = Array.from({ length: n }, (_, i) => {
    const abort = new AbortController();
    const stream = roomMessageStream({
      db: c.db,
      auth: s.auth(`principal-${i}`),
      log,
      signal: abort.signal,
      roomId: s.roomId,
      afterSeq,
    });
    return { abort, stream, next: stream.next() };
  });
  // Wait for the initial reads to answer, not merely to start: a stream still reading when a notification comes
  // reads again afterwards (its rows may predate the commit), an extra read the counts below would see.
  await expect.poll(() => c.answered()).toBe(answeredBefore + n);
  return streams;
}

const seqOf = (r: IteratorResult<MessageModel, void>) => (r.done ? null : r.value.seq);

describe('room streams sharing reads', () => {
  it('reads once for N streams of a room woken by one notification, and each gets the message once', async () => {
    const s = await setup();
    const c = controlled();
    const streams = await idleStreams(c, s, 50, 0);
    const before = c.reads();
    await s.post();
    c.deliver(await c.nth(1));
    const got = await Promise.all(streams.map((x) => x.next));
    expect(got.map(seqOf)).toEqual(streams.map(() => 1));
    expect(c.reads() - before).toBe(1);
    // And again: the second message is one more read, not fifty.
    const next = streams.map((x) => x.stream.next());
    await s.post();
    c.deliver(await c.nth(2));
    expect((await Promise.all(next)).map(seqOf)).toEqual(streams.map(() => 2));
    expect(c.reads() - before).toBe(2);
    for (const x of streams) await x.stream.return();
  });

  it('does not give a stream that starts listening during a read that read (its rows may predate a commit)', async () => {
    const s = await setup();
    const c = controlled();
    const [a] = await idleStreams(c, s, 1, 0);
    // Message 1 is notified; A's read runs (seeing 1) and is held before answering.
    const held = c.hold();
    await s.post();
    c.deliver(await c.nth(1));
    await held.ran;
    // Message 2 commits while that read is in flight; its notification is never delivered.
    await s.post();
    // B starts after 2 committed, from the same position as the held read (key tenant:room:0:100). Joining it would
    // leave B at 1, waiting for a notification that already came and went; it must read on its own and get 1 and 2.
    const b = roomMessageStream({
      db: c.db,
      auth: s.auth('late'),
      log,
      signal: new AbortController().signal,
      roomId: s.roomId,
      afterSeq: 0,
    });
    expect(seqOf(await b.next())).toBe(1);
    expect(seqOf(await b.next())).toBe(2);
    held.release();
    expect(seqOf(await a!.next)).toBe(1);
    await a!.stream.return();
    await b.return();
  });

  it('fails every sharer of a failing read (each stream ends with the error)', async () => {
    const s = await setup();
    const c = controlled();
    const streams = await idleStreams(c, s, 5, 0);
    const before = c.reads();
    const failure = new Error('the database went away');
    c.failNextRead(failure);
    await s.post();
    c.deliver(await c.nth(1));
    for (const x of streams) await expect(x.next).rejects.toBe(failure);
    expect(c.reads() - before).toBe(1);
    for (const x of streams) expect(await x.stream.next()).toEqual({ done: true, value: undefined });
  });

  it('lets the others have the read when one sharer aborts while it is in flight', async () => {
    const s = await setup();
    const c = controlled();
    const streams = await idleStreams(c, s, 5, 0);
    const before = c.reads();
    const held = c.hold();
    await s.post();
    c.deliver(await c.nth(1));
    await held.ran;
    // The aborted stream ends once its read answers (it never hands out the message); the read itself goes on.
    streams[0]!.abort.abort();
    held.release();
    expect(await streams[0]!.next).toEqual({ done: true, value: undefined });
    expect((await Promise.all(streams.slice(1).map((x) => x.next))).map(seqOf)).toEqual([1, 1, 1, 1]);
    expect(c.reads() - before).toBe(1);
    for (const x of streams.slice(1)) await x.stream.return();
  });
});

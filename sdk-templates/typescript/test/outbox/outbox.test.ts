import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Outbox, OutboxStateError, type OutboxEntry, type OutboxOptions } from '../../src/outbox/index.js';
import { SqliteBusyError, SqliteOutboxStore } from '../../src/outbox/index.node.js';
import { TestClock, counter, deferred, sdkError } from './fake-clock.js';

let dir: string;
let file: string;
const open: Array<Outbox | SqliteOutboxStore> = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'outbox-'));
  file = join(dir, 'outbox.db');
});
afterEach(async () => {
  for (const o of open.splice(0)) await o.close().catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
});

type Outcome = 'ok' | Error | Promise<unknown>;

/** An outbox whose send follows a script per variables.n (default: ok) and logs `room:n:key` per send. */
async function makeOutbox(
  clock: TestClock,
  script: Record<number, Outcome[]> = {},
  options: Partial<OutboxOptions> = {},
) {
  const calls: string[] = [];
  const store = SqliteOutboxStore.open(file);
  const outbox = await Outbox.open({
    store,
    clock,
    newId: counter('id'),
    newKey: counter('key'),
    send: async (entry) => {
      const n = entry.variables.n as number;
      calls.push(`${entry.room}:${n}:${entry.idempotencyKey}`);
      const outcome = script[n]?.shift() ?? 'ok';
      if (outcome instanceof Error) throw outcome;
      if (outcome !== 'ok') await outcome;
      return { ok: true };
    },
    ...options,
  });
  open.push(outbox);
  return { outbox, calls, store };
}

const states = (entries: OutboxEntry[]) => entries.map((e) => `${e.room}:${e.variables.n}:${e.state}`);

describe('Outbox: sending', () => {
  it('makes the idempotency key once at enqueue and sends it on every attempt', async () => {
    const clock = new TestClock();
    const { outbox, calls } = await makeOutbox(clock, {
      1: [sdkError('SERVICE_UNAVAILABLE', true), sdkError('NETWORK_ERROR', true)],
    });
    const entry = await outbox.enqueue({ room: 'r1', operation: 'PostMessage', variables: { n: 1 } });
    expect(entry).toMatchObject({ state: 'QUEUED', idempotencyKey: 'key-1', attempts: 0 });
    await outbox.drain();
    expect(calls).toEqual(['r1:1:key-1', 'r1:1:key-1', 'r1:1:key-1']);
    expect(await outbox.get(entry.id)).toMatchObject({ state: 'SENT', attempts: 3, lastError: null });
  });

  it('a retryable failure → RETRYABLE, resent after delayFor(attempt), then SENT', async () => {
    const clock = new TestClock();
    const start = clock.now();
    const seen: Array<[number, string]> = [];
    const { outbox } = await makeOutbox(
      clock,
      { 1: [sdkError('RATE_LIMITED', true, 30_000), sdkError('INTERNAL_SERVER_ERROR', true)] },
      {
        delayFor: (attempt, failure) => (
          seen.push([attempt, failure.code]),
          failure.retryAfterMs ?? 1000 * attempt
        ),
      },
    );
    const entry = await outbox.enqueue({ room: 'r', operation: 'Op', variables: { n: 1 } });
    await outbox.drain();
    expect(seen).toEqual([
      [1, 'RATE_LIMITED'],
      [2, 'INTERNAL_SERVER_ERROR'],
    ]);
    expect(clock.sleeps).toEqual([30_000, 2_000]);
    expect(clock.now() - start).toBe(32_000);
    expect(await outbox.get(entry.id)).toMatchObject({ state: 'SENT', attempts: 3 });
  });

  it('the default delay doubles from 1 s and obeys a longer Retry-After', async () => {
    const clock = new TestClock();
    const { outbox } = await makeOutbox(clock, {
      1: [
        sdkError('NETWORK_ERROR', true),
        sdkError('NETWORK_ERROR', true),
        sdkError('RATE_LIMITED', true, 10_000),
        sdkError('NETWORK_ERROR', true),
      ],
    });
    await outbox.enqueue({ room: 'r', operation: 'Op', variables: { n: 1 } });
    await outbox.drain();
    expect(clock.sleeps).toEqual([1_000, 2_000, 10_000, 8_000]);
  });

  it('a non-retryable failure (422) → POISON at once; the room goes on; dead letters export as JSON', async () => {
    const clock = new TestClock();
    const { outbox, calls } = await makeOutbox(clock, {
      1: [sdkError('IDEMPOTENCY_KEY_REUSED', false, undefined, 422)],
    });
    await outbox.enqueue({ room: 'r', operation: 'Op', variables: { n: 1 } });
    await outbox.enqueue({ room: 'r', operation: 'Op', variables: { n: 2 } });
    await outbox.drain();
    expect(calls).toEqual(['r:1:key-1', 'r:2:key-2']);
    expect(clock.sleeps).toEqual([]);
    const dead = await outbox.deadLetters();
    expect(dead).toHaveLength(1);
    expect(dead[0]).toMatchObject({
      state: 'POISON',
      attempts: 1,
      lastError: { code: 'IDEMPOTENCY_KEY_REUSED', message: 'IDEMPOTENCY_KEY_REUSED from the server' },
    });
    const exported = JSON.parse(await outbox.exportDeadLetters());
    expect(exported.exportedAt).toBe(new Date(clock.now()).toISOString());
    expect(exported.entries).toEqual([
      expect.objectContaining({
        id: 'id-1',
        state: 'POISON',
        idempotencyKey: 'key-1',
        variables: { n: 1 },
        createdAt: new Date(clock.now()).toISOString(),
      }),
    ]);
    expect(outbox.counters()).toMatchObject({ enqueued: 2, sends: 2, sent: 1, poisoned: 1, retried: 0 });
  });

  it('a thrown value that is not an SDK error is not retried: POISON with UNKNOWN_ERROR', async () => {
    const clock = new TestClock();
    const { outbox } = await makeOutbox(clock, { 1: [new TypeError('x is not a function')] });
    const e = await outbox.enqueue({ room: 'r', operation: 'Op', variables: { n: 1 } });
    await outbox.drain();
    expect(await outbox.get(e.id)).toMatchObject({
      state: 'POISON',
      lastError: { code: 'UNKNOWN_ERROR', message: 'x is not a function' },
    });
  });

  it('revive puts a dead letter back in line with its key and a fresh TTL', async () => {
    const clock = new TestClock();
    const { outbox, calls } = await makeOutbox(clock, { 1: [sdkError('FORBIDDEN', false)] });
    const e = await outbox.enqueue({ room: 'r', operation: 'Op', variables: { n: 1 } });
    await outbox.drain();
    clock.advance(1000);
    const revived = await outbox.revive(e.id);
    expect(revived).toMatchObject({
      state: 'QUEUED',
      lastError: null,
      expiresAt: clock.now() + 7 * 86_400_000,
    });
    await outbox.drain();
    expect(calls).toEqual(['r:1:key-1', 'r:1:key-1']);
    expect((await outbox.get(e.id))!.state).toBe('SENT');
    await expect(outbox.revive(e.id)).rejects.toThrow(OutboxStateError);
  });
});

describe('Outbox: poison after failed deliveries', () => {
  it('the third INTERNAL_SERVER_ERROR or HTTP 500 moves the entry to POISON with its error; the room goes on', async () => {
    const clock = new TestClock();
    const { outbox, calls } = await makeOutbox(clock, {
      1: [
        sdkError('INTERNAL_SERVER_ERROR', true, undefined, 500),
        sdkError('HTTP_ERROR', true, undefined, 500),
        sdkError('INTERNAL_SERVER_ERROR', true),
        // never reached: the third failed delivery poisons at once
        'ok',
      ],
    });
    const first = await outbox.enqueue({ room: 'r', operation: 'Op', variables: { n: 1 } });
    await outbox.enqueue({ room: 'r', operation: 'Op', variables: { n: 2 } });
    await outbox.drain();
    expect(calls).toEqual(['r:1:key-1', 'r:1:key-1', 'r:1:key-1', 'r:2:key-2']);
    expect(clock.sleeps).toEqual([1_000, 2_000]);
    expect(await outbox.get(first.id)).toMatchObject({
      state: 'POISON',
      attempts: 3,
      failedDeliveries: 3,
      lastError: { code: 'INTERNAL_SERVER_ERROR', message: 'INTERNAL_SERVER_ERROR from the server' },
    });
    expect(outbox.counters()).toMatchObject({ sends: 4, sent: 1, retried: 2, poisoned: 1 });
    const exported = JSON.parse(await outbox.exportDeadLetters());
    expect(exported.entries).toEqual([expect.objectContaining({ id: first.id, failedDeliveries: 3 })]);
  });

  it('offline and "wait" failures are not counted; a success keeps the count', async () => {
    const clock = new TestClock();
    const { outbox } = await makeOutbox(clock, {
      1: [
        sdkError('NETWORK_ERROR', true),
        sdkError('TIMEOUT', true),
        sdkError('HTTP_ERROR', true, undefined, 502),
        sdkError('HTTP_ERROR', true, undefined, 504),
        sdkError('SERVICE_UNAVAILABLE', true, undefined, 503),
        sdkError('RATE_LIMITED', true, undefined, 429),
        sdkError('IDEMPOTENCY_KEY_IN_PROGRESS', true, undefined, 409),
        sdkError('INTERNAL_SERVER_ERROR', true, undefined, 500),
        sdkError('INTERNAL_SERVER_ERROR', true, undefined, 500),
      ],
    });
    const e = await outbox.enqueue({ room: 'r', operation: 'Op', variables: { n: 1 } });
    await outbox.drain();
    expect(await outbox.get(e.id)).toMatchObject({ state: 'SENT', attempts: 10, failedDeliveries: 2 });
  });

  it('maxFailedDeliveries sets the limit (1: the first failed delivery poisons); below 1 is refused', async () => {
    const clock = new TestClock();
    const { outbox, calls } = await makeOutbox(
      clock,
      { 1: [sdkError('NETWORK_ERROR', true), sdkError('INTERNAL_SERVER_ERROR', true, undefined, 500)] },
      { maxFailedDeliveries: 1 },
    );
    const e = await outbox.enqueue({ room: 'r', operation: 'Op', variables: { n: 1 } });
    await outbox.drain();
    expect(calls).toHaveLength(2);
    expect(await outbox.get(e.id)).toMatchObject({ state: 'POISON', failedDeliveries: 1 });
    const store = SqliteOutboxStore.open(':memory:');
    open.push(store);
    for (const bad of [0, -1, 1.5, Number.NaN]) {
      await expect(
        Outbox.open({ store, clock, send: async () => undefined, maxFailedDeliveries: bad }),
      ).rejects.toThrow(/maxFailedDeliveries must be an integer of at least 1/);
    }
  });

  it('revive sets failedDeliveries back to 0: the entry gets its full number of deliveries again', async () => {
    const clock = new TestClock();
    const failing = () =>
      Array.from({ length: 3 }, () => sdkError('INTERNAL_SERVER_ERROR', true, undefined, 500));
    const { outbox, calls } = await makeOutbox(clock, { 1: [...failing(), ...failing()] });
    const e = await outbox.enqueue({ room: 'r', operation: 'Op', variables: { n: 1 } });
    await outbox.drain();
    expect(await outbox.get(e.id)).toMatchObject({ state: 'POISON', failedDeliveries: 3 });
    expect(await outbox.revive(e.id)).toMatchObject({
      state: 'QUEUED',
      failedDeliveries: 0,
      lastError: null,
    });
    await outbox.drain();
    expect(calls).toHaveLength(6);
    expect(await outbox.get(e.id)).toMatchObject({ state: 'POISON', attempts: 6, failedDeliveries: 3 });
  });
});

describe('Outbox: ordering per room', () => {
  it('a failing head blocks only its own room; other rooms go on', async () => {
    const clock = new TestClock();
    const { outbox, calls } = await makeOutbox(clock, {
      1: [sdkError('SERVICE_UNAVAILABLE', true, 5_000)],
    });
    await outbox.enqueue({ room: 'A', operation: 'Op', variables: { n: 1 } });
    await outbox.enqueue({ room: 'A', operation: 'Op', variables: { n: 2 } });
    await outbox.enqueue({ room: 'B', operation: 'Op', variables: { n: 3 } });
    await outbox.enqueue({ room: 'B', operation: 'Op', variables: { n: 4 } });
    await outbox.drain();
    // A:2 waits for A:1; B runs meanwhile; A:1 is retried after 5 s, then A:2.
    expect(calls).toEqual(['A:1:key-1', 'B:3:key-3', 'B:4:key-4', 'A:1:key-1', 'A:2:key-2']);
    expect(clock.sleeps).toEqual([5_000]);
    expect(states(await outbox.list())).toEqual(['A:1:SENT', 'A:2:SENT', 'B:3:SENT', 'B:4:SENT']);
  });

  it('never sends two entries of one room at once, and at most `concurrency` rooms at once', async () => {
    const clock = new TestClock();
    const gates = [1, 2, 3, 4].map(() => deferred());
    let inFlight = 0;
    let maxInFlight = 0;
    const started: number[] = [];
    const store = SqliteOutboxStore.open(file);
    const outbox = await Outbox.open({
      store,
      clock,
      concurrency: 2,
      send: async (entry) => {
        const n = entry.variables.n as number;
        started.push(n);
        maxInFlight = Math.max(maxInFlight, ++inFlight);
        await gates[n - 1]!.promise;
        inFlight--;
      },
    });
    open.push(outbox);
    await outbox.enqueue({ room: 'A', operation: 'Op', variables: { n: 1 } });
    await outbox.enqueue({ room: 'A', operation: 'Op', variables: { n: 2 } });
    await outbox.enqueue({ room: 'B', operation: 'Op', variables: { n: 3 } });
    await outbox.enqueue({ room: 'C', operation: 'Op', variables: { n: 4 } });
    const draining = outbox.drain();
    await until(() => started.length === 2);
    expect(started).toEqual([1, 3]); // A's head and B's head; C waits for a free slot; A:2 waits for A:1
    gates[0]!.resolve();
    await until(() => started.length === 3);
    expect(started).toEqual([1, 3, 2]); // A:2 (older than C:4) takes the freed slot
    gates[2]!.resolve();
    await until(() => started.length === 4);
    gates[1]!.resolve();
    gates[3]!.resolve();
    await draining;
    expect(maxInFlight).toBe(2);
    expect(states(await outbox.list())).toEqual(['A:1:SENT', 'A:2:SENT', 'B:3:SENT', 'C:4:SENT']);
  });
});

/** Yields to the event loop until `condition` holds (fails the test after 1000 turns, no timers involved). */
async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    if (condition()) return;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  throw new Error('condition never held');
}

describe('Outbox: crash recovery, stop and TTL', () => {
  it('an entry left SENDING goes back to QUEUED with the same key when the file is opened again', async () => {
    const clock = new TestClock();
    const hang = deferred();
    const first = await makeOutbox(clock, { 1: [hang.promise] });
    const entry = await first.outbox.enqueue({ room: 'r', operation: 'Op', variables: { n: 1 } });
    void first.outbox.drain().catch(() => undefined);
    await until(() => first.calls.length === 1);
    expect((await first.outbox.get(entry.id))!.state).toBe('SENDING');
    // "Crash": the connection goes away with the entry SENDING, and the send never completes.
    await first.store.close();
    open.splice(0);

    const second = await makeOutbox(clock);
    expect(second.outbox.counters().recovered).toBe(1);
    expect(await second.outbox.get(entry.id)).toMatchObject({
      state: 'QUEUED',
      idempotencyKey: 'key-1',
      attempts: 1,
    });
    await second.outbox.drain();
    expect(second.calls).toEqual(['r:1:key-1']);
    expect((await second.outbox.get(entry.id))!.state).toBe('SENT');
  });

  it('stop({ abort: true }) aborts in-flight sends and requeues them with their key', async () => {
    const clock = new TestClock();
    let aborted = false;
    const store = SqliteOutboxStore.open(file);
    const outbox = await Outbox.open({
      store,
      clock,
      send: (_entry, signal) =>
        new Promise((_resolve, reject) =>
          signal.addEventListener('abort', () => {
            aborted = true;
            reject(sdkError('ABORTED', false));
          }),
        ),
    });
    open.push(outbox);
    const e = await outbox.enqueue({ room: 'r', operation: 'Op' });
    outbox.start();
    await until(() => outbox.counters().sends === 1);
    await outbox.stop({ abort: true });
    expect(aborted).toBe(true);
    expect(await outbox.get(e.id)).toMatchObject({ state: 'QUEUED', attempts: 1, lastError: null });
  });

  it('start() sends in the background as entries arrive; stop() waits for the send in flight', async () => {
    const clock = new TestClock();
    const sent = deferred<string>();
    const { outbox } = await makeOutbox(
      clock,
      {},
      { onChange: (e) => e.state === 'SENT' && sent.resolve(e.id) },
    );
    outbox.start();
    const e = await outbox.enqueue({ room: 'r', operation: 'Op', variables: { n: 1 } });
    expect(await sent.promise).toBe(e.id);
    await outbox.stop();
    expect(() => outbox.start()).not.toThrow();
    await outbox.stop();
  });

  it('an entry not sent within its TTL (7 days) becomes EXPIRED, also when found on open', async () => {
    const clock = new TestClock();
    const { outbox, store } = await makeOutbox(
      clock,
      { 1: Array.from({ length: 8 }, () => sdkError('SERVICE_UNAVAILABLE', true)) },
      { delayFor: () => 86_400_000 },
    );
    const retried = await outbox.enqueue({ room: 'r', operation: 'Op', variables: { n: 1 } });
    const behind = await outbox.enqueue({ room: 'r', operation: 'Op', variables: { n: 2 } });
    await outbox.drain();
    expect(await outbox.get(retried.id)).toMatchObject({
      state: 'EXPIRED',
      lastError: { code: 'SERVICE_UNAVAILABLE' },
    });
    expect((await outbox.get(behind.id))!.state).toBe('EXPIRED');
    // Sends at day 0..6; the retry due at day 7 finds the entry expired.
    expect(clock.sleeps).toEqual(Array.from({ length: 7 }, () => 86_400_000));
    expect(clock.now()).toBe(retried.expiresAt);
    expect((await outbox.get(retried.id))!.attempts).toBe(7);
    expect(retried.expiresAt - retried.createdAt).toBe(7 * 24 * 3600 * 1000);
    expect(outbox.counters().expired).toBe(2);
    expect((await outbox.deadLetters()).map((d) => d.state)).toEqual(['EXPIRED', 'EXPIRED']);
    expect(await outbox.deadLetters({ includeExpired: false })).toEqual([]);

    // An entry enqueued, then the app is closed for 8 days: expired on open, never sent.
    const late = await outbox.enqueue({ room: 'z', operation: 'Op', variables: { n: 3 } });
    await store.close();
    open.splice(0);
    clock.advance(8 * 86_400_000);
    const again = await makeOutbox(clock);
    expect((await again.outbox.get(late.id))!.state).toBe('EXPIRED');
    await again.outbox.drain();
    expect(again.calls).toEqual([]);
  });

  it('keyRetentionMs: an entry first sent longer ago than the server keeps keys is not resent', async () => {
    const clock = new TestClock();
    const { outbox, calls } = await makeOutbox(
      clock,
      { 1: Array.from({ length: 10 }, () => sdkError('NETWORK_ERROR', true)) },
      { keyRetentionMs: 24 * 3600 * 1000, delayFor: () => 10 * 3600 * 1000 },
    );
    const e = await outbox.enqueue({ room: 'r', operation: 'Op', variables: { n: 1 } });
    await outbox.drain();
    // Sent at 0 h, 10 h, 20 h; at 30 h the first send is 30 h old > 24 h.
    expect(calls).toHaveLength(3);
    expect(await outbox.get(e.id)).toMatchObject({
      state: 'EXPIRED',
      lastError: { code: 'IDEMPOTENCY_WINDOW_PASSED' },
    });
  });
});

describe('Outbox: input and store guards', () => {
  it('refuses bad enqueue input with a message naming the field', async () => {
    const { outbox } = await makeOutbox(new TestClock());
    await expect(outbox.enqueue({ room: '', operation: 'Op' })).rejects.toThrow(
      /room must be a non-empty string/,
    );
    await expect(outbox.enqueue({ room: 'r', operation: 'Op', variables: [] as any })).rejects.toThrow(
      /plain object/,
    );
    await expect(outbox.enqueue({ room: 'r', operation: 'Op', variables: { n: 1n } as any })).rejects.toThrow(
      /JSON-serializable/,
    );
    expect(await outbox.list()).toEqual([]);
  });

  it('the store refuses moves the state machine does not allow', async () => {
    const store = SqliteOutboxStore.open(':memory:');
    open.push(store);
    const e = await store.add({
      id: 'a',
      room: 'r',
      operation: 'Op',
      variables: {},
      idempotencyKey: 'k',
      createdAt: 1,
      expiresAt: 2,
    });
    await expect(store.markSent(e.id, 1)).rejects.toThrow(/is QUEUED; SENDING → SENT is not allowed/);
    await expect(store.markSending('nope', 1)).rejects.toThrow(/does not exist/);
    await store.markSending(e.id, 1);
    await expect(store.markSending(e.id, 1)).rejects.toThrow(OutboxStateError);
  });

  it('one process owns the file: a second open fails with SqliteBusyError', async () => {
    const first = SqliteOutboxStore.open(file);
    open.push(first);
    expect(() => SqliteOutboxStore.open(file, { busyTimeoutMs: 10 })).toThrow(SqliteBusyError);
  });

  it('purge deletes settled entries older than the given age', async () => {
    const clock = new TestClock();
    const { outbox } = await makeOutbox(clock);
    await outbox.enqueue({ room: 'r', operation: 'Op', variables: { n: 1 } });
    await outbox.drain();
    await outbox.enqueue({ room: 'r', operation: 'Op', variables: { n: 2 } });
    clock.advance(60_000);
    expect(await outbox.purge(30_000)).toBe(1);
    expect(states(await outbox.list())).toEqual(['r:2:QUEUED']);
  });
});

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Inbox, LeaseLostError, type InboxOptions } from '../../src/inbox/index.js';
import { SqliteInboxStore } from '../../src/inbox/index.node.js';
import { Outbox } from '../../src/outbox/index.js';
import { SqliteOutboxStore } from '../../src/outbox/index.node.js';
import { openSqlite } from '../../src/outbox/index.node.js';
import { TestClock, counter } from '../outbox/fake-clock.js';

let dir: string;
const toClose: Array<{ close(): Promise<void> }> = [];
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'inbox-'));
});
afterEach(async () => {
  for (const c of toClose.splice(0)) await c.close().catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
});

function makeInbox(clock: TestClock, options: Partial<InboxOptions> = {}, file = join(dir, 'inbox.db')) {
  const inbox = new Inbox({
    store: SqliteInboxStore.open(file),
    clock,
    newToken: counter('lease'),
    ...options,
  });
  toClose.push(inbox);
  return inbox;
}

const S = 'intents:device-1';

describe('Inbox: receive, dedupe, cursor', () => {
  it('drops a message seen before, by id or by seq at or below the last one, and persists the cursor', async () => {
    const clock = new TestClock();
    const file = join(dir, 'inbox.db');
    const inbox = makeInbox(clock, {}, file);
    expect(await inbox.cursor(S)).toBeNull();
    expect(await inbox.receive({ stream: S, id: 'i-1', seq: 1, payload: { a: 1 } })).toBe('accepted');
    expect(await inbox.receive({ stream: S, id: 'i-2', seq: 2, payload: { a: 2 } })).toBe('accepted');
    expect(await inbox.receive({ stream: S, id: 'i-1', seq: 1, payload: { a: 1 } })).toBe('duplicate');
    expect(await inbox.receive({ stream: S, id: 'other-id', seq: 2, payload: {} })).toBe('duplicate');
    expect(await inbox.receive({ stream: S, id: 'i-2', seq: 5, payload: {} })).toBe('duplicate');
    expect(await inbox.receive({ stream: 'other', id: 'i-1', seq: 1, payload: {} })).toBe('accepted');
    expect(await inbox.cursor(S)).toBe('2');
    expect((await inbox.list({ stream: S })).map((m) => [m.id, m.seq, m.state])).toEqual([
      ['i-1', 1, 'AVAILABLE'],
      ['i-2', 2, 'AVAILABLE'],
    ]);
    // Survives a restart.
    await inbox.close();
    toClose.splice(0);
    const again = makeInbox(clock, {}, file);
    expect(await again.cursor(S)).toBe('2');
    expect(await again.receive({ stream: S, id: 'i-2', seq: 2, payload: {} })).toBe('duplicate');
  });

  it('an explicit cursor wins over the seq; saveCursor records one without a message', async () => {
    const inbox = makeInbox(new TestClock());
    await inbox.receive({ stream: S, id: 'a', seq: 7, cursor: 'opaque-7', payload: null });
    expect(await inbox.cursor(S)).toBe('opaque-7');
    await inbox.saveCursor(S, 'opaque-9');
    expect(await inbox.cursor(S)).toBe('opaque-9');
    expect(await inbox.receive({ stream: S, id: 'b', seq: 6, payload: null })).toBe('duplicate');
  });

  it('refuses malformed messages with a message naming the field', () => {
    const inbox = makeInbox(new TestClock());
    expect(() => inbox.receive({ stream: '', id: 'a', payload: 1 })).toThrow(
      /stream must be a non-empty string/,
    );
    expect(() => inbox.receive({ stream: S, id: 'a', seq: -1, payload: 1 })).toThrow(/seq must be/);
    expect(() => inbox.receive({ stream: S, id: 'a', payload: undefined })).toThrow(/payload is missing/);
  });
});

describe('Inbox: leases, completion, failure and quarantine', () => {
  it('leases the oldest message for 60 s; complete → PROCESSED with a pending acknowledgement', async () => {
    const clock = new TestClock();
    const inbox = makeInbox(clock);
    await inbox.receive({ stream: S, id: 'i-1', seq: 1, payload: { n: 1 } });
    await inbox.receive({ stream: S, id: 'i-2', seq: 2, payload: { n: 2 } });
    const lease = (await inbox.lease())!;
    expect(lease).toMatchObject({
      id: 'i-1',
      attempt: 1,
      token: 'lease-1',
      leaseUntil: clock.now() + 60_000,
    });
    expect((await inbox.lease())!.id).toBe('i-2'); // i-1 is leased: the next one
    expect(await inbox.lease()).toBeNull();
    const ack = await inbox.complete(lease);
    expect(ack).toEqual({ stream: S, id: 'i-1', seq: 1, outcome: 'PROCESSED', at: clock.now() });
    expect(await inbox.pendingAcknowledgements()).toEqual([ack]);
    await inbox.acknowledged(ack);
    expect(await inbox.pendingAcknowledgements()).toEqual([]);
    expect((await inbox.get(S, 'i-1'))!.acknowledgedAt).toBe(clock.now());
  });

  it('an expired lease makes the message available again; the old lease can no longer settle it', async () => {
    const clock = new TestClock();
    const inbox = makeInbox(clock);
    await inbox.receive({ stream: S, id: 'i-1', seq: 1, payload: {} });
    const first = (await inbox.lease())!;
    clock.advance(59_999);
    expect(await inbox.lease()).toBeNull();
    clock.advance(1);
    const second = (await inbox.lease())!;
    expect(second).toMatchObject({ id: 'i-1', attempt: 2, token: 'lease-3' });
    await expect(inbox.complete(first)).rejects.toThrow(LeaseLostError);
    await inbox.complete(second);
    expect((await inbox.get(S, 'i-1'))!.state).toBe('PROCESSED');
  });

  it('after 3 failed attempts the message is quarantined with a terminal acknowledgement', async () => {
    const clock = new TestClock();
    const inbox = makeInbox(clock);
    await inbox.receive({ stream: S, id: 'i-1', seq: 1, payload: { n: 1 } });
    const failing = async () => {
      throw Object.assign(new Error('policy engine down'), { code: 'POLICY_UNAVAILABLE' });
    };
    expect(await inbox.process(failing)).toMatchObject({ outcome: 'RETRY', attempts: 1 });
    expect(await inbox.process(failing)).toMatchObject({ outcome: 'RETRY', attempts: 2 });
    const third = await inbox.process(failing);
    expect(third).toEqual({
      outcome: 'QUARANTINED',
      acknowledgement: {
        stream: S,
        id: 'i-1',
        seq: 1,
        outcome: 'QUARANTINED',
        error: { code: 'POLICY_UNAVAILABLE', message: 'policy engine down' },
        at: clock.now(),
      },
    });
    expect(await inbox.process(failing)).toBeNull();
    expect((await inbox.quarantined()).map((m) => [m.id, m.attempts])).toEqual([['i-1', 3]]);
    expect(await inbox.pendingAcknowledgements()).toEqual([
      third!.outcome === 'QUARANTINED' && third!.acknowledgement,
    ]);
  });

  it('a message whose lease expired 3 times (the processor died each time) is quarantined, not leased again', async () => {
    const clock = new TestClock();
    const inbox = makeInbox(clock);
    await inbox.receive({ stream: S, id: 'crashy', seq: 1, payload: {} });
    for (let attempt = 1; attempt <= 3; attempt++) {
      expect(await inbox.lease()).toMatchObject({ id: 'crashy', attempt });
      clock.advance(60_000); // the processor died: the lease runs out
    }
    await inbox.receive({ stream: S, id: 'fine', seq: 2, payload: {} });
    const next = (await inbox.lease())!;
    expect(next.id).toBe('fine');
    await inbox.complete(next);
    expect(await inbox.get(S, 'crashy')).toMatchObject({
      state: 'QUARANTINED',
      attempts: 3,
      lastError: { code: 'LEASE_EXPIRED' },
    });
    expect((await inbox.pendingAcknowledgements()).map((a) => [a.id, a.outcome])).toEqual([
      ['crashy', 'QUARANTINED'],
      ['fine', 'PROCESSED'],
    ]);
  });

  it('retryDelayMs keeps a failed message back; process() completes a successful handler', async () => {
    const clock = new TestClock();
    const inbox = makeInbox(clock, { retryDelayMs: (attempt) => attempt * 10_000 });
    await inbox.receive({ stream: S, id: 'i-1', payload: { n: 1 } });
    const r = await inbox.process(() => {
      throw new Error('busy');
    });
    expect(r).toEqual({
      outcome: 'RETRY',
      attempts: 1,
      availableAt: clock.now() + 10_000,
      error: { code: 'PROCESSING_FAILED', message: 'busy' },
    });
    expect(await inbox.lease()).toBeNull();
    clock.advance(10_000);
    const seen: unknown[] = [];
    const done = await inbox.process((payload) => void seen.push(payload));
    expect(done).toMatchObject({
      outcome: 'PROCESSED',
      acknowledgement: { id: 'i-1', outcome: 'PROCESSED' },
    });
    expect(seen).toEqual([{ n: 1 }]);
  });

  it('process() reports LEASE_LOST when the handler outlived its lease and another worker took it', async () => {
    const clock = new TestClock();
    const inbox = makeInbox(clock);
    await inbox.receive({ stream: S, id: 'slow', payload: {} });
    const result = await inbox.process(async () => {
      clock.advance(61_000);
      expect((await inbox.lease())!.attempt).toBe(2);
    });
    expect(result).toEqual({ outcome: 'LEASE_LOST' });
    expect((await inbox.get(S, 'slow'))!.state).toBe('LEASED');
  });

  it('purge deletes acknowledged messages; seq dedupe still holds through the cursor', async () => {
    const clock = new TestClock();
    const inbox = makeInbox(clock);
    await inbox.receive({ stream: S, id: 'i-1', seq: 1, payload: {} });
    const ack = (await inbox.process(() => undefined))!;
    await inbox.acknowledged(ack.outcome === 'PROCESSED' ? ack.acknowledgement : { stream: S, id: '?' });
    clock.advance(1000);
    expect(await inbox.purge(500)).toBe(1);
    expect(await inbox.list()).toEqual([]);
    expect(await inbox.receive({ stream: S, id: 'i-1', seq: 1, payload: {} })).toBe('duplicate');
  });
});

describe('Inbox and outbox in one file', () => {
  it('both stores share one Database', async () => {
    const { db } = openSqlite(join(dir, 'device.db'));
    const clock = new TestClock();
    const inbox = new Inbox({ store: SqliteInboxStore.open(db), clock });
    const sent: string[] = [];
    const outbox = await Outbox.open({
      store: SqliteOutboxStore.open(db),
      clock,
      send: async (e) => void sent.push(e.operation),
    });
    await inbox.receive({ stream: S, id: 'i-1', seq: 1, payload: {} });
    const result = (await inbox.process(() => undefined))!;
    expect(result.outcome).toBe('PROCESSED');
    await outbox.enqueue({ room: S, operation: 'ReportIntentState', variables: { id: 'i-1' } });
    await outbox.drain();
    expect(sent).toEqual(['ReportIntentState']);
    db.close();
  });
});

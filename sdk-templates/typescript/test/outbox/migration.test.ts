/**
 * The outbox file's schema moves forward only: a file written by an SDK before failed deliveries were counted
 * (schema version 1) opens with this one, keeps its entries (counter 0) and goes on sending them.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { Outbox } from '../../src/outbox/index.js';
import { SqliteOutboxStore } from '../../src/outbox/index.node.js';
import { TestClock, counter, sdkError } from './fake-clock.js';

/** The outbox table as version 1 of the schema created it (before failed_deliveries), verbatim. */
const VERSION_1 = `CREATE TABLE outbox_entries (
     seq INTEGER PRIMARY KEY AUTOINCREMENT,
     id TEXT NOT NULL UNIQUE,
     room TEXT NOT NULL,
     operation TEXT NOT NULL,
     variables TEXT NOT NULL,
     idempotency_key TEXT NOT NULL UNIQUE,
     state TEXT NOT NULL CHECK (state IN ('QUEUED', 'SENDING', 'RETRYABLE', 'SENT', 'POISON', 'EXPIRED')),
     attempts INTEGER NOT NULL DEFAULT 0,
     next_attempt_at INTEGER,
     last_error_code TEXT,
     last_error_message TEXT,
     created_at INTEGER NOT NULL,
     updated_at INTEGER NOT NULL,
     expires_at INTEGER NOT NULL,
     first_attempt_at INTEGER
   );
   CREATE INDEX outbox_entries_pending ON outbox_entries (room, seq)
     WHERE state IN ('QUEUED', 'SENDING', 'RETRYABLE');
   CREATE INDEX outbox_entries_state ON outbox_entries (state, seq);`;

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'outbox-migration-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function writeVersion1File(file: string, now: number): void {
  const db = new Database(file);
  db.exec(VERSION_1);
  db.exec('CREATE TABLE agentgraph_sdk_schema (component TEXT PRIMARY KEY, version INTEGER NOT NULL)');
  db.prepare("INSERT INTO agentgraph_sdk_schema VALUES ('outbox', 1)").run();
  const insert = db.prepare(
    `INSERT INTO outbox_entries (id, room, operation, variables, idempotency_key, state, attempts, next_attempt_at,
       last_error_code, last_error_message, created_at, updated_at, expires_at, first_attempt_at)
     VALUES (?, ?, 'PostMessage', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const ttl = 7 * 86_400_000;
  insert.run('old-1', 'r', '{"n":1}', 'key-old-1', 'SENT', 1, null, null, null, now, now, now + ttl, now);
  insert.run(
    'old-2',
    'r',
    '{"n":2}',
    'key-old-2',
    'RETRYABLE',
    2,
    now,
    'INTERNAL_SERVER_ERROR',
    'boom',
    now,
    now,
    now + ttl,
    now,
  );
  insert.run('old-3', 'r', '{"n":3}', 'key-old-3', 'QUEUED', 0, null, null, null, now, now, now + ttl, null);
  db.close();
}

it('a version-1 outbox file opens, keeps its entries with failedDeliveries 0, and sends the pending ones', async () => {
  const clock = new TestClock();
  const file = join(dir, 'outbox.db');
  writeVersion1File(file, clock.now());

  const sent: string[] = [];
  const outbox = await Outbox.open({
    store: SqliteOutboxStore.open(file),
    clock,
    newId: counter('id'),
    send: async (entry) => {
      sent.push(entry.idempotencyKey);
      // One failed delivery for the old RETRYABLE entry: counted from 0, so it is retried, not poisoned.
      if (entry.id === 'old-2' && sent.length === 1)
        throw sdkError('INTERNAL_SERVER_ERROR', true, undefined, 500);
    },
  });
  try {
    expect((await outbox.list()).map((e) => [e.id, e.state, e.attempts, e.failedDeliveries])).toEqual([
      ['old-1', 'SENT', 1, 0],
      ['old-2', 'RETRYABLE', 2, 0],
      ['old-3', 'QUEUED', 0, 0],
    ]);
    await outbox.drain();
    expect(sent).toEqual(['key-old-2', 'key-old-2', 'key-old-3']);
    expect((await outbox.list()).map((e) => [e.id, e.state, e.failedDeliveries])).toEqual([
      ['old-1', 'SENT', 0],
      ['old-2', 'SENT', 1],
      ['old-3', 'SENT', 0],
    ]);
  } finally {
    await outbox.close();
  }

  const db = new Database(file, { readonly: true });
  try {
    expect(db.prepare("SELECT version FROM agentgraph_sdk_schema WHERE component = 'outbox'").get()).toEqual({
      version: 2,
    });
  } finally {
    db.close();
  }
});

/**
 * SqliteOutboxStore: the outbox on better-sqlite3 (Node only). One row per entry; every state change is one
 * transaction guarded by the allowed source states, so a crash leaves each entry in exactly one state.
 */
import {
  OutboxStateError,
  PENDING_STATES,
  type NewOutboxEntry,
  type OutboxEntry,
  type OutboxErrorInfo,
  type OutboxFilter,
  type OutboxState,
  type OutboxStore,
  type FailureRecord,
} from './types.js';
import {
  listQuery,
  migrate,
  openSqlite,
  type SqliteDatabase,
  type SqliteOpenOptions,
  type SqliteStatement as Statement,
} from './sqlite.node.js';

const MIGRATIONS = [
  `CREATE TABLE outbox_entries (
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
   CREATE INDEX outbox_entries_state ON outbox_entries (state, seq);`,
  // 2: poison after maxFailedDeliveries failed deliveries; entries already in the file start at 0.
  `ALTER TABLE outbox_entries ADD COLUMN failed_deliveries INTEGER NOT NULL DEFAULT 0;`,
];

interface Row {
  seq: number;
  id: string;
  room: string;
  operation: string;
  variables: string;
  idempotency_key: string;
  state: OutboxState;
  attempts: number;
  failed_deliveries: number;
  next_attempt_at: number | null;
  last_error_code: string | null;
  last_error_message: string | null;
  created_at: number;
  updated_at: number;
  expires_at: number;
  first_attempt_at: number | null;
}

function toEntry(row: Row): OutboxEntry {
  return {
    id: row.id,
    seq: row.seq,
    room: row.room,
    operation: row.operation,
    variables: JSON.parse(row.variables) as Record<string, unknown>,
    idempotencyKey: row.idempotency_key,
    state: row.state,
    attempts: row.attempts,
    failedDeliveries: row.failed_deliveries,
    nextAttemptAt: row.next_attempt_at,
    lastError:
      row.last_error_code === null
        ? null
        : { code: row.last_error_code, message: row.last_error_message ?? '' },
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    expiresAt: row.expires_at,
    firstAttemptAt: row.first_attempt_at,
  };
}

const inList = (states: readonly OutboxState[]) => states.map((s) => `'${s}'`).join(', ');

export type SqliteOutboxStoreOptions = SqliteOpenOptions;

export class SqliteOutboxStore implements OutboxStore {
  private readonly statements = new Map<string, Statement>();

  private constructor(
    private readonly db: SqliteDatabase,
    private readonly owned: boolean,
  ) {}

  /** Prepared once per SQL text. */
  private sql(text: string): Statement {
    let statement = this.statements.get(text);
    if (!statement) {
      statement = this.db.prepare<unknown[]>(text);
      this.statements.set(text, statement);
    }
    return statement;
  }

  /**
   * Opens the outbox in a file (created if missing), or in a Database the caller already opened (for example the
   * one the inbox uses). Creates or upgrades the tables.
   */
  static open(target: string | SqliteDatabase, options: SqliteOutboxStoreOptions = {}): SqliteOutboxStore {
    const { db, owned } = openSqlite(target, options);
    migrate(db, 'outbox', MIGRATIONS);
    return new SqliteOutboxStore(db, owned);
  }

  async add(entry: NewOutboxEntry): Promise<OutboxEntry> {
    const row = this.sql(
      `INSERT INTO outbox_entries (id, room, operation, variables, idempotency_key, state, created_at, updated_at,
           expires_at)
         VALUES (?, ?, ?, ?, ?, 'QUEUED', ?, ?, ?) RETURNING *`,
    ).get(
      entry.id,
      entry.room,
      entry.operation,
      JSON.stringify(entry.variables),
      entry.idempotencyKey,
      entry.createdAt,
      entry.createdAt,
      entry.expiresAt,
    ) as Row;
    return toEntry(row);
  }

  async get(id: string): Promise<OutboxEntry | null> {
    const row = this.sql('SELECT * FROM outbox_entries WHERE id = ?').get(id) as Row | undefined;
    return row ? toEntry(row) : null;
  }

  async list(filter: OutboxFilter = {}): Promise<OutboxEntry[]> {
    const { sql, params } = listQuery('outbox_entries', 'seq', filter.state, { room: filter.room });
    return (this.sql(sql).all(...params) as Row[]).map(toEntry);
  }

  async heads(): Promise<OutboxEntry[]> {
    const rows = this.sql(
      `SELECT e.* FROM outbox_entries e
         JOIN (SELECT MIN(seq) AS seq FROM outbox_entries WHERE state IN (${inList(PENDING_STATES)}) GROUP BY room) h
           ON e.seq = h.seq
         ORDER BY e.seq`,
    ).all() as Row[];
    return rows.map(toEntry);
  }

  async recover(now: number): Promise<number> {
    return this.sql(`UPDATE outbox_entries SET state = 'QUEUED', updated_at = ? WHERE state = 'SENDING'`).run(
      now,
    ).changes;
  }

  async expire(now: number): Promise<OutboxEntry[]> {
    const rows = this.sql(
      `UPDATE outbox_entries SET state = 'EXPIRED', next_attempt_at = NULL, updated_at = ?
         WHERE state IN ('QUEUED', 'RETRYABLE') AND expires_at <= ? RETURNING *`,
    ).all(now, now) as Row[];
    return rows.map(toEntry).sort((a, b) => a.seq - b.seq);
  }

  async markSending(id: string, now: number): Promise<OutboxEntry> {
    return this.move(
      id,
      ['QUEUED', 'RETRYABLE'],
      'SENDING',
      `attempts = attempts + 1, next_attempt_at = NULL, first_attempt_at = COALESCE(first_attempt_at, ?)`,
      [now],
      now,
    );
  }

  async markSent(id: string, now: number): Promise<OutboxEntry> {
    return this.move(id, ['SENDING'], 'SENT', 'last_error_code = NULL, last_error_message = NULL', [], now);
  }

  async markRetryable(
    id: string,
    now: number,
    nextAttemptAt: number,
    error: OutboxErrorInfo,
    options: FailureRecord = {},
  ): Promise<OutboxEntry> {
    return this.move(
      id,
      ['SENDING'],
      'RETRYABLE',
      'next_attempt_at = ?, last_error_code = ?, last_error_message = ?, failed_deliveries = failed_deliveries + ?',
      [nextAttemptAt, error.code, error.message, options.failedDelivery ? 1 : 0],
      now,
    );
  }

  async markPoison(
    id: string,
    now: number,
    error: OutboxErrorInfo,
    options: FailureRecord = {},
  ): Promise<OutboxEntry> {
    return this.move(
      id,
      ['SENDING'],
      'POISON',
      'last_error_code = ?, last_error_message = ?, failed_deliveries = failed_deliveries + ?',
      [error.code, error.message, options.failedDelivery ? 1 : 0],
      now,
    );
  }

  async markExpired(id: string, now: number, error: OutboxErrorInfo): Promise<OutboxEntry> {
    return this.move(
      id,
      ['QUEUED', 'RETRYABLE'],
      'EXPIRED',
      'next_attempt_at = NULL, last_error_code = ?, last_error_message = ?',
      [error.code, error.message],
      now,
    );
  }

  async requeue(id: string, now: number): Promise<OutboxEntry> {
    return this.move(id, ['SENDING'], 'QUEUED', 'next_attempt_at = NULL', [], now);
  }

  async revive(id: string, now: number, expiresAt: number): Promise<OutboxEntry> {
    return this.move(
      id,
      ['POISON', 'EXPIRED'],
      'QUEUED',
      'next_attempt_at = NULL, last_error_code = NULL, last_error_message = NULL, failed_deliveries = 0, ' +
        'expires_at = ?',
      [expiresAt],
      now,
    );
  }

  async purge(
    before: number,
    states: readonly OutboxState[] = ['SENT', 'POISON', 'EXPIRED'],
  ): Promise<number> {
    const settled = states.filter((s) => !PENDING_STATES.includes(s));
    if (settled.length === 0) return 0;
    return this.sql(`DELETE FROM outbox_entries WHERE state IN (${inList(settled)}) AND updated_at < ?`).run(
      before,
    ).changes;
  }

  async close(): Promise<void> {
    if (this.owned && this.db.open) this.db.close();
  }

  /** One guarded UPDATE: moves `id` from one of `from` to `to`, or throws OutboxStateError. */
  private move(
    id: string,
    from: readonly OutboxState[],
    to: OutboxState,
    set: string,
    params: unknown[],
    now: number,
  ): OutboxEntry {
    const row = this.sql(
      `UPDATE outbox_entries SET state = ?, updated_at = ?, ${set}
         WHERE id = ? AND state IN (${inList(from)}) RETURNING *`,
    ).get(to, now, ...params, id) as Row | undefined;
    if (row) return toEntry(row);
    const actual = this.sql('SELECT state FROM outbox_entries WHERE id = ?').get(id) as
      { state: OutboxState } | undefined;
    throw new OutboxStateError(id, `${from.join('/')} → ${to}`, actual?.state ?? null);
  }
}

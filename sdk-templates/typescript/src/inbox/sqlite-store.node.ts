/** SqliteInboxStore: the inbox on better-sqlite3 (Node only). Each method is one transaction. */
import {
  listQuery,
  migrate,
  openSqlite,
  type SqliteDatabase,
  type SqliteOpenOptions,
  type SqliteStatement,
} from '../outbox/sqlite.node.js';
import {
  LeaseLostError,
  type IncomingMessage,
  type InboxErrorInfo,
  type InboxFilter,
  type InboxMessage,
  type InboxState,
  type InboxStore,
  type StreamCursor,
} from './types.js';

const MIGRATIONS = [
  `CREATE TABLE inbox_streams (
     stream TEXT PRIMARY KEY,
     cursor TEXT,
     last_seq INTEGER,
     updated_at INTEGER NOT NULL
   );
   CREATE TABLE inbox_messages (
     position INTEGER PRIMARY KEY AUTOINCREMENT,
     stream TEXT NOT NULL,
     message_id TEXT NOT NULL,
     seq INTEGER,
     payload TEXT NOT NULL,
     state TEXT NOT NULL CHECK (state IN ('AVAILABLE', 'LEASED', 'PROCESSED', 'QUARANTINED')),
     attempts INTEGER NOT NULL DEFAULT 0,
     available_at INTEGER NOT NULL,
     lease_token TEXT,
     lease_until INTEGER,
     last_error_code TEXT,
     last_error_message TEXT,
     received_at INTEGER NOT NULL,
     settled_at INTEGER,
     acknowledged_at INTEGER,
     UNIQUE (stream, message_id)
   );
   CREATE INDEX inbox_messages_open ON inbox_messages (position) WHERE state IN ('AVAILABLE', 'LEASED');
   CREATE INDEX inbox_messages_unacknowledged ON inbox_messages (position)
     WHERE state IN ('PROCESSED', 'QUARANTINED') AND acknowledged_at IS NULL;`,
];

interface Row {
  position: number;
  stream: string;
  message_id: string;
  seq: number | null;
  payload: string;
  state: InboxState;
  attempts: number;
  available_at: number;
  lease_token: string | null;
  lease_until: number | null;
  last_error_code: string | null;
  last_error_message: string | null;
  received_at: number;
  settled_at: number | null;
  acknowledged_at: number | null;
}

function toMessage(row: Row): InboxMessage {
  return {
    stream: row.stream,
    id: row.message_id,
    seq: row.seq,
    payload: JSON.parse(row.payload) as unknown,
    state: row.state,
    attempts: row.attempts,
    availableAt: row.available_at,
    leaseToken: row.lease_token,
    leaseUntil: row.lease_until,
    lastError:
      row.last_error_code === null
        ? null
        : { code: row.last_error_code, message: row.last_error_message ?? '' },
    receivedAt: row.received_at,
    settledAt: row.settled_at,
    acknowledgedAt: row.acknowledged_at,
  };
}

export type SqliteInboxStoreOptions = SqliteOpenOptions;

export class SqliteInboxStore implements InboxStore {
  private readonly statements = new Map<string, SqliteStatement>();

  private constructor(
    private readonly db: SqliteDatabase,
    private readonly owned: boolean,
  ) {}

  /** Opens the inbox in a file, or in a Database the caller opened (the outbox's, for one file). */
  static open(target: string | SqliteDatabase, options: SqliteInboxStoreOptions = {}): SqliteInboxStore {
    const { db, owned } = openSqlite(target, options);
    migrate(db, 'inbox', MIGRATIONS);
    return new SqliteInboxStore(db, owned);
  }

  private sql(text: string): SqliteStatement {
    let statement = this.statements.get(text);
    if (!statement) {
      statement = this.db.prepare<unknown[]>(text);
      this.statements.set(text, statement);
    }
    return statement;
  }

  async cursor(stream: string): Promise<StreamCursor | null> {
    const row = this.sql('SELECT stream, cursor, last_seq FROM inbox_streams WHERE stream = ?').get(
      stream,
    ) as { stream: string; cursor: string | null; last_seq: number | null } | undefined;
    return row ? { stream: row.stream, cursor: row.cursor, lastSeq: row.last_seq } : null;
  }

  async saveCursor(stream: string, cursor: string, now: number): Promise<void> {
    this.sql(
      `INSERT INTO inbox_streams (stream, cursor, updated_at) VALUES (?, ?, ?)
       ON CONFLICT (stream) DO UPDATE SET cursor = excluded.cursor, updated_at = excluded.updated_at`,
    ).run(stream, cursor, now);
  }

  async receive(message: IncomingMessage, now: number): Promise<'accepted' | 'duplicate'> {
    return this.db.transaction((): 'accepted' | 'duplicate' => {
      const state = this.sql('SELECT last_seq FROM inbox_streams WHERE stream = ?').get(message.stream) as
        { last_seq: number | null } | undefined;
      const lastSeq = state?.last_seq ?? null;
      if (message.seq !== undefined && lastSeq !== null && message.seq <= lastSeq) return 'duplicate';
      const inserted = this.sql(
        `INSERT INTO inbox_messages (stream, message_id, seq, payload, state, available_at, received_at)
         VALUES (?, ?, ?, ?, 'AVAILABLE', ?, ?) ON CONFLICT (stream, message_id) DO NOTHING`,
      ).run(message.stream, message.id, message.seq ?? null, JSON.stringify(message.payload), now, now);
      if (inserted.changes === 0) return 'duplicate';
      const cursor = message.cursor ?? (message.seq !== undefined ? String(message.seq) : null);
      this.sql(
        `INSERT INTO inbox_streams (stream, cursor, last_seq, updated_at) VALUES (?, ?, ?, ?)
         ON CONFLICT (stream) DO UPDATE SET
           cursor = COALESCE(excluded.cursor, inbox_streams.cursor),
           last_seq = CASE WHEN excluded.last_seq IS NULL THEN inbox_streams.last_seq
                           WHEN inbox_streams.last_seq IS NULL THEN excluded.last_seq
                           ELSE MAX(inbox_streams.last_seq, excluded.last_seq) END,
           updated_at = excluded.updated_at`,
      ).run(message.stream, cursor, message.seq ?? null, now);
      return 'accepted';
    })();
  }

  async lease(
    now: number,
    leaseMs: number,
    token: string,
    maxAttempts: number,
    stream?: string,
  ): Promise<{ leased: InboxMessage | null; quarantined: InboxMessage[] }> {
    return this.db.transaction(() => {
      const quarantined = (
        this.sql(
          `UPDATE inbox_messages SET state = 'QUARANTINED', lease_token = NULL, lease_until = NULL, settled_at = ?,
             last_error_code = 'LEASE_EXPIRED', last_error_message = ?
           WHERE state = 'LEASED' AND lease_until <= ? AND attempts >= ? RETURNING *`,
        ).all(
          now,
          `Processing did not finish within the lease ${maxAttempts} times (the processor stopped or hung).`,
          now,
          maxAttempts,
        ) as Row[]
      )
        .map(toMessage)
        .sort((a, b) => a.receivedAt - b.receivedAt);
      const streamFilter = stream === undefined ? '' : 'AND stream = ?';
      const row = this.sql(
        `UPDATE inbox_messages SET state = 'LEASED', attempts = attempts + 1, lease_token = ?, lease_until = ?
         WHERE position = (
           SELECT position FROM inbox_messages
           WHERE ((state = 'AVAILABLE' AND available_at <= ?) OR (state = 'LEASED' AND lease_until <= ?)) ${streamFilter}
           ORDER BY position LIMIT 1)
         RETURNING *`,
      ).get(token, now + leaseMs, now, now, ...(stream === undefined ? [] : [stream])) as Row | undefined;
      return { leased: row ? toMessage(row) : null, quarantined };
    })();
  }

  async complete(stream: string, id: string, token: string, now: number): Promise<InboxMessage> {
    const row = this.sql(
      `UPDATE inbox_messages SET state = 'PROCESSED', lease_token = NULL, lease_until = NULL, settled_at = ?
       WHERE stream = ? AND message_id = ? AND state = 'LEASED' AND lease_token = ? RETURNING *`,
    ).get(now, stream, id, token) as Row | undefined;
    if (!row) throw new LeaseLostError(stream, id);
    return toMessage(row);
  }

  async fail(
    stream: string,
    id: string,
    token: string,
    now: number,
    error: InboxErrorInfo,
    outcome: { quarantine: true } | { quarantine: false; availableAt: number },
  ): Promise<InboxMessage> {
    const row = (
      outcome.quarantine
        ? this.sql(
            `UPDATE inbox_messages SET state = 'QUARANTINED', lease_token = NULL, lease_until = NULL, settled_at = ?,
               last_error_code = ?, last_error_message = ?
             WHERE stream = ? AND message_id = ? AND state = 'LEASED' AND lease_token = ? RETURNING *`,
          ).get(now, error.code, error.message, stream, id, token)
        : this.sql(
            `UPDATE inbox_messages SET state = 'AVAILABLE', lease_token = NULL, lease_until = NULL, available_at = ?,
               last_error_code = ?, last_error_message = ?
             WHERE stream = ? AND message_id = ? AND state = 'LEASED' AND lease_token = ? RETURNING *`,
          ).get(outcome.availableAt, error.code, error.message, stream, id, token)
    ) as Row | undefined;
    if (!row) throw new LeaseLostError(stream, id);
    return toMessage(row);
  }

  async unacknowledged(): Promise<InboxMessage[]> {
    return (
      this.sql(
        `SELECT * FROM inbox_messages WHERE state IN ('PROCESSED', 'QUARANTINED') AND acknowledged_at IS NULL
         ORDER BY position`,
      ).all() as Row[]
    ).map(toMessage);
  }

  async markAcknowledged(stream: string, id: string, now: number): Promise<void> {
    const result = this.sql(
      `UPDATE inbox_messages SET acknowledged_at = COALESCE(acknowledged_at, ?)
       WHERE stream = ? AND message_id = ? AND state IN ('PROCESSED', 'QUARANTINED')`,
    ).run(now, stream, id);
    if (result.changes === 0) {
      throw new Error(
        `Inbox message ${stream}/${id} is not settled (PROCESSED or QUARANTINED): nothing to acknowledge.`,
      );
    }
  }

  async get(stream: string, id: string): Promise<InboxMessage | null> {
    const row = this.sql('SELECT * FROM inbox_messages WHERE stream = ? AND message_id = ?').get(
      stream,
      id,
    ) as Row | undefined;
    return row ? toMessage(row) : null;
  }

  async list(filter: InboxFilter = {}): Promise<InboxMessage[]> {
    const { sql, params } = listQuery('inbox_messages', 'position', filter.state, { stream: filter.stream });
    return (this.sql(sql).all(...params) as Row[]).map(toMessage);
  }

  async purge(before: number): Promise<number> {
    return this.sql(
      `DELETE FROM inbox_messages WHERE acknowledged_at IS NOT NULL AND settled_at < ?
         AND state IN ('PROCESSED', 'QUARANTINED')`,
    ).run(before).changes;
  }

  async close(): Promise<void> {
    if (this.owned && this.db.open) this.db.close();
  }
}

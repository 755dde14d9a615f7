/**
 * The SQL of agent messages. Every function takes a tenant-scoped transaction (RLS limits it to the caller's
 * tenant). `insertAgentMessage` numbers a message in its recipient's inbox under the counter row's lock;
 * `acknowledge` is the only writer of states. Both write an outbox row and a NOTIFY in the same transaction.
 */
import {
  AppError,
  cursorTime,
  notFound,
  type KeysetAfter,
  type Keyed,
  type Queryable,
} from '@agentgraph/runtime';
import {
  AGENT_MESSAGE_COLUMNS,
  kindToDb,
  toAgentMessage,
  type AgentAddressModel,
  type AgentMessageModel,
  type AgentMessageRow,
} from './models.js';
import { checkAck, STATE_COLUMN, type AckState, type AgentMessageState } from './states.js';

/** NOTIFY channel of agent messages. Payload: {tenantId, kind, recipientId, seq, event} only; listeners read rows. */
export const AGENT_MESSAGES_CHANNEL = 'coordination_agent_messages';

export interface AgentMessageNotification {
  tenantId: string;
  /** 'device' or 'user'. */
  kind: string;
  recipientId: string;
  seq: number;
  /** 'SENT' for a new message, else the acknowledged state. */
  event: string;
}

/** SQL: the state a reader sees at $now (QUEUED past expiry is EXPIRED). `now` is a placeholder such as $3. */
const effectiveStateSql = (now: string) =>
  `CASE WHEN state = 'QUEUED' AND expires_at <= ${now}::timestamptz THEN 'EXPIRED' ELSE state END`;

/** SQL: the message (of table alias `t`, if any) still waits for its recipient at `now`. */
const openSql = (now: string, t = '') =>
  `(${t}state IN ('QUEUED', 'DELIVERED', 'READ', 'HANDLED') ` +
  `AND NOT (${t}state = 'QUEUED' AND ${t}expires_at IS NOT NULL AND ${t}expires_at <= ${now}::timestamptz))`;

async function recordOutbox(tx: Queryable, m: AgentMessageModel, event: string, at: Date): Promise<void> {
  const kind = kindToDb(m.to.kind);
  await tx.query(
    `INSERT INTO coordination.agent_message_outbox (tenant_id, message_id, recipient_kind, recipient_id, seq, event, at)
     VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [m.tenantId, m.id, kind, m.to.id, m.seq, event, at.toISOString()],
  );
  const note: AgentMessageNotification = {
    tenantId: m.tenantId,
    kind,
    recipientId: m.to.id,
    seq: m.seq,
    event,
  };
  await tx.query('SELECT pg_notify($1, $2)', [AGENT_MESSAGES_CHANNEL, JSON.stringify(note)]);
}

export interface NewAgentMessage {
  tenantId: string;
  id: string;
  to: AgentAddressModel;
  from: AgentAddressModel;
  body: string;
  contentType: string;
  correlationId: string | null;
  replyTo: string | null;
  createdAt: Date;
  expiresAt: Date | null;
}

/**
 * Numbers the message with the recipient inbox's next seq (the counter row's lock queues senders to one inbox, so
 * messages commit in seq order), stores it QUEUED and records outbox + NOTIFY.
 */
export async function insertAgentMessage(tx: Queryable, m: NewAgentMessage): Promise<AgentMessageModel> {
  const kind = kindToDb(m.to.kind);
  const seq = await tx.query<{ last_seq: number }>(
    `INSERT INTO coordination.agent_inboxes AS i (tenant_id, recipient_kind, recipient_id, last_seq)
     VALUES ($1, $2, $3, 1)
     ON CONFLICT (tenant_id, recipient_kind, recipient_id) DO UPDATE SET last_seq = i.last_seq + 1
     RETURNING i.last_seq`,
    [m.tenantId, kind, m.to.id],
  );
  const next = Number(seq.rows[0]!.last_seq);
  const r = await tx.query<AgentMessageRow>(
    `INSERT INTO coordination.agent_messages
       (tenant_id, id, recipient_kind, recipient_id, seq, sender_kind, sender_id, body, content_type,
        correlation_id, reply_to, created_at, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING ${AGENT_MESSAGE_COLUMNS}`,
    [
      m.tenantId,
      m.id,
      kind,
      m.to.id,
      next,
      kindToDb(m.from.kind),
      m.from.id,
      m.body,
      m.contentType,
      m.correlationId,
      m.replyTo,
      m.createdAt.toISOString(),
      m.expiresAt?.toISOString() ?? null,
    ],
  );
  const message = toAgentMessage(r.rows[0]!, m.createdAt);
  await recordOutbox(tx, message, 'SENT', m.createdAt);
  return message;
}

export async function agentMessagesById(
  tx: Queryable,
  ids: readonly string[],
  now: Date,
): Promise<Map<string, AgentMessageModel>> {
  if (ids.length === 0) return new Map();
  const r = await tx.query<AgentMessageRow>(
    `SELECT ${AGENT_MESSAGE_COLUMNS} FROM coordination.agent_messages WHERE id = ANY($1::uuid[])`,
    [ids],
  );
  return new Map(r.rows.map((row) => [row.id, toAgentMessage(row, now)]));
}

export interface AckRequest {
  id: string;
  /** Only this address may acknowledge (the recipient); another recipient's message is NOT_FOUND. */
  recipient: AgentAddressModel;
  state: AckState;
  reason: string | null;
  at: Date;
}

/**
 * The one writer of acknowledgement states: locks the row, checks the move (states.ts; VERSION_CONFLICT with
 * `extensions.state` when illegal), sets the state and its timestamp, and records outbox + NOTIFY.
 */
export async function acknowledge(tx: Queryable, req: AckRequest): Promise<AgentMessageModel> {
  const r = await tx.query<AgentMessageRow>(
    `SELECT ${AGENT_MESSAGE_COLUMNS} FROM coordination.agent_messages
      WHERE id = $1 AND recipient_kind = $2 AND recipient_id = $3 FOR UPDATE`,
    [req.id, kindToDb(req.recipient.kind), req.recipient.id],
  );
  if (!r.rows[0]) throw notFound(`Agent message ${req.id} in your inbox`);
  const current = toAgentMessage(r.rows[0], req.at);
  const refusal = checkAck(current.state, req.state);
  if (refusal) {
    throw new AppError(
      'VERSION_CONFLICT',
      `Cannot acknowledge message ${current.id} as ${req.state}: ${refusal}.`,
      { reason: 'ILLEGAL_TRANSITION', state: current.state },
    );
  }
  const column = STATE_COLUMN[req.state];
  const u = await tx.query<AgentMessageRow>(
    `UPDATE coordination.agent_messages SET state = $2, ${column} = $3, failure_reason = $4
      WHERE id = $1 RETURNING ${AGENT_MESSAGE_COLUMNS}`,
    [current.id, req.state, req.at.toISOString(), req.state === 'FAILED' ? req.reason : null],
  );
  const next = toAgentMessage(u.rows[0]!, req.at);
  await recordOutbox(tx, next, req.state, req.at);
  return next;
}

/** An inbox's messages with seq > afterSeq in seq order (at most `limit`), each with whether it is still open. */
export async function inboxAfter(
  tx: Queryable,
  inbox: AgentAddressModel,
  afterSeq: number,
  limit: number,
  now: Date,
): Promise<{ seq: number; message: AgentMessageModel | null }[]> {
  // Terminal messages come back as bare seqs (no body): the stream needs them only to keep its sequence whole.
  const r = await tx.query<AgentMessageRow & { open: boolean }>(
    `SELECT ${AGENT_MESSAGE_COLUMNS}, ${openSql('$5')} AS open FROM coordination.agent_messages
      WHERE recipient_kind = $1 AND recipient_id = $2 AND seq > $3 ORDER BY seq LIMIT $4`,
    [kindToDb(inbox.kind), inbox.id, afterSeq, limit, now.toISOString()],
  );
  return r.rows.map((row) => ({ seq: Number(row.seq), message: row.open ? toAgentMessage(row, now) : null }));
}

/** A page of the inbox, oldest first, optionally only messages in `state` (as read at `now`). */
export async function inboxPage(
  tx: Queryable,
  inbox: AgentAddressModel,
  afterSeq: number,
  state: AgentMessageState | null,
  limit: number,
  now: Date,
): Promise<AgentMessageModel[]> {
  const r = await tx.query<AgentMessageRow>(
    `SELECT ${AGENT_MESSAGE_COLUMNS} FROM coordination.agent_messages
      WHERE recipient_kind = $1 AND recipient_id = $2 AND seq > $3
        AND ($4::text IS NULL OR ${effectiveStateSql('$6')} = $4::text)
      ORDER BY seq LIMIT $5`,
    [kindToDb(inbox.kind), inbox.id, afterSeq, state, limit, now.toISOString()],
  );
  return r.rows.map((row) => toAgentMessage(row, now));
}

export interface InboxPosition {
  /** The newest seq of the inbox (0 when nothing was ever sent to it). */
  lastSeq: number;
  /** The server-side cursor: the highest seq such that every message up to it is terminal at `now`. */
  cursorSeq: number;
}

export async function inboxPosition(
  tx: Queryable,
  inbox: AgentAddressModel,
  now: Date,
): Promise<InboxPosition> {
  const r = await tx.query<{ last_seq: number; first_open: number | null }>(
    `SELECT i.last_seq,
            (SELECT min(m.seq) FROM coordination.agent_messages m
              WHERE m.tenant_id = i.tenant_id AND m.recipient_kind = i.recipient_kind AND m.recipient_id = i.recipient_id
                AND ${openSql('$3', 'm.')}) AS first_open
       FROM coordination.agent_inboxes i WHERE i.recipient_kind = $1 AND i.recipient_id = $2`,
    [kindToDb(inbox.kind), inbox.id, now.toISOString()],
  );
  const row = r.rows[0];
  if (!row) return { lastSeq: 0, cursorSeq: 0 };
  const lastSeq = Number(row.last_seq);
  return { lastSeq, cursorSeq: row.first_open === null ? lastSeq : Number(row.first_open) - 1 };
}

/** Messages the sender sent, newest first, keyset (created_at at full precision, id); optional correlation id. */
export async function sentPage(
  tx: Queryable,
  sender: AgentAddressModel,
  correlationId: string | null,
  after: KeysetAfter | null,
  limit: number,
  now: Date,
): Promise<Keyed<AgentMessageModel>[]> {
  const r = await tx.query<AgentMessageRow & { created_key: string }>(
    `SELECT ${AGENT_MESSAGE_COLUMNS}, ${cursorTime('created_at')} AS created_key FROM coordination.agent_messages
      WHERE sender_kind = $1 AND sender_id = $2 AND ($3::text IS NULL OR correlation_id = $3::text)
        AND ($4::timestamptz IS NULL OR (created_at, id) < ($4::timestamptz, $5::uuid))
      ORDER BY created_at DESC, id DESC LIMIT $6`,
    [kindToDb(sender.kind), sender.id, correlationId, after?.value ?? null, after?.id ?? null, limit],
  );
  return r.rows.map((row) => ({
    node: toAgentMessage(row, now),
    key: { value: row.created_key, id: row.id },
  }));
}

/**
 * The SQL of intents. Every function takes a tenant-scoped transaction (RLS limits it to the caller's tenant).
 * `transition` is the only writer of an intent's state: it asks the state machine (machine.ts), then records the
 * event, the outbox row and the NOTIFY in the same transaction as the change.
 */
import { AppError, notFound, type AuthContext, type Queryable } from '@agentgraph/runtime';
import type { AuditOrigin } from '../emergency/models.js';
import { checkTransition, type IntentState, type TransitionSource } from './machine.js';
import {
  EVENT_COLUMNS,
  INTENT_COLUMNS,
  toIntent,
  toIntentEvent,
  type IntentEventModel,
  type IntentEventRow,
  type IntentModel,
  type IntentRow,
} from './models.js';

/** NOTIFY channel of intent changes. Payload: {tenantId, deviceId, intentId, n} only; listeners read rows. */
export const INTENTS_CHANNEL = 'coordination_intents';

export interface IntentNotification {
  tenantId: string;
  deviceId: string;
  intentId: string;
  /** The event number (1 = created). */
  n: number;
}

/**
 * The CTEs that record state change `n` of an intent in the statement that makes it: the event row (audit) and the
 * outbox row. `$1` tenant, `$2` intent, `$3` device, `$4` n, `$5` state, `$6` at, `$7` actor, `$8` reason, `$9`
 * origin (JSON text); the caller's statement adds `pg_notify` (delivered on commit). One round trip instead of four.
 */
const RECORD_EVENT_CTES = `
  e AS (
    INSERT INTO coordination.intent_events (tenant_id, intent_id, n, state, at, actor, reason, origin)
    VALUES ($1, $2, $4, $5, $6, $7, $8, $9::text::jsonb)
  ),
  o AS (
    INSERT INTO coordination.intent_outbox (tenant_id, intent_id, device_id, n, state) VALUES ($1, $2, $3, $4, $5)
  )`;

function eventParams(
  intent: { tenantId: string; id: string; deviceId: string },
  n: number,
  state: IntentState,
  at: Date,
  actor: string,
  reason: string | null,
  origin: AuditOrigin,
): unknown[] {
  const note: IntentNotification = {
    tenantId: intent.tenantId,
    deviceId: intent.deviceId,
    intentId: intent.id,
    n,
  };
  return [
    intent.tenantId,
    intent.id,
    intent.deviceId,
    n,
    state,
    at.toISOString(),
    actor,
    reason,
    JSON.stringify(origin),
    INTENTS_CHANNEL,
    JSON.stringify(note),
  ];
}

export interface NewIntent {
  tenantId: string;
  id: string;
  deviceId: string;
  requester: string;
  action: string;
  params: Record<string, unknown>;
  createdAt: Date;
  expiresAt: Date;
  executionTimeoutSeconds: number;
  /** Where the request came from (audit). */
  origin: AuditOrigin;
  /** Signs the intent once its sequence number is known. */
  sign(seq: number): Promise<string>;
}

/** Why an intent was not created: an emergency stop (the tenant's, or the deployment-wide one) is engaged. */
export interface IntentRefusal {
  stopped: { global: boolean };
}

/**
 * Numbers the intent with the device's next seq (the counter row's lock queues creators for one device, so
 * intents commit in seq order), signs it, stores it QUEUED and records the creation event, outbox row and NOTIFY.
 * Refused (nothing written, no seq taken) while an emergency stop visible to the tenant is engaged: checked in the
 * statement that takes the seq, so in the creating transaction. Two round trips: number, then store.
 */
export async function insertIntent(tx: Queryable, i: NewIntent): Promise<IntentModel | IntentRefusal> {
  const numbered = await tx.query<{ stops: number; global: boolean | null; last_seq: number | null }>(
    `WITH stop AS (
       SELECT count(*)::int AS stops, bool_or(tenant_id IS NULL) AS global
         FROM coordination.emergency_stops WHERE lifted_at IS NULL
     ),
     s AS (
       INSERT INTO coordination.device_intent_seqs AS s (tenant_id, device_id, last_seq)
       SELECT $1::uuid, $2::uuid, 1 FROM stop WHERE stop.stops = 0
       ON CONFLICT (tenant_id, device_id) DO UPDATE SET last_seq = s.last_seq + 1 RETURNING s.last_seq
     )
     SELECT stop.stops, stop.global, (SELECT last_seq FROM s) AS last_seq FROM stop`,
    [i.tenantId, i.deviceId],
  );
  const row = numbered.rows[0]!;
  if (Number(row.stops) > 0 || row.last_seq === null) return { stopped: { global: row.global === true } };
  const next = Number(row.last_seq);
  const jws = await i.sign(next);
  const r = await tx.query<IntentRow>(
    `WITH i AS (
       INSERT INTO coordination.intents
         (tenant_id, id, device_id, seq, requester, action, params, created_at, expires_at, execution_timeout_seconds, jws)
       VALUES ($1, $2, $3, $12, $7, $13, $14::text::jsonb, $6, $15, $16, $17) RETURNING ${INTENT_COLUMNS}
     ),${RECORD_EVENT_CTES}
     SELECT ${INTENT_COLUMNS}, pg_notify($10, $11)::text AS notified FROM i`,
    [
      ...eventParams(i, 1, 'QUEUED', i.createdAt, i.requester, null, i.origin),
      next,
      i.action,
      JSON.stringify(i.params),
      i.expiresAt.toISOString(),
      i.executionTimeoutSeconds,
      jws,
    ],
  );
  return toIntent(r.rows[0]!);
}

export interface TransitionRequest {
  intentId: string;
  to: IntentState;
  source: TransitionSource;
  /** A principal id, `device:<id>` or `system`. */
  actor: string;
  reason?: string | null;
  at: Date;
  /** Refuse unless the intent is still in this state (the sweeper's check-then-act). */
  expectedState?: IntentState;
  /** Where the request came from (audit); omitted for the server's own changes. */
  origin?: AuditOrigin;
}

/**
 * The one writer of intent states: locks the row, checks the move with the state machine (VERSION_CONFLICT with
 * `extensions.state` when illegal), updates it and records event + outbox + NOTIFY in this transaction.
 */
export async function transition(tx: Queryable, req: TransitionRequest): Promise<IntentModel> {
  const r = await tx.query<IntentRow>(
    `SELECT ${INTENT_COLUMNS} FROM coordination.intents WHERE id = $1 FOR UPDATE`,
    [req.intentId],
  );
  if (!r.rows[0]) throw notFound(`Intent ${req.intentId}`);
  const current = toIntent(r.rows[0]);
  const refusal =
    req.expectedState !== undefined && current.state !== req.expectedState
      ? `the intent is ${current.state}, no longer ${req.expectedState}`
      : checkTransition(current.state, req.to, req.source);
  if (refusal) {
    throw new AppError('VERSION_CONFLICT', `Cannot move intent ${current.id} to ${req.to}: ${refusal}.`, {
      reason: 'ILLEGAL_TRANSITION',
      state: current.state,
    });
  }
  const deadline =
    req.to === 'EXECUTING' ? new Date(req.at.getTime() + current.executionTimeoutSeconds * 1000) : null;
  // The row is locked: the change is state change number version + 1, recorded in the same statement.
  const n = current.version + 1;
  const u = await tx.query<IntentRow>(
    `WITH u AS (
       UPDATE coordination.intents
          SET state = $5, version = $4, execution_deadline = COALESCE($12::timestamptz, execution_deadline)
        WHERE id = $2 RETURNING ${INTENT_COLUMNS}
     ),${RECORD_EVENT_CTES}
     SELECT ${INTENT_COLUMNS}, pg_notify($10, $11)::text AS notified FROM u`,
    [
      ...eventParams(current, n, req.to, req.at, req.actor, req.reason ?? null, req.origin ?? {}),
      deadline?.toISOString() ?? null,
    ],
  );
  return toIntent(u.rows[0]!);
}

export async function intentsById(tx: Queryable, ids: readonly string[]): Promise<Map<string, IntentModel>> {
  if (ids.length === 0) return new Map();
  const r = await tx.query<IntentRow>(
    `SELECT ${INTENT_COLUMNS} FROM coordination.intents WHERE id = ANY($1::uuid[])`,
    [ids],
  );
  return new Map(r.rows.map((row) => [row.id, toIntent(row)]));
}

/** A device's intents with seq > afterSeq, in seq order, at most `limit`. */
export async function intentsAfter(
  tx: Queryable,
  deviceId: string,
  afterSeq: number,
  limit: number,
): Promise<IntentModel[]> {
  const r = await tx.query<IntentRow>(
    `SELECT ${INTENT_COLUMNS} FROM coordination.intents WHERE device_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
    [deviceId, afterSeq, limit],
  );
  return r.rows.map(toIntent);
}

/**
 * The same as `intentsAfter` in one statement outside any transaction (coordination.device_intents_as sets the
 * tenant for RLS itself): the device stream's read on every notification. Never call it inside a transaction.
 */
export async function intentsAfterOnce(
  db: Queryable,
  auth: Pick<AuthContext, 'tenantId' | 'principalId'>,
  deviceId: string,
  afterSeq: number,
  limit: number,
): Promise<IntentModel[]> {
  const r = await db.query<IntentRow>(
    `SELECT ${INTENT_COLUMNS} FROM coordination.device_intents_as($1, $2, $3, $4, $5)`,
    [auth.tenantId, auth.principalId, deviceId, afterSeq, limit],
  );
  return r.rows.map(toIntent);
}

/** The device's newest intent seq (0 when it has none yet). */
export async function lastIntentSeq(tx: Queryable, deviceId: string): Promise<number> {
  const r = await tx.query<{ last_seq: number }>(
    'SELECT last_seq FROM coordination.device_intent_seqs WHERE device_id = $1',
    [deviceId],
  );
  return r.rows[0] ? Number(r.rows[0].last_seq) : 0;
}

/** An intent's state changes with n > afterN, oldest first, at most `limit`. */
export async function eventsAfter(
  tx: Queryable,
  intentId: string,
  afterN: number,
  limit: number,
): Promise<IntentEventModel[]> {
  const r = await tx.query<IntentEventRow>(
    `SELECT ${EVENT_COLUMNS} FROM coordination.intent_events WHERE intent_id = $1 AND n > $2 ORDER BY n LIMIT $3`,
    [intentId, afterN, limit],
  );
  return r.rows.map(toIntentEvent);
}

/** Remembers a device report's jti; false when this device already sent it (a replay). */
export async function rememberReport(
  tx: Queryable,
  tenantId: string,
  deviceId: string,
  jti: string,
): Promise<boolean> {
  const r = await tx.query(
    `INSERT INTO coordination.intent_report_jtis (tenant_id, device_id, jti) VALUES ($1, $2, $3)
     ON CONFLICT DO NOTHING RETURNING jti`,
    [tenantId, deviceId, jti],
  );
  return r.rows.length === 1;
}

/**
 * The intent models resolvers pass around (codegen mappers, ../../codegen.json) and how rows become them. Plain
 * JSON (dates as ISO strings): mutation payloads are stored as the idempotent replay.
 */
import type { IntentState } from './machine.js';
import type { AuditOrigin } from '../emergency/models.js';

export interface IntentModel {
  id: string;
  tenantId: string;
  deviceId: string;
  /** Principal id (token `sub`) of the requester. */
  requester: string;
  action: string;
  /** JSON object text. */
  params: string;
  state: IntentState;
  seq: number;
  /** Number of recorded state changes (the newest event's n). */
  version: number;
  createdAt: string;
  expiresAt: string;
  executionTimeoutSeconds: number;
  executionDeadline: string | null;
  jws: string;
}

export interface IntentEventModel {
  intentId: string;
  n: number;
  state: IntentState;
  at: string;
  actor: string;
  reason: string | null;
  /** Where the change came from (audit; resolved for ADMIN and OWNER only). Empty for the sweeper's. */
  origin: AuditOrigin;
}

export interface IntentRow {
  tenant_id: string;
  id: string;
  device_id: string;
  requester: string;
  action: string;
  params: Record<string, unknown> | string;
  state: IntentState;
  seq: number;
  version: number;
  created_at: Date | string;
  expires_at: Date | string;
  execution_timeout_seconds: number;
  execution_deadline: Date | string | null;
  jws: string;
}

export interface IntentEventRow {
  intent_id: string;
  n: number;
  state: IntentState;
  at: Date | string;
  actor: string;
  reason: string | null;
  origin: AuditOrigin | string | null;
}

export const INTENT_COLUMNS =
  'tenant_id, id, device_id, requester, action, params, state, seq, version, created_at, expires_at, ' +
  'execution_timeout_seconds, execution_deadline, jws';
export const EVENT_COLUMNS = 'intent_id, n, state, at, actor, reason, origin';

function iso(value: Date | string): string {
  return (value instanceof Date ? value : new Date(value)).toISOString();
}

export function toIntent(row: IntentRow): IntentModel {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    deviceId: row.device_id,
    requester: row.requester,
    action: row.action,
    params: typeof row.params === 'string' ? row.params : JSON.stringify(row.params),
    state: row.state,
    seq: Number(row.seq),
    version: Number(row.version),
    createdAt: iso(row.created_at),
    expiresAt: iso(row.expires_at),
    executionTimeoutSeconds: Number(row.execution_timeout_seconds),
    executionDeadline: row.execution_deadline === null ? null : iso(row.execution_deadline),
    jws: row.jws,
  };
}

export function toIntentEvent(row: IntentEventRow): IntentEventModel {
  return {
    intentId: row.intent_id,
    n: Number(row.n),
    state: row.state,
    at: iso(row.at),
    actor: row.actor,
    reason: row.reason,
    origin: (typeof row.origin === 'string' ? JSON.parse(row.origin) : row.origin) ?? {},
  };
}

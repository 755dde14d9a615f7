/**
 * The SQL of the emergency stop. Tenant functions take the tenant's transaction (RLS: a tenant reads its own stops
 * and the global one, and writes only its own); the global functions take the owner connection (operators' CLI).
 * Every engage and lift writes an append-only event and notifies `coordination_emergency` on commit.
 */
import type { Queryable } from '@agentgraph/runtime';
import { EMERGENCY_CHANNEL } from './watch.js';
import type {
  AuditOrigin,
  EmergencyEventModel,
  EmergencyScope,
  EmergencyStatusModel,
  EmergencyStopModel,
} from './models.js';

interface StopRow {
  tenant_id: string | null;
  reason: string;
  engaged_at: Date | string;
  engaged_by: string;
}

const iso = (v: Date | string): string => new Date(v).toISOString();

function toStop(row: StopRow): EmergencyStopModel {
  return {
    scope: row.tenant_id === null ? 'GLOBAL' : 'TENANT',
    reason: row.reason,
    engagedAt: iso(row.engaged_at),
    engagedBy: row.engaged_by,
  };
}

/** The engaged stops visible to the tenant (its own, the global one). */
export async function emergencyStatus(tx: Queryable): Promise<EmergencyStatusModel> {
  const r = await tx.query<StopRow>(
    `SELECT tenant_id, reason, engaged_at, engaged_by FROM coordination.emergency_stops WHERE lifted_at IS NULL`,
  );
  const tenant = r.rows.find((row) => row.tenant_id !== null);
  const global = r.rows.find((row) => row.tenant_id === null);
  return {
    engaged: r.rows.length > 0,
    tenant: tenant ? toStop(tenant) : null,
    global: global ? toStop(global) : null,
  };
}

async function recordEvent(
  tx: Queryable,
  tenantId: string | null,
  action: 'ENGAGED' | 'LIFTED',
  actor: string,
  at: Date,
  reason: string | null,
  origin: AuditOrigin,
): Promise<void> {
  await tx.query(
    `INSERT INTO coordination.emergency_events (tenant_id, action, actor, at, reason, origin)
     VALUES ($1, $2, $3, $4, $5, $6::text::jsonb)`,
    [tenantId, action, actor, at.toISOString(), reason, JSON.stringify(origin)],
  );
  await tx.query('SELECT pg_notify($1, $2)', [EMERGENCY_CHANNEL, JSON.stringify({ tenantId })]);
}

export interface EmergencyChange {
  /** The tenant, or null for the deployment-wide stop (owner connection only). */
  tenantId: string | null;
  actor: string;
  at: Date;
  origin: AuditOrigin;
}

/** Engages the stop; false when it was engaged already (nothing is written then). */
export async function engageStop(tx: Queryable, c: EmergencyChange & { reason: string }): Promise<boolean> {
  // Serialise engage/lift of one scope: the partial unique index would otherwise turn a race into an error.
  await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`emergency:${c.tenantId ?? 'global'}`]);
  const r = await tx.query(
    `INSERT INTO coordination.emergency_stops (tenant_id, reason, engaged_by, engaged_at)
     SELECT $1, $2, $3, $4
      WHERE NOT EXISTS (SELECT 1 FROM coordination.emergency_stops
                         WHERE lifted_at IS NULL AND tenant_id IS NOT DISTINCT FROM $1::uuid)`,
    [c.tenantId, c.reason, c.actor, c.at.toISOString()],
  );
  if ((r.rowCount ?? 0) === 0) return false;
  await recordEvent(tx, c.tenantId, 'ENGAGED', c.actor, c.at, c.reason, c.origin);
  return true;
}

/** Lifts the stop; false when it was not engaged. */
export async function liftStop(tx: Queryable, c: EmergencyChange): Promise<boolean> {
  await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`emergency:${c.tenantId ?? 'global'}`]);
  const r = await tx.query(
    `UPDATE coordination.emergency_stops SET lifted_by = $2, lifted_at = $3
      WHERE lifted_at IS NULL AND tenant_id IS NOT DISTINCT FROM $1::uuid`,
    [c.tenantId, c.actor, c.at.toISOString()],
  );
  if ((r.rowCount ?? 0) === 0) return false;
  await recordEvent(tx, c.tenantId, 'LIFTED', c.actor, c.at, null, c.origin);
  return true;
}

interface EventRow {
  id: string | number;
  tenant_id: string | null;
  action: 'ENGAGED' | 'LIFTED';
  actor: string;
  at: Date | string;
  reason: string | null;
  origin: AuditOrigin | string;
}

/** Events visible to the tenant (its own and global ones), newest first, with id < before. */
export async function emergencyEvents(
  tx: Queryable,
  before: number | null,
  limit: number,
): Promise<EmergencyEventModel[]> {
  const r = await tx.query<EventRow>(
    `SELECT id, tenant_id, action, actor, at, reason, origin FROM coordination.emergency_events
      WHERE ($1::bigint IS NULL OR id < $1) ORDER BY id DESC LIMIT $2`,
    [before, limit],
  );
  return r.rows.map((row) => ({
    id: String(row.id),
    action: row.action,
    scope: (row.tenant_id === null ? 'GLOBAL' : 'TENANT') as EmergencyScope,
    actor: row.actor,
    at: iso(row.at),
    reason: row.reason,
    origin: typeof row.origin === 'string' ? (JSON.parse(row.origin) as AuditOrigin) : row.origin,
  }));
}

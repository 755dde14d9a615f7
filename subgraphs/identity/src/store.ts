/**
 * SQL of the identity subgraph. Every function here runs inside a tenant-scoped transaction (withTenant or
 * idempotentMutation), so Row-Level Security confines it to the caller's tenant whatever the arguments say.
 */
import type { Queryable, SortKey } from '@agentgraph/runtime';
import {
  iso,
  toDevice,
  toTenant,
  toUser,
  type DeviceModel,
  type DeviceRow,
  type MembershipModel,
  type Role,
  type TenantModel,
  type TenantRow,
  type UserModel,
  type UserRow,
  type ViewerModel,
} from './models.js';

/** Full-precision (microsecond) UTC text of a timestamp: keyset cursors must not lose precision. */
const cursorTime = (column: string) =>
  `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

export interface Keyed<T> {
  node: T;
  key: SortKey;
}

/** [created_at text, uuid] as written by cursorTime; anything else cannot have come from these lists. */
export type TimeKey = readonly [string, string];

const DEVICE_COLUMNS =
  'd.id, d.tenant_id, d.owner_id, d.name, d.platform, d.status, d.remote_actions_enabled, d.created_at';

export async function findTenant(tx: Queryable, id: string): Promise<TenantModel | null> {
  const r = await tx.query<TenantRow>('SELECT id, name, created_at FROM identity.tenants WHERE id = $1', [
    id,
  ]);
  return r.rows[0] ? toTenant(r.rows[0]) : null;
}

/** Users by id (those RLS lets the caller see), keyed by id. Ids must be lower-case UUIDs. */
export async function findUsers(tx: Queryable, ids: readonly string[]): Promise<Map<string, UserModel>> {
  const r = await tx.query<UserRow>(
    'SELECT id, email, display_name, created_at FROM identity.users WHERE id = ANY($1::uuid[])',
    [ids],
  );
  return new Map(r.rows.map((row) => [row.id, toUser(row)]));
}

/** Devices of the current tenant by id, keyed by id. Ids must be lower-case UUIDs. */
export async function findDevices(tx: Queryable, ids: readonly string[]): Promise<Map<string, DeviceModel>> {
  const r = await tx.query<DeviceRow>(
    `SELECT ${DEVICE_COLUMNS} FROM identity.devices d WHERE d.id = ANY($1::uuid[])`,
    [ids],
  );
  return new Map(r.rows.map((row) => [row.id, toDevice(row)]));
}

/** The user's role in the current tenant, or null when they are not (or no longer) a member. */
export async function roleOf(tx: Queryable, userId: string): Promise<Role | null> {
  const r = await tx.query<{ role: Role }>(
    'SELECT role FROM identity.memberships WHERE user_id = $1 AND tenant_id = runtime.current_tenant()',
    [userId],
  );
  return r.rows[0]?.role ?? null;
}

export async function viewer(tx: Queryable, userId: string): Promise<ViewerModel | null> {
  const r = await tx.query<
    UserRow & { role: Role; tenant_id: string; tenant_name: string; tenant_created_at: Date | string }
  >(
    `SELECT m.role, u.id, u.email, u.display_name, u.created_at,
            t.id AS tenant_id, t.name AS tenant_name, t.created_at AS tenant_created_at
       FROM identity.memberships m
       JOIN identity.users u ON u.id = m.user_id
       JOIN identity.tenants t ON t.id = m.tenant_id
      WHERE m.user_id = $1 AND m.tenant_id = runtime.current_tenant()`,
    [userId],
  );
  const row = r.rows[0];
  if (!row) return null;
  return {
    role: row.role,
    user: toUser(row),
    tenant: toTenant({ id: row.tenant_id, name: row.tenant_name, created_at: row.tenant_created_at }),
  };
}

export async function listMembers(
  tx: Queryable,
  tenantId: string,
  limit: number,
  after: TimeKey | null,
): Promise<Keyed<MembershipModel>[]> {
  const r = await tx.query<UserRow & { role: Role; member_since: Date | string; cursor_time: string }>(
    `SELECT m.role, m.created_at AS member_since, ${cursorTime('m.created_at')} AS cursor_time,
            u.id, u.email, u.display_name, u.created_at
       FROM identity.memberships m JOIN identity.users u ON u.id = m.user_id
      WHERE m.tenant_id = $1
        AND ($2::timestamptz IS NULL OR (m.created_at, m.user_id) > ($2::timestamptz, $3::uuid))
      ORDER BY m.created_at, m.user_id
      LIMIT $4`,
    [tenantId, after?.[0] ?? null, after?.[1] ?? null, limit],
  );
  return r.rows.map((row) => ({
    node: { tenantId, user: toUser(row), role: row.role, createdAt: iso(row.member_since) },
    key: [row.cursor_time, row.id],
  }));
}

export async function listDevices(
  tx: Queryable,
  tenantId: string,
  limit: number,
  after: TimeKey | null,
): Promise<Keyed<DeviceModel>[]> {
  const r = await tx.query<DeviceRow & { cursor_time: string }>(
    `SELECT ${DEVICE_COLUMNS}, ${cursorTime('d.created_at')} AS cursor_time
       FROM identity.devices d
      WHERE d.tenant_id = $1
        AND ($2::timestamptz IS NULL OR (d.created_at, d.id) > ($2::timestamptz, $3::uuid))
      ORDER BY d.created_at, d.id
      LIMIT $4`,
    [tenantId, after?.[0] ?? null, after?.[1] ?? null, limit],
  );
  return r.rows.map((row) => ({ node: toDevice(row), key: [row.cursor_time, row.id] }));
}

export async function insertDevice(
  tx: Queryable,
  tenantId: string,
  ownerId: string,
  input: { name: string; platform: string },
): Promise<DeviceModel> {
  const r = await tx.query<DeviceRow>(
    `INSERT INTO identity.devices AS d (tenant_id, owner_id, name, platform) VALUES ($1, $2, $3, $4)
     RETURNING ${DEVICE_COLUMNS}`,
    [tenantId, ownerId, input.name, input.platform],
  );
  return toDevice(r.rows[0]!);
}

export async function updateDisplayName(
  tx: Queryable,
  userId: string,
  displayName: string,
): Promise<UserModel | null> {
  const r = await tx.query<UserRow>(
    `UPDATE identity.users SET display_name = $2 WHERE id = $1
     RETURNING id, email, display_name, created_at`,
    [userId, displayName],
  );
  return r.rows[0] ? toUser(r.rows[0]) : null;
}

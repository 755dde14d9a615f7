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
  'd.id, d.tenant_id, d.owner_id, d.name, d.platform, d.status, d.remote_actions_enabled, d.created_at, ' +
  'd.enrolled_at, d.revoked_at, d.key_thumbprint, d.public_jwk';

const MEMBER_COLUMNS =
  'm.tenant_id, m.role, m.created_at AS member_since, u.id, u.email, u.display_name, u.created_at';

type MemberRow = UserRow & { tenant_id: string; role: Role; member_since: Date | string };

const toMembership = (row: MemberRow): MembershipModel => ({
  tenantId: row.tenant_id,
  user: toUser(row),
  role: row.role,
  createdAt: iso(row.member_since),
});

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
  const r = await tx.query<MemberRow & { cursor_time: string }>(
    `SELECT ${MEMBER_COLUMNS}, ${cursorTime('m.created_at')} AS cursor_time
       FROM identity.memberships m JOIN identity.users u ON u.id = m.user_id
      WHERE m.tenant_id = $1
        AND ($2::timestamptz IS NULL OR (m.created_at, m.user_id) > ($2::timestamptz, $3::uuid))
      ORDER BY m.created_at, m.user_id
      LIMIT $4`,
    [tenantId, after?.[0] ?? null, after?.[1] ?? null, limit],
  );
  return r.rows.map((row) => ({ node: toMembership(row), key: [row.cursor_time, row.id] }));
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

/** The transaction's clock (PostgreSQL's now(): the same instant every statement of the transaction sees). */
export async function transactionTime(tx: Queryable): Promise<Date> {
  const r = await tx.query<{ now: Date | string }>('SELECT now() AS now');
  return new Date(r.rows[0]!.now);
}

/** A device of the current tenant, locked for the rest of the transaction (concurrent writes queue behind it). */
export async function lockDevice(tx: Queryable, id: string): Promise<DeviceModel | null> {
  const r = await tx.query<DeviceRow>(
    `SELECT ${DEVICE_COLUMNS} FROM identity.devices d WHERE d.id = $1 FOR UPDATE`,
    [id],
  );
  return r.rows[0] ? toDevice(r.rows[0]) : null;
}

/** REVOKED from now on; a device that already is keeps its first revocation time. */
export async function markDeviceRevoked(tx: Queryable, id: string): Promise<DeviceModel> {
  const r = await tx.query<DeviceRow>(
    `UPDATE identity.devices AS d
        SET status = 'REVOKED', revoked_at = coalesce(d.revoked_at, now())
      WHERE d.id = $1
     RETURNING ${DEVICE_COLUMNS}`,
    [id],
  );
  return toDevice(r.rows[0]!);
}

export async function renameDevice(tx: Queryable, id: string, name: string): Promise<DeviceModel> {
  const r = await tx.query<DeviceRow>(
    `UPDATE identity.devices AS d SET name = $2 WHERE d.id = $1 RETURNING ${DEVICE_COLUMNS}`,
    [id, name],
  );
  return toDevice(r.rows[0]!);
}

export async function setRemoteActionsEnabled(
  tx: Queryable,
  id: string,
  enabled: boolean,
): Promise<DeviceModel> {
  const r = await tx.query<DeviceRow>(
    `UPDATE identity.devices AS d SET remote_actions_enabled = $2 WHERE d.id = $1 RETURNING ${DEVICE_COLUMNS}`,
    [id, enabled],
  );
  return toDevice(r.rows[0]!);
}

/**
 * Deletes the OAuth state (refresh tokens, sessions, grants of oidc-provider) of the device's grants: no token can be
 * refreshed or issued from them any more. Returns how many rows went.
 */
export async function deleteDeviceGrantState(tx: Queryable, deviceId: string): Promise<number> {
  const r = await tx.query(
    `DELETE FROM identity.oauth_store
      WHERE grant_id IN (SELECT g.grant_id FROM identity.oauth_grants g WHERE g.device_id = $1)`,
    [deviceId],
  );
  return r.rowCount;
}

/** The same for every grant of a member of the current tenant (their sign-ins and their devices). */
export async function deleteMemberGrantState(tx: Queryable, userId: string): Promise<number> {
  const r = await tx.query(
    `DELETE FROM identity.oauth_store
      WHERE grant_id IN (
        SELECT g.grant_id FROM identity.oauth_grants g
         WHERE g.user_id = $1 AND g.tenant_id = runtime.current_tenant())`,
    [userId],
  );
  return r.rowCount;
}

/** Id of the user with this e-mail (any tenant; users are global), or null. */
export async function userIdByEmail(tx: Queryable, email: string): Promise<string | null> {
  const r = await tx.query<{ id: string | null }>('SELECT identity.user_id_by_email($1) AS id', [email]);
  return r.rows[0]?.id ?? null;
}

/** A member of the current tenant with their user, or null. */
export async function findMembership(tx: Queryable, userId: string): Promise<MembershipModel | null> {
  const r = await tx.query<MemberRow>(
    `SELECT ${MEMBER_COLUMNS}
       FROM identity.memberships m JOIN identity.users u ON u.id = m.user_id
      WHERE m.user_id = $1 AND m.tenant_id = runtime.current_tenant()`,
    [userId],
  );
  return r.rows[0] ? toMembership(r.rows[0]) : null;
}

/**
 * Serialises the membership changes of one tenant (add, change role, remove) until the transaction ends, so two
 * owners demoting each other at once cannot both see "another owner is left".
 */
export async function lockMemberships(tx: Queryable, tenantId: string): Promise<void> {
  await tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [
    `identity.memberships:${tenantId}`,
  ]);
}

export async function ownerCount(tx: Queryable): Promise<number> {
  const r = await tx.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM identity.memberships WHERE tenant_id = runtime.current_tenant() AND role = 'OWNER'",
  );
  return r.rows[0]!.n;
}

export async function insertMembership(
  tx: Queryable,
  tenantId: string,
  userId: string,
  role: Role,
): Promise<MembershipModel> {
  await tx.query('INSERT INTO identity.memberships (tenant_id, user_id, role) VALUES ($1, $2, $3)', [
    tenantId,
    userId,
    role,
  ]);
  return (await findMembership(tx, userId))!;
}

export async function updateMemberRole(tx: Queryable, userId: string, role: Role): Promise<MembershipModel> {
  await tx.query(
    'UPDATE identity.memberships SET role = $2 WHERE user_id = $1 AND tenant_id = runtime.current_tenant()',
    [userId, role],
  );
  return (await findMembership(tx, userId))!;
}

/**
 * Revokes every device the member owns and hands it to `newOwnerId` (a device's owner must be a member). Returns the
 * ids of the devices that were not revoked before.
 */
export async function revokeAndHandOverDevices(
  tx: Queryable,
  fromUserId: string,
  newOwnerId: string,
): Promise<string[]> {
  const r = await tx.query<{ id: string; was_revoked: boolean }>(
    `WITH owned AS (
       SELECT id, status = 'REVOKED' AS was_revoked FROM identity.devices
        WHERE owner_id = $1 AND tenant_id = runtime.current_tenant()
        FOR UPDATE)
     UPDATE identity.devices AS d
        SET status = 'REVOKED', revoked_at = coalesce(d.revoked_at, now()), owner_id = $2
       FROM owned
      WHERE d.id = owned.id
     RETURNING d.id, owned.was_revoked`,
    [fromUserId, newOwnerId],
  );
  return r.rows.filter((row) => !row.was_revoked).map((row) => row.id);
}

export async function deleteMembership(tx: Queryable, userId: string): Promise<void> {
  await tx.query(
    'DELETE FROM identity.memberships WHERE user_id = $1 AND tenant_id = runtime.current_tenant()',
    [userId],
  );
}

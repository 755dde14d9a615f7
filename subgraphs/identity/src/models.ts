/**
 * What the resolvers pass around (codegen mappers, see ../codegen.json), and the row → model conversions.
 * Plain JSON (dates as ISO strings) because mutation payloads are stored as the idempotent response and
 * replayed verbatim.
 */
import type { Role } from '@agentgraph/runtime';

export { ROLES, type Role } from '@agentgraph/runtime';
export type DeviceStatus = 'PENDING' | 'ENROLLED' | 'REVOKED';
export const PLATFORMS = ['windows', 'macos', 'linux'] as const;
export type Platform = (typeof PLATFORMS)[number];

export interface TenantModel {
  id: string;
  name: string;
  createdAt: string;
}

export interface UserModel {
  id: string;
  email: string;
  displayName: string;
  createdAt: string;
}

export interface MembershipModel {
  tenantId: string;
  /** Loaded with the membership (one query per page). */
  user: UserModel;
  role: Role;
  createdAt: string;
}

export interface DeviceModel {
  id: string;
  tenantId: string;
  ownerId: string;
  name: string;
  platform: string;
  status: DeviceStatus;
  remoteActionsEnabled: boolean;
  createdAt: string;
  /** Null while PENDING. */
  enrolledAt: string | null;
  /** Null unless REVOKED. */
  revokedAt: string | null;
  /** RFC 7638 thumbprint of the device's public key; null while PENDING. */
  keyThumbprint: string | null;
  /** The enrolled public JWK as JSON text (public data: other subgraphs verify device signatures with it). */
  publicJwk?: string | null;
}

/** The caller, resolved in one query. */
export interface ViewerModel {
  user: UserModel;
  tenant: TenantModel;
  role: Role;
}

export interface TenantRow {
  id: string;
  name: string;
  created_at: Date | string;
}

export interface UserRow {
  id: string;
  email: string;
  display_name: string;
  created_at: Date | string;
}

export interface DeviceRow {
  id: string;
  tenant_id: string;
  owner_id: string;
  name: string;
  platform: string;
  status: DeviceStatus;
  remote_actions_enabled: boolean;
  created_at: Date | string;
  enrolled_at: Date | string | null;
  revoked_at: Date | string | null;
  key_thumbprint: string | null;
  /** jsonb: an object from pg, possibly text from other drivers; absent in rows read without it. */
  public_jwk?: Record<string, unknown> | string | null;
}

export function iso(value: Date | string): string {
  return (value instanceof Date ? value : new Date(value)).toISOString();
}

export function isoOrNull(value: Date | string | null): string | null {
  return value === null ? null : iso(value);
}

export function toTenant(row: TenantRow): TenantModel {
  return { id: row.id, name: row.name, createdAt: iso(row.created_at) };
}

export function toUser(row: UserRow): UserModel {
  return { id: row.id, email: row.email, displayName: row.display_name, createdAt: iso(row.created_at) };
}

export function toDevice(row: DeviceRow): DeviceModel {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    ownerId: row.owner_id,
    name: row.name,
    platform: row.platform,
    status: row.status,
    remoteActionsEnabled: row.remote_actions_enabled,
    createdAt: iso(row.created_at),
    enrolledAt: isoOrNull(row.enrolled_at),
    revokedAt: isoOrNull(row.revoked_at),
    keyThumbprint: row.key_thumbprint,
    publicJwk:
      row.public_jwk == null
        ? null
        : typeof row.public_jwk === 'string'
          ? row.public_jwk
          : JSON.stringify(row.public_jwk),
  };
}

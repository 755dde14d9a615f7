/**
 * What identity adds to every access token it issues through oidc-provider: the tenant, the member's *current* role,
 * the grant id and, for an enrolled device, the device id. Read fresh from identity.grant_context at each issuance,
 * so a demoted member's next token carries the lower role and a removed member or a revoked device gets none.
 */
import type { Queryable } from '@agentgraph/runtime';
import { errors } from 'oidc-provider';
import type { Role } from '../models.js';

export interface GrantContext {
  tenantId: string;
  userId: string;
  deviceId: string | null;
  clientId: string;
  role: Role;
  deviceStatus: string | null;
}

export async function grantContext(db: Queryable, grantId: string): Promise<GrantContext | null> {
  const r = await db.query<{
    tenant_id: string;
    user_id: string;
    device_id: string | null;
    client_id: string;
    role: Role;
    device_status: string | null;
  }>('SELECT * FROM identity.grant_context($1)', [grantId]);
  const row = r.rows[0];
  if (!row) return null;
  return {
    tenantId: row.tenant_id,
    userId: row.user_id,
    deviceId: row.device_id,
    clientId: row.client_id,
    role: row.role,
    deviceStatus: row.device_status,
  };
}

/** The grant's context if tokens may still be issued from it; throws invalid_grant otherwise. */
export async function usableGrantContext(db: Queryable, grantId: string | undefined): Promise<GrantContext> {
  if (!grantId) throw new errors.InvalidGrant('the token has no grant');
  const ctx = await grantContext(db, grantId);
  if (!ctx) throw new errors.InvalidGrant('the membership behind this grant no longer exists');
  if (ctx.deviceId && ctx.deviceStatus !== 'ENROLLED') {
    throw new errors.InvalidGrant('the device behind this grant is revoked');
  }
  return ctx;
}

export async function extraAccessTokenClaims(
  db: Queryable,
  token: { kind: string; grantId?: string },
): Promise<Record<string, unknown> | undefined> {
  if (token.kind !== 'AccessToken') return undefined;
  const g = await usableGrantContext(db, token.grantId);
  return {
    tid: g.tenantId,
    role: g.role,
    gid: token.grantId,
    ...(g.deviceId ? { did: g.deviceId } : {}),
  };
}

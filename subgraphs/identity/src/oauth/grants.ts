/**
 * Creating an OAuth grant for a member: the oidc-provider Grant (scopes it covers) plus identity.oauth_grants (which
 * tenant, user and device it acts for), in the caller's tenant-scoped transaction so both commit together. Used by the
 * sign-in interaction (authorization code + PKCE) and by device approval.
 */
import type { Queryable } from '@agentgraph/runtime';
import { API_RESOURCE, API_SCOPES, OIDC_SCOPES } from './constants.js';
import type { OAuthService } from './service.js';
import { withOAuthTransaction } from './store-context.js';

export interface GrantRequest {
  tenantId: string;
  userId: string;
  clientId: string;
  /** Requested scopes; anything that is not ours is ignored. */
  scopes: readonly string[];
  deviceId?: string;
}

export function grantableScopes(scopes: readonly string[]): { oidc: string[]; api: string[] } {
  return {
    oidc: scopes.filter((s) => (OIDC_SCOPES as readonly string[]).includes(s)),
    api: scopes.filter((s) => (API_SCOPES as readonly string[]).includes(s)),
  };
}

export async function createGrant(oauth: OAuthService, tx: Queryable, g: GrantRequest): Promise<string> {
  await oauth.ready;
  const { provider } = oauth;
  return withOAuthTransaction(tx, async () => {
    const grant = new provider.Grant({ accountId: g.userId, clientId: g.clientId });
    const { oidc, api } = grantableScopes(g.scopes);
    if (oidc.length) grant.addOIDCScope(oidc.join(' '));
    if (api.length) grant.addResourceScope(API_RESOURCE, api.join(' '));
    const grantId = await grant.save();
    await tx.query(
      `INSERT INTO identity.oauth_grants (grant_id, tenant_id, user_id, device_id, client_id)
       VALUES ($1, $2, $3, $4, $5)`,
      [grantId, g.tenantId, g.userId, g.deviceId ?? null, g.clientId],
    );
    return grantId;
  });
}

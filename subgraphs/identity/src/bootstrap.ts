/**
 * Creating the first tenant: tenant + user + OWNER membership in one transaction, through the SECURITY DEFINER
 * function identity.bootstrap_tenant (the app role cannot insert tenants, users or memberships itself).
 * Used by the admin CLI (src/cli.ts) and, in development mode only, by `npm start` (ensureDevelopmentTenant).
 */
import type { Database, SubgraphDeps } from '@agentgraph/runtime';
import { BootstrapInput, parseInput } from './input.js';

export interface BootstrapTenantInput {
  tenantName: string;
  email: string;
  displayName: string;
}

export interface BootstrapTenantResult {
  tenantId: string;
  userId: string;
  /** false when the user already owned a tenant of that name (nothing was written). */
  created: boolean;
}

/**
 * Idempotent per (e-mail, tenant name): running it again returns the same ids. An existing user (same e-mail)
 * becomes the owner of the new tenant and keeps their display name. Throws BAD_USER_INPUT on invalid input.
 */
export async function bootstrapTenant(
  db: Database,
  input: BootstrapTenantInput,
): Promise<BootstrapTenantResult> {
  const { tenantName, email, displayName } = parseInput(BootstrapInput, input, '');
  return db.transaction(async (tx) => {
    const r = await tx.query<{ tenant_id: string; user_id: string; created: boolean }>(
      'SELECT tenant_id, user_id, created FROM identity.bootstrap_tenant($1, $2, $3)',
      [tenantName, email, displayName],
    );
    const row = r.rows[0]!;
    return { tenantId: row.tenant_id, userId: row.user_id, created: row.created };
  });
}

export const DEVELOPMENT_TENANT = {
  tenantName: 'Development',
  email: 'dev@localhost',
  displayName: 'Developer',
};

export interface DevelopmentTenant {
  tenantId: string;
  userId: string;
  email: string;
  /** true on the first start (the tenant was just created). */
  created: boolean;
}

/**
 * Development mode only (`npm start`): on a database without tenants, creates tenant "Development" owned by
 * dev@localhost. On later starts returns that owner's first tenant if dev@localhost still exists, else null
 * (someone bootstrapped their own tenants; nothing to print). Tokens: POST /dev/token {"email":"dev@localhost"}.
 */
export async function ensureDevelopmentTenant(
  deps: Pick<SubgraphDeps, 'config' | 'db' | 'log'>,
): Promise<DevelopmentTenant | null> {
  const { config, db, log } = deps;
  if (config.mode !== 'development') {
    throw new Error(
      'ensureDevelopmentTenant runs in development mode only; use `npm run admin -- bootstrap` in production.',
    );
  }
  const any = await db.query<{ has: boolean }>('SELECT identity.has_tenants() AS has');
  if (!any.rows[0]?.has) {
    const r = await bootstrapTenant(db, DEVELOPMENT_TENANT);
    log.info('development tenant created', {
      tenantId: r.tenantId,
      userId: r.userId,
      email: DEVELOPMENT_TENANT.email,
    });
    return { tenantId: r.tenantId, userId: r.userId, email: DEVELOPMENT_TENANT.email, created: r.created };
  }
  const m = await db.query<{ tenant_id: string; user_id: string; role: string }>(
    'SELECT tenant_id, user_id, role FROM identity.memberships_by_email($1)',
    [DEVELOPMENT_TENANT.email],
  );
  const owner = m.rows.find((row) => row.role === 'OWNER');
  return owner
    ? { tenantId: owner.tenant_id, userId: owner.user_id, email: DEVELOPMENT_TENANT.email, created: false }
    : null;
}

/**
 * Creating the first tenant: tenant + user + OWNER membership in one transaction, through the SECURITY DEFINER
 * function identity.bootstrap_tenant, on the owner's (migrating role's) connection: identity's own role can neither
 * insert tenants, users or memberships nor call that function (migration 009).
 * Used by the admin CLI (src/cli.ts) and, in development mode only, by `npm start` (ensureDevelopmentTenant), which
 * also gives dev@localhost a random password and writes it to <DATA_DIR>/dev-credentials.json (mode 0600).
 * There is no built-in default password anywhere.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Config, Database, Queryable, SubgraphDeps } from '@agentgraph/runtime';
import { BootstrapInput, parseInput } from './input.js';
import { hashPassword } from './passwords.js';

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
  db: Pick<Database, 'transaction'>,
  input: BootstrapTenantInput,
  /** Runs in the same transaction after the tenant exists (the CLI sets the owner's password here). */
  andThen?: (tx: Queryable, result: BootstrapTenantResult) => Promise<void>,
): Promise<BootstrapTenantResult> {
  const { tenantName, email, displayName } = parseInput(BootstrapInput, input, '');
  return db.transaction(async (tx) => {
    const r = await tx.query<{ tenant_id: string; user_id: string; created: boolean }>(
      'SELECT tenant_id, user_id, created FROM identity.bootstrap_tenant($1, $2, $3)',
      [tenantName, email, displayName],
    );
    const row = r.rows[0]!;
    const result = { tenantId: row.tenant_id, userId: row.user_id, created: row.created };
    await andThen?.(tx, result);
    return result;
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
  /**
   * The JSON file holding dev@localhost's password ({email, password, signInUrl}); null when the password was set
   * some other way (the admin CLI) and no file from this data folder has it.
   */
  credentialsFile: string | null;
}

export const DEVELOPMENT_CREDENTIALS_FILE = 'dev-credentials.json';

/** Temporary folders holding in-memory databases' credentials: removed when the process exits, like the data. */
const temporaryFolders = new Set<string>();
function removeTemporaryFolders(): void {
  for (const dir of temporaryFolders) rmSync(dir, { recursive: true, force: true });
}

/**
 * <DATA_DIR>/dev-credentials.json; with the in-memory database (DATA_DIR=memory://) a fresh temporary folder
 * (created safely with mkdtemp), removed when the process exits.
 */
export function developmentCredentialsPath(config: Pick<Config, 'dataDir'>): string {
  if (config.dataDir !== resolve('memory://')) return join(config.dataDir, DEVELOPMENT_CREDENTIALS_FILE);
  const dir = mkdtempSync(join(tmpdir(), 'agentgraph-dev-'));
  if (temporaryFolders.size === 0) process.once('exit', removeTemporaryFolders);
  temporaryFolders.add(dir);
  return join(dir, DEVELOPMENT_CREDENTIALS_FILE);
}

/**
 * Development mode only (`npm start`): on a database without tenants, creates tenant "Development" owned by
 * dev@localhost. On later starts returns that owner's first tenant if dev@localhost still exists, else null
 * (someone bootstrapped their own tenants; nothing to print). Whenever dev@localhost has no password yet it gets a
 * random one, written to <DATA_DIR>/dev-credentials.json (mode 0600); the log names the file, never the password.
 * Tokens: sign in at /signin, or POST /dev/token {"email":"dev@localhost"}.
 */
export async function ensureDevelopmentTenant(
  deps: Pick<SubgraphDeps, 'config' | 'log'> & {
    /** The owner's (migrating role's) connection: identity's own role may not create tenants. */
    owner: Queryable & Pick<Database, 'transaction'>;
  },
): Promise<DevelopmentTenant | null> {
  const { config, owner: db, log } = deps;
  if (config.mode !== 'development') {
    throw new Error(
      'ensureDevelopmentTenant runs in development mode only; use `npm run admin -- bootstrap` in production.',
    );
  }
  const any = await db.query<{ has: boolean }>('SELECT identity.has_tenants() AS has');
  let owner: { tenantId: string; userId: string; created: boolean } | null = null;
  if (!any.rows[0]?.has) {
    const r = await bootstrapTenant(db, DEVELOPMENT_TENANT);
    log.info('development tenant created', {
      tenantId: r.tenantId,
      userId: r.userId,
      email: DEVELOPMENT_TENANT.email,
    });
    owner = { tenantId: r.tenantId, userId: r.userId, created: r.created };
  } else {
    const m = await db.query<{ tenant_id: string; user_id: string; role: string }>(
      'SELECT tenant_id, user_id, role FROM identity.memberships_by_email($1)',
      [DEVELOPMENT_TENANT.email],
    );
    const row = m.rows.find((r) => r.role === 'OWNER');
    if (row) owner = { tenantId: row.tenant_id, userId: row.user_id, created: false };
  }
  if (!owner) return null;
  const credentialsFile = await ensureDevelopmentPassword(config, db, log);
  return { ...owner, email: DEVELOPMENT_TENANT.email, credentialsFile };
}

/** Gives dev@localhost a random password if it has none and writes it to the credentials file. */
async function ensureDevelopmentPassword(
  config: Pick<Config, 'dataDir' | 'tokenIssuer'>,
  db: Queryable,
  log: SubgraphDeps['log'],
): Promise<string | null> {
  const u = await db.query<{ has_password: boolean }>(
    'SELECT password_hash IS NOT NULL AS has_password FROM identity.user_for_sign_in($1)',
    [DEVELOPMENT_TENANT.email],
  );
  if (u.rows[0]?.has_password) {
    const file =
      config.dataDir === resolve('memory://') ? null : join(config.dataDir, DEVELOPMENT_CREDENTIALS_FILE);
    return file && existsSync(file) ? file : null;
  }
  const password = randomBytes(18).toString('base64url');
  const set = await db.query<{ set: boolean }>('SELECT identity.set_development_password($1) AS set', [
    await hashPassword(password),
  ]);
  if (!set.rows[0]?.set) return null;
  const file = developmentCredentialsPath(config);
  mkdirSync(join(file, '..'), { recursive: true });
  const signInUrl = `${config.tokenIssuer}/signin`;
  writeFileSync(
    file,
    JSON.stringify({ email: DEVELOPMENT_TENANT.email, password, signInUrl }, null, 2) + '\n',
    {
      mode: 0o600,
    },
  );
  chmodSync(file, 0o600);
  log.info('development sign-in credentials written', { file, email: DEVELOPMENT_TENANT.email, signInUrl });
  return file;
}

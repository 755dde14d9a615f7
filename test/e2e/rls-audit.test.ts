/**
 * The database's own word on tenant isolation (docs/architecture.md#data-and-tenancy), read from the system catalog after every
 * migration of every subgraph has run:
 * - every table with a tenant_id column has Row-Level Security ENABLEd and FORCEd, and a policy;
 * - every other table is listed below with the reason it is not tenant data, and the check that reason implies;
 * - the application role and every service's role (runtime/src/db/service-roles.ts) own nothing (schema, table,
 *   sequence, view, function, type), are no superusers, and have neither BYPASSRLS, CREATEROLE nor CREATEDB, nor
 *   membership in a role that has them or owns anything;
 * - every SECURITY DEFINER function pins its search_path and is not executable by PUBLIC.
 * A new table without RLS, or a new non-tenant table nobody explained, fails here.
 */
import {
  openDatabase,
  serviceRole,
  SERVICES,
  type Database,
  type DatabaseHandle,
  type Queryable,
} from '@agentgraph/runtime';
import { loadConfig } from '@agentgraph/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SUBGRAPH_MODULES } from '../../gateway/src/platform.js';
import { provisionTestDatabase, type TestDatabase } from '../src/database.js';

const SCHEMAS = ['runtime', 'identity', 'memory', 'coordination', 'catalog'];

interface Exception {
  reason: string;
  /** What the reason implies, checked: 'forced-rls' = RLS ENABLEd and FORCEd with a policy of its own;
   *  'no-app-access' = neither the app role nor any service's role holds a privilege on it; 'not-tenant-data' = neither, the reason says why. */
  check: 'forced-rls' | 'no-app-access' | 'not-tenant-data';
}

/** Tables without a tenant_id column, each with why that is right. */
const NON_TENANT_TABLES: Record<string, Exception> = {
  'runtime.schema_migrations': {
    reason: 'migration bookkeeping, written by the owner while migrating',
    check: 'no-app-access',
  },
  'runtime.token_revocations': {
    reason:
      'revoked token ids (jti, grant, device, tenant/user), no tenant data; every verifier loads them all before it knows a tenant',
    check: 'not-tenant-data',
  },
  'identity.tenants': {
    reason: 'the tenants themselves: confined by RLS on id = current tenant',
    check: 'forced-rls',
  },
  'identity.users': {
    reason: 'global identities: RLS shows the caller and members of the current tenant only (own policy)',
    check: 'forced-rls',
  },
  'identity.signing_keys': {
    reason: 'token signing keys: no grant at all, reachable only through SECURITY DEFINER functions',
    check: 'no-app-access',
  },
  'coordination.intent_signing_keys': {
    reason:
      "coordination's intent signing keys: no grant at all, reachable only through SECURITY DEFINER functions",
    check: 'no-app-access',
  },
  'identity.pending_signing_keys': {
    reason: 'the next token signing key: no grant at all, reachable only through SECURITY DEFINER functions',
    check: 'no-app-access',
  },
  'identity.auth_attempts': {
    reason:
      'failed sign-in and user-code attempts per key (an e-mail or network address), counted before any tenant is known',
    check: 'not-tenant-data',
  },
  'identity.device_polls': {
    reason:
      'RFC 8628 polling intervals keyed by SHA-256 of a device code, which belongs to no tenant until a member approves it',
    check: 'not-tenant-data',
  },
  'identity.oauth_store': {
    reason:
      "oidc-provider's artefacts (codes, sessions, refresh tokens) keyed by SHA-256 of their ids; a device code has no tenant until approved, the tenant of a grant lives in identity.oauth_grants",
    check: 'not-tenant-data',
  },
};

let testDb: TestDatabase;
let handle: DatabaseHandle;
let db: Database;
let appRole: string;
/** The app role and every service's role. */
let roles: string[];
/** Each service's connections. */
let dbs: Database[];

beforeAll(async () => {
  testDb = await provisionTestDatabase();
  const config = loadConfig({ ...testDb.env, LOG_LEVEL: 'error' });
  appRole = config.appRole;
  ({ db, handle } = await openDatabase(
    config,
    SUBGRAPH_MODULES.map((m) => m.migrations),
  ));
  roles = [appRole, ...SERVICES.map((s) => serviceRole(appRole, s))];
  dbs = [db, ...(await Promise.all(SERVICES.map((s) => handle.app(s))))];
});
afterAll(async () => {
  await handle?.close();
  await testDb?.drop();
});

/** The catalog is readable by every role; nothing here needs the owner's rights (PGlite: owner and app share a session). */
const owner = (): Queryable => handle.owner;

interface TableRow {
  name: string;
  rls: boolean;
  forced: boolean;
  has_tenant_id: boolean;
  policies: number;
}

async function tables(): Promise<TableRow[]> {
  const { rows } = await owner().query<TableRow>(
    `SELECT n.nspname || '.' || c.relname AS name, c.relrowsecurity AS rls, c.relforcerowsecurity AS forced,
            EXISTS (SELECT 1 FROM pg_attribute a
                     WHERE a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped) AS has_tenant_id,
            (SELECT count(*)::int FROM pg_policy p WHERE p.polrelid = c.oid) AS policies
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = ANY($1::text[]) AND c.relkind IN ('r', 'p')
      ORDER BY 1`,
    [SCHEMAS],
  );
  return rows;
}

describe('Row-Level Security on every tenant table', () => {
  it('finds the tables of every schema (the audit reads what it should)', async () => {
    const names = (await tables()).map((t) => t.name);
    for (const expected of [
      'runtime.idempotency_keys',
      'identity.memberships',
      'identity.devices',
      'identity.oauth_grants',
      'memory.records',
      'coordination.messages',
      'catalog.releases',
    ]) {
      expect(names).toContain(expected);
    }
  });

  it('ENABLEs and FORCEs RLS, with a policy, on every table that has a tenant_id column', async () => {
    const tenantTables = (await tables()).filter((t) => t.has_tenant_id);
    expect(tenantTables.length).toBeGreaterThan(8);
    const unprotected = tenantTables
      .filter((t) => !t.rls || !t.forced || t.policies === 0)
      .map((t) => `${t.name} (enabled ${t.rls}, forced ${t.forced}, policies ${t.policies})`);
    expect(unprotected, 'tenant tables without ENABLEd + FORCEd RLS and a policy').toEqual([]);
  });

  it('knows why each table without tenant_id is not tenant data, and that reason holds', async () => {
    const all = await tables();
    const unexplained = all
      .filter((t) => !t.has_tenant_id && !(t.name in NON_TENANT_TABLES))
      .map((t) => t.name);
    expect(
      unexplained,
      'tables without tenant_id and without an entry (with a reason) in NON_TENANT_TABLES',
    ).toEqual([]);
    for (const [name, exception] of Object.entries(NON_TENANT_TABLES)) {
      const t = all.find((x) => x.name === name);
      expect(t, `${name} is listed as an exception but does not exist`).toBeDefined();
      expect(t!.has_tenant_id, `${name} has tenant_id now: remove its exception`).toBe(false);
      if (exception.check === 'forced-rls') {
        expect({ name, rls: t!.rls, forced: t!.forced, policy: t!.policies > 0 }).toEqual({
          name,
          rls: true,
          forced: true,
          policy: true,
        });
      }
      if (exception.check === 'no-app-access') {
        for (const role of roles) {
          const { rows } = await owner().query<{ privileges: string[] }>(
            // By oid: resolving the name would need USAGE on the schema (PGlite's owner query runs as the app role).
            `WITH t AS (SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                       WHERE n.nspname || '.' || c.relname = $2)
           SELECT array_remove(ARRAY[
                    CASE WHEN has_table_privilege($1, t.oid, 'SELECT') THEN 'SELECT' END,
                    CASE WHEN has_table_privilege($1, t.oid, 'INSERT') THEN 'INSERT' END,
                    CASE WHEN has_table_privilege($1, t.oid, 'UPDATE') THEN 'UPDATE' END,
                    CASE WHEN has_table_privilege($1, t.oid, 'DELETE') THEN 'DELETE' END,
                    CASE WHEN has_table_privilege($1, t.oid, 'TRUNCATE') THEN 'TRUNCATE' END], NULL) AS privileges
              FROM t`,
            [role, name],
          );
          expect({ name, role, privileges: rows[0]!.privileges }).toEqual({ name, role, privileges: [] });
        }
      }
    }
  });

  it('lets no role but the owner TRUNCATE a table (TRUNCATE ignores RLS)', async () => {
    const { rows } = await owner().query<{ name: string }>(
      `SELECT n.nspname || '.' || c.relname AS name
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = ANY($1::text[]) AND c.relkind IN ('r', 'p')
          AND EXISTS (SELECT 1 FROM unnest($2::text[]) r WHERE has_table_privilege(r, c.oid, 'TRUNCATE'))`,
      [SCHEMAS, roles],
    );
    expect(rows.map((r) => r.name)).toEqual([]);
  });
});

describe("the application role and each service's role", () => {
  it('are no superusers and have neither BYPASSRLS, CREATEROLE nor CREATEDB', async () => {
    const { rows } = await owner().query(
      `SELECT rolname, rolsuper, rolbypassrls, rolcreaterole, rolcreatedb FROM pg_roles
        WHERE rolname = ANY($1::text[]) ORDER BY rolname`,
      [roles],
    );
    expect(rows).toEqual(
      [...roles].sort().map((rolname) => ({
        rolname,
        rolsuper: false,
        rolbypassrls: false,
        rolcreaterole: false,
        rolcreatedb: false,
      })),
    );
  });

  it('are what the application connections run as', async () => {
    for (const [i, d] of dbs.entries()) {
      const { rows } = await d.query<{ who: string }>('SELECT current_user AS who');
      expect(rows[0]!.who).toBe(roles[i]);
    }
  });

  it.skipIf(!process.env['DATABASE_URL'])(
    'logs in as itself on PostgreSQL: even RESET ROLE or SET ROLE cannot leave it (DATABASE_APP_URL)',
    async () => {
      const ownerName = (await owner().query<{ u: string }>('SELECT session_user::text AS u')).rows[0]!.u;
      for (const [i, d] of dbs.entries()) {
        await d.transaction(async (tx) => {
          await tx.query('RESET ROLE');
          const { rows } = await tx.query<{ who: string; session: string }>(
            'SELECT current_user::text AS who, session_user::text AS session',
          );
          expect(rows[0]).toEqual({ who: roles[i], session: roles[i] });
          await expect(tx.query(`SET ROLE ${ownerName}`)).rejects.toThrow(/permission denied/);
        });
      }
    },
  );

  it('cannot become a role that is superuser, bypasses RLS or owns anything', async () => {
    const { rows } = await owner().query<{ rolname: string }>(
      `SELECT r.rolname FROM pg_roles r, unnest($1::text[]) me
        WHERE r.rolname <> me AND pg_has_role(me, r.oid, 'MEMBER')
          AND (r.rolsuper OR r.rolbypassrls
               OR EXISTS (SELECT 1 FROM pg_namespace n WHERE n.nspowner = r.oid AND n.nspname = ANY($2::text[]))
               OR EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                           WHERE c.relowner = r.oid AND n.nspname = ANY($2::text[])))`,
      [roles, SCHEMAS],
    );
    expect(rows.map((r) => r.rolname)).toEqual([]);
  });

  it('own no schema, table, sequence, view, function or type, and may create none', async () => {
    for (const role of roles) {
      const { rows } = await owner().query<{ kind: string; name: string }>(
        `SELECT 'schema' AS kind, n.nspname AS name FROM pg_namespace n WHERE n.nspowner = (SELECT oid FROM pg_roles WHERE rolname = $1)
       UNION ALL
       SELECT 'relation ' || c.relkind::text, n.nspname || '.' || c.relname
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE c.relowner = (SELECT oid FROM pg_roles WHERE rolname = $1)
       UNION ALL
       SELECT 'function', n.nspname || '.' || p.proname
         FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE p.proowner = (SELECT oid FROM pg_roles WHERE rolname = $1)
       UNION ALL
       SELECT 'type', n.nspname || '.' || t.typname
         FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
        WHERE t.typowner = (SELECT oid FROM pg_roles WHERE rolname = $1)`,
        [role],
      );
      expect({ role, owned: rows }).toEqual({ role, owned: [] });
      const create = await owner().query<{ nspname: string }>(
        `SELECT nspname FROM pg_namespace
        WHERE nspname = ANY($2::text[]) AND has_schema_privilege($1, oid, 'CREATE')`,
        [role, [...SCHEMAS, 'public']],
      );
      expect({ role, create: create.rows.map((r) => r.nspname) }).toEqual({ role, create: [] });
    }
  });

  it('refuses DDL and RLS switches when tried (owner-only operations)', async () => {
    for (const sql of [
      'ALTER TABLE memory.records DISABLE ROW LEVEL SECURITY',
      'ALTER TABLE memory.records NO FORCE ROW LEVEL SECURITY',
      'DROP POLICY tenant_isolation ON memory.records',
      'CREATE TABLE memory.sneaky (id int)',
    ]) {
      for (const d of dbs) {
        await expect(
          d.transaction((tx) => tx.query(sql)),
          sql,
        ).rejects.toThrow();
      }
    }
  });
});

describe('SECURITY DEFINER functions', () => {
  it('pin their search_path and are not executable by PUBLIC', async () => {
    const { rows } = await owner().query<{ name: string; pinned: boolean; public_execute: boolean }>(
      `SELECT n.nspname || '.' || p.proname AS name,
              coalesce(p.proconfig::text LIKE '%search_path=%', false) AS pinned,
              has_function_privilege('public', p.oid, 'EXECUTE') AS public_execute
         FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE p.prosecdef AND n.nspname = ANY($1::text[])
        ORDER BY 1`,
      [SCHEMAS],
    );
    expect(rows.length).toBeGreaterThan(0);
    const loose = rows.filter((r) => !r.pinned || r.public_execute);
    expect(loose, 'definer functions without a pinned search_path, or executable by PUBLIC').toEqual([]);
  });
});

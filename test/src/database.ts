/**
 * A fresh, empty database for one test file: an in-memory PGlite by default, or, when DATABASE_URL is set, a new
 * database created on that PostgreSQL server (dropped afterwards). Returns the environment to load config from.
 */
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

export interface TestDatabase {
  driver: 'pglite' | 'postgres';
  /** Environment variables for loadConfig() that point at this database. */
  env: Record<string, string>;
  drop(): Promise<void>;
}

const APP_ROLE = 'agentgraph_app';
/** The services' roles (runtime/src/db/service-roles.ts): each logs in on its own, as production should. */
const ROLES = [
  APP_ROLE,
  ...['identity', 'memory', 'coordination', 'catalog', 'gateway'].map((s) => `${APP_ROLE}_${s}`),
];

/**
 * One key-encryption key for every process of a test run (like CURSOR_SECRET: processes sharing a database must
 * agree), random per run.
 */
const KEY_ENCRYPTION_KEYS = process.env['KEY_ENCRYPTION_KEYS'] ?? randomBytes(32).toString('base64');

export async function provisionTestDatabase(env: NodeJS.ProcessEnv = process.env): Promise<TestDatabase> {
  // The fast tier runs once, on no database: a file of it that needs one would never run on PostgreSQL.
  if (process.env['AGENTGRAPH_TEST_SCOPE'] === 'unit') {
    throw new Error(
      'This test file opens a database: take it out of the fast tier (UNIT in vitest.config.ts).',
    );
  }
  const base = env['DATABASE_URL'];
  const cursorSecret = randomBytes(32).toString('base64url');
  if (!base) {
    return {
      driver: 'pglite',
      // Each in-memory database starts from a migrated snapshot (runtime/src/db/pglite-template.ts), not initdb.
      env: {
        DATA_DIR: 'memory://',
        CURSOR_SECRET: cursorSecret,
        KEY_ENCRYPTION_KEYS,
        PGLITE_TEMPLATE_DIR: env['PGLITE_TEMPLATE_DIR'] ?? join(tmpdir(), 'agentgraph-pglite-templates'),
      },
      drop: async () => undefined,
    };
  }
  const name = `agentgraph_test_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
    // The app role and each service's role log in on their own (DATABASE_APP_URL, and the same URL with the
    // service's role as user), as production should: their connections never were the owner. Roles are
    // cluster-wide; parallel test files may race to create them.
    for (const role of ROLES) {
      await admin
        .query(
          `DO $$ BEGIN
             IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '${role}') THEN
               CREATE ROLE ${role} LOGIN NOSUPERUSER NOBYPASSRLS;
             ELSE
               ALTER ROLE ${role} LOGIN;
             END IF;
           END $$`,
        )
        .catch((err: { code?: string }) => {
          if (err.code !== '23505' && err.code !== '42710' && err.code !== 'XX000') throw err;
        });
    }
  } finally {
    await admin.end();
  }
  const url = new URL(base);
  url.pathname = `/${name}`;
  const appUrl = new URL(url);
  appUrl.username = APP_ROLE;
  appUrl.password = '';
  return {
    driver: 'postgres',
    // DATA_DIR memory://: development secrets and credentials files stay out of the developer's ./.data.
    env: {
      DATABASE_URL: url.toString(),
      DATABASE_APP_URL: appUrl.toString(),
      CURSOR_SECRET: cursorSecret,
      KEY_ENCRYPTION_KEYS,
      DATA_DIR: 'memory://',
    },
    async drop() {
      const c = new pg.Client({ connectionString: base });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}

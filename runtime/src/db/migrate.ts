/**
 * Migrations: numbered .sql files per namespace (one per subgraph, plus the runtime's own), applied in order,
 * each in its own transaction, recorded with a checksum. Refuses to run:
 *  - a destructive statement (DROP, RENAME, TRUNCATE, ALTER ... TYPE) unless the file carries the line
 *    `-- migration: allow-destructive: <reason>`;
 *  - an already-applied file whose content changed (write a new migration instead).
 * Runs under an advisory lock so replicas starting together do not race.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { serviceRole, SERVICES, SUBGRAPH_SERVICES, substituteRoles } from './service-roles.js';
import type { DatabaseHandle, Queryable } from './types.js';

export interface MigrationSet {
  namespace: string;
  dir: string;
}

export interface Migration {
  namespace: string;
  version: number;
  name: string;
  sql: string;
  checksum: string;
}

const FILE = /^(\d{3,})_([a-z0-9_]+)\.sql$/;
// The marker must hold its reason on its own line (`[ \t]`, not `\s`, which would read the next statement as one).
const ALLOW = /^--[ \t]*migration:[ \t]*allow-destructive:[ \t]*\S[^\n]{9,}$/m;
const DESTRUCTIVE = [
  // DROP TABLE/COLUMN/..., and ALTER TABLE t DROP c (COLUMN is optional); DROP NOT NULL / DEFAULT only relax.
  /\bdrop\s+(?!not\s+null\b|default\b)\S+/i,
  // RENAME TO / COLUMN / CONSTRAINT, and ALTER TABLE t RENAME a TO b.
  /\brename\s+\S+/i,
  /\btruncate\b/i,
  // ALTER [COLUMN] c [SET DATA] TYPE, after ALTER TABLE t or a comma (COLUMN is optional there too).
  /(\balter\s+column|\balter\s+table\s+(if\s+exists\s+)?(only\s+)?\S+\s+alter|,\s*alter)\s+(column\s+)?\S+\s+(set\s+data\s+)?type\b/i,
];

export class MigrationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MigrationError';
  }
}

/** The SQL without comments, string literals and quoted identifiers: the part the destructive check reads. */
function codeOnly(sql: string): string {
  return sql.replace(/--[^\n]*|\/\*[\s\S]*?\*\/|'(?:[^']|'')*'|"(?:[^"]|"")*"/g, ' ');
}

export function readMigrations(set: MigrationSet): Migration[] {
  const files = readdirSync(set.dir)
    .filter((f) => f.endsWith('.sql'))
    .sort();
  const seen = new Set<number>();
  const migrations = files.map((file) => {
    const m = FILE.exec(file);
    if (!m) {
      throw new MigrationError(
        `${join(set.dir, file)}: name it NNN_snake_case.sql (e.g. 002_add_devices.sql)`,
      );
    }
    const version = Number(m[1]);
    if (seen.has(version)) throw new MigrationError(`${set.dir}: two migrations numbered ${m[1]}`);
    seen.add(version);
    const sql = readFileSync(join(set.dir, file), 'utf8');
    const body = codeOnly(sql);
    const hit = DESTRUCTIVE.find((re) => re.test(body));
    if (hit && !ALLOW.test(sql)) {
      throw new MigrationError(
        `${join(set.dir, file)} contains a destructive change (${hit.exec(body)?.[0]}). Schema evolution is ` +
          'additive; if this is truly intended, add the line "-- migration: allow-destructive: <reason>".',
      );
    }
    return {
      namespace: set.namespace,
      version,
      name: m[2]!,
      sql,
      checksum: createHash('sha256').update(sql).digest('hex'),
    };
  });
  // By number, not by name: "1000_x.sql" sorts before "999_y.sql" as text.
  return migrations.sort((a, b) => a.version - b.version);
}

const BOOTSTRAP = `
CREATE SCHEMA IF NOT EXISTS runtime;
CREATE TABLE IF NOT EXISTS runtime.schema_migrations (
  namespace text NOT NULL,
  version int NOT NULL,
  name text NOT NULL,
  checksum text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (namespace, version)
);`;

/**
 * The app role and one role per service (service-roles.ts), created if missing as plain NOLOGIN roles (a deployment
 * may give them logins: ALTER ROLE … LOGIN PASSWORD). The subgraph roles are members of the app role (its shared
 * grants); the gateway's is not. The migrating role becomes a member of each, so that it may SET ROLE to them.
 */
async function ensureRoles(tx: Queryable, appRole: string): Promise<void> {
  const roles = [appRole, ...SERVICES.map((s) => serviceRole(appRole, s))];
  for (const role of roles) {
    await tx.query(`DO $$ BEGIN
      IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '${role}') THEN
        CREATE ROLE ${role} NOLOGIN NOSUPERUSER NOBYPASSRLS;
      END IF;
    -- Roles are per cluster: migrations of two databases (test files) may create one at the same time.
    EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
    END $$`);
    // Membership lets a non-superuser owner SET ROLE; a failure (e.g. already granted otherwise) must not abort the
    // migration transaction, so it is caught inside the server, not here.
    await tx.query(`DO $$ BEGIN
      EXECUTE format('GRANT %I TO CURRENT_USER', '${role}');
    EXCEPTION WHEN others THEN NULL;
    END $$`);
  }
  for (const s of SUBGRAPH_SERVICES) {
    const role = serviceRole(appRole, s);
    await tx.query(`DO $$ BEGIN
      IF NOT pg_has_role('${role}', '${appRole}', 'MEMBER') THEN
        EXECUTE format('GRANT %I TO %I', '${appRole}', '${role}');
      END IF;
    EXCEPTION WHEN others THEN
      -- Another database's migration granting it at the same moment; checked below.
      IF NOT pg_has_role('${role}', '${appRole}', 'MEMBER') THEN RAISE; END IF;
    END $$`);
  }
}

/** Applies what is pending; returns the migrations it applied. The app and service roles are created if missing. */
export async function migrate(
  handle: DatabaseHandle,
  sets: MigrationSet[],
  appRole: string,
): Promise<Migration[]> {
  const all = sets.flatMap(readMigrations);
  const applied: Migration[] = [];
  await handle.owner.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock(7355608)');
    await ensureRoles(tx, appRole);
    for (const stmt of BOOTSTRAP.split(';').filter((s) => s.trim())) await tx.query(stmt);
    const done = await tx.query<{ namespace: string; version: number; checksum: string }>(
      'SELECT namespace, version, checksum FROM runtime.schema_migrations',
    );
    const byKey = new Map(done.rows.map((r) => [`${r.namespace}/${r.version}`, r.checksum]));
    for (const m of all) {
      const prior = byKey.get(`${m.namespace}/${m.version}`);
      if (prior && prior !== m.checksum) {
        throw new MigrationError(
          `Migration ${m.namespace}/${m.version}_${m.name} was changed after it was applied. ` +
            'Restore the original file and add a new migration for the change.',
        );
      }
    }
  });
  for (const m of all) {
    await handle.owner.transaction(async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock(7355608)');
      const exists = await tx.query(
        'SELECT 1 FROM runtime.schema_migrations WHERE namespace = $1 AND version = $2',
        [m.namespace, m.version],
      );
      if (exists.rowCount > 0) return;
      const sql = substituteRoles(m.sql, appRole);
      await execScript(tx, sql);
      await tx.query(
        'INSERT INTO runtime.schema_migrations (namespace, version, name, checksum) VALUES ($1, $2, $3, $4)',
        [m.namespace, m.version, m.name, m.checksum],
      );
      applied.push(m);
    });
  }
  return applied;
}

/** Runs a multi-statement script: split on semicolons outside quotes, dollar quotes and comments. */
export function splitStatements(sql: string): string[] {
  const out: string[] = [];
  let cur = '';
  let i = 0;
  while (i < sql.length) {
    const ch = sql[i]!;
    const rest = sql.slice(i);
    if (rest.startsWith('--')) {
      const end = sql.indexOf('\n', i);
      i = end === -1 ? sql.length : end + 1;
      cur += '\n';
      continue;
    }
    if (rest.startsWith('/*')) {
      const end = sql.indexOf('*/', i + 2);
      i = end === -1 ? sql.length : end + 2;
      continue;
    }
    const dollar = /^\$(?:[A-Za-z_][A-Za-z0-9_]*)?\$/.exec(rest); // tags are identifiers: $fn1$ too
    if (dollar) {
      const tag = dollar[0];
      const end = sql.indexOf(tag, i + tag.length);
      const stop = end === -1 ? sql.length : end + tag.length;
      cur += sql.slice(i, stop);
      i = stop;
      continue;
    }
    if (ch === "'" || ch === '"') {
      let j = i + 1;
      while (j < sql.length) {
        if (sql[j] === ch && sql[j + 1] === ch) j += 2;
        else if (sql[j] === ch) break;
        else j++;
      }
      cur += sql.slice(i, j + 1);
      i = j + 1;
      continue;
    }
    if (ch === ';') {
      if (cur.trim()) out.push(cur.trim());
      cur = '';
      i++;
      continue;
    }
    cur += ch;
    i++;
  }
  if (cur.trim()) out.push(cur.trim());
  return out;
}

async function execScript(tx: { query: DatabaseHandle['owner']['query'] }, sql: string): Promise<void> {
  for (const stmt of splitStatements(sql)) await tx.query(stmt);
}

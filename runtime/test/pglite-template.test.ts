/**
 * In-memory PGlite databases started from a migrated snapshot (PGLITE_TEMPLATE_DIR, db/pglite-template.ts): the first
 * database for a set of migrations writes the snapshot, the next starts as a copy of it (migrations applied, nothing
 * written after the snapshot, the app and service roles as on a fresh database), and a new migration means a new
 * snapshot, never a stale one.
 *
 * A fresh cluster (initdb) costs seconds of CPU, many more on a loaded machine: the file makes exactly one (the first
 * case), each case does one step, and the snapshot's key is checked without a database.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { migrate, type MigrationSet } from '../src/db/migrate.js';
import { openDatabase, runtimeMigrations } from '../src/db/open.js';
import { templateKey } from '../src/db/pglite-template.js';
import type { Database, DatabaseHandle } from '../src/db/types.js';

const root = mkdtempSync(join(tmpdir(), 'agentgraph-template-test-'));
const templates = join(root, 'templates');
const migrations = join(root, 'migrations');
const set: MigrationSet = { namespace: 'tpl', dir: migrations };
const config = loadConfig({ DATA_DIR: 'memory://', PGLITE_TEMPLATE_DIR: templates, LOG_LEVEL: 'error' });
const key = () => templateKey([runtimeMigrations, set], config.appRole);

mkdirSync(migrations, { recursive: true });
writeFileSync(
  join(migrations, '001_things.sql'),
  `CREATE SCHEMA tpl;
   CREATE TABLE tpl.things (id int PRIMARY KEY);
   INSERT INTO tpl.things VALUES (1);
   GRANT USAGE ON SCHEMA tpl TO :app_role;
   GRANT SELECT, INSERT ON tpl.things TO :app_role;`,
);

type Opened = { db: Database; handle: DatabaseHandle };
const opened: Opened[] = [];
let first: Opened | undefined;
let copy: Opened | undefined;

afterAll(async () => {
  for (const d of opened) await d.handle.close();
  rmSync(root, { recursive: true, force: true });
});

async function open(): Promise<Opened> {
  const d = await openDatabase(config, [set]);
  opened.push(d);
  return d;
}

async function count(db: Pick<Database, 'query'>): Promise<number> {
  return (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM tpl.things')).rows[0]!.n;
}

/** The app role, the service roles and who is a member of whom: the same on a copy as where it was taken. */
async function roles(handle: DatabaseHandle): Promise<string[]> {
  const r = await handle.owner.query<{ role: string; member_of: string | null }>(
    `SELECT r.rolname AS role, string_agg(g.rolname, ',' ORDER BY g.rolname) AS member_of
       FROM pg_roles r
       LEFT JOIN pg_auth_members m ON m.member = r.oid
       LEFT JOIN pg_roles g ON g.oid = m.roleid
      WHERE r.rolname LIKE $1
      GROUP BY r.rolname ORDER BY r.rolname`,
    [`${config.appRole}%`],
  );
  return r.rows.map((row) => `${row.role} <- ${row.member_of ?? ''}`);
}

describe('PGlite templates', () => {
  it('writes a snapshot of the first database for a set of migrations', async () => {
    first = await open();
    expect(readdirSync(templates)).toEqual([`${key()}.tar`]);
    // Written after the snapshot: no copy may see it.
    await first.db.query('INSERT INTO tpl.things VALUES (2)');
    expect(await count(first.db)).toBe(2);
  });

  it('starts the next one as a copy: migrated, with what the migrations wrote and nothing written later', async () => {
    expect(first, 'the first case made the snapshot').toBeDefined();
    copy = await open();
    expect(readdirSync(templates)).toEqual([`${key()}.tar`]);
    expect(await count(copy.db)).toBe(1);
    expect(await migrate(copy.handle, [runtimeMigrations, set], config.appRole)).toEqual([]);
  });

  it('keeps the app and service roles of a fresh database on the copy', async () => {
    expect(copy, 'the second case made the copy').toBeDefined();
    const { db, handle } = copy!;
    expect(await roles(handle)).toEqual(await roles(first!.handle));
    // The app role: only its grants.
    await expect(db.query('DELETE FROM tpl.things')).rejects.toThrow(/permission denied/);
    // A subgraph's role inherits the app role's grants, and no more; the gateway's role has none of them.
    const memory = await handle.app('memory');
    expect(await count(memory)).toBe(1);
    await expect(memory.query('DELETE FROM tpl.things')).rejects.toThrow(/permission denied/);
    const gateway = await handle.app('gateway');
    await expect(count(gateway)).rejects.toThrow(/permission denied/);
    await gateway.query('SELECT count(*) FROM runtime.token_revocations');
  });

  it('keys the snapshot by every migration and the app role, so a changed set never meets a stale one', () => {
    const before = key();
    writeFileSync(join(migrations, '002_more.sql'), 'CREATE TABLE tpl.more (id int);');
    const added = key();
    expect(added).not.toBe(before);
    // No snapshot under the new key yet: the next database is migrated from scratch and writes its own.
    expect(readdirSync(templates)).not.toContain(`${added}.tar`);
    // A migration edited in place (a new checksum) or another app role: another key too.
    writeFileSync(join(migrations, '002_more.sql'), 'CREATE TABLE tpl.more (id bigint);');
    expect(key()).not.toBe(added);
    expect(templateKey([runtimeMigrations, set], 'other_app')).not.toBe(key());
    rmSync(join(migrations, '002_more.sql'));
    expect(key()).toBe(before);
  });
});

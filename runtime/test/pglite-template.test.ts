/**
 * In-memory PGlite databases started from a migrated snapshot (PGLITE_TEMPLATE_DIR, db/pglite-template.ts): the first
 * database for a set of migrations writes the snapshot, the next starts as a copy of it (migrations applied, nothing
 * written after the snapshot), and a new migration means a new snapshot, never a stale one.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { migrate, type MigrationSet } from '../src/db/migrate.js';
import { openDatabase, runtimeMigrations } from '../src/db/open.js';
import { templateKey } from '../src/db/pglite-template.js';

const root = mkdtempSync(join(tmpdir(), 'agentgraph-template-test-'));
const templates = join(root, 'templates');
const migrations = join(root, 'migrations');
const set: MigrationSet = { namespace: 'tpl', dir: migrations };
const config = loadConfig({ DATA_DIR: 'memory://', PGLITE_TEMPLATE_DIR: templates, LOG_LEVEL: 'error' });

afterAll(() => rmSync(root, { recursive: true, force: true }));

async function count(db: { query: (sql: string) => Promise<{ rows: { n: number }[] }> }): Promise<number> {
  return (await db.query('SELECT count(*)::int AS n FROM tpl.things')).rows[0]!.n;
}

describe('PGlite templates', () => {
  it('writes a snapshot once, starts copies from it, and keys it by every migration', async () => {
    mkdirSync(migrations, { recursive: true });
    writeFileSync(
      join(migrations, '001_things.sql'),
      `CREATE SCHEMA tpl;
       CREATE TABLE tpl.things (id int PRIMARY KEY);
       INSERT INTO tpl.things VALUES (1);
       GRANT USAGE ON SCHEMA tpl TO agentgraph_app;
       GRANT SELECT, INSERT ON tpl.things TO agentgraph_app;`,
    );
    const first = await openDatabase(config, [set]);
    expect(readdirSync(templates)).toEqual([`${templateKey([runtimeMigrations, set], config.appRole)}.tar`]);
    await first.db.query('INSERT INTO tpl.things VALUES (2)');
    expect(await count(first.db)).toBe(2);

    // A copy: migrated (nothing left to apply), with what the migrations wrote and nothing written after.
    const copy = await openDatabase(config, [set]);
    expect(readdirSync(templates)).toHaveLength(1);
    expect(await count(copy.db)).toBe(1);
    expect(await migrate(copy.handle, [runtimeMigrations, set], config.appRole)).toEqual([]);
    // The app role is in force on the copy as on a fresh database: no write outside its grants.
    await expect(copy.db.query('DELETE FROM tpl.things')).rejects.toThrow(/permission denied/);

    // A new migration: a new key, a new snapshot, and the copy has the new table.
    writeFileSync(join(migrations, '002_more.sql'), 'CREATE TABLE tpl.more (id int);');
    const next = await openDatabase(config, [set]);
    expect(readdirSync(templates)).toHaveLength(2);
    const tables = await next.handle.owner.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'tpl'",
    );
    expect(tables.rows[0]!.n).toBe(2);
    for (const d of [first, copy, next]) await d.handle.close();
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MigrationError, migrate, readMigrations, splitStatements } from '../src/db/migrate.js';
import { openHandle } from '../src/db/open.js';
import { drivers, migrationDir, openBareDatabase } from './helpers.js';

const APP_ROLE = 'agentgraph_app';

describe('splitStatements', () => {
  it('splits on semicolons between statements', () => {
    expect(splitStatements('CREATE TABLE a (x int);\nCREATE TABLE b (y int);')).toEqual([
      'CREATE TABLE a (x int)',
      'CREATE TABLE b (y int)',
    ]);
  });

  it('keeps $$ and $tag$ bodies whole', () => {
    const fn = `CREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1; -- a comment; with a semicolon
  RETURN 1;
END $$`;
    const tagged = `DO $body$ BEGIN PERFORM ';'; RAISE NOTICE 'x'; END $body$`;
    const digits = `DO $fn1$ BEGIN PERFORM 1; PERFORM 2; END $fn1$`;
    expect(splitStatements(`${fn};\n${tagged};\n${digits};SELECT 2`)).toEqual([
      fn,
      tagged,
      digits,
      'SELECT 2',
    ]);
  });

  it('does not split inside quoted strings and identifiers', () => {
    expect(splitStatements(`INSERT INTO t VALUES ('a;b', 'it''s; fine');SELECT "odd;name" FROM t`)).toEqual([
      `INSERT INTO t VALUES ('a;b', 'it''s; fine')`,
      'SELECT "odd;name" FROM t',
    ]);
  });

  it('drops comments and empty statements', () => {
    expect(
      splitStatements(`-- header; with semicolon
/* block; comment */
SELECT 1; ;
-- trailing comment`),
    ).toEqual(['SELECT 1']);
  });

  it('keeps a last statement without a semicolon', () => {
    expect(splitStatements('SELECT 1;\nSELECT 2\n')).toEqual(['SELECT 1', 'SELECT 2']);
  });
});

describe('readMigrations', () => {
  const cases: Array<[string, string]> = [
    ['DROP TABLE', 'DROP TABLE t;'],
    ['DROP TABLE IF EXISTS', 'DROP TABLE IF EXISTS t;'],
    ['DROP COLUMN', 'ALTER TABLE t DROP COLUMN c;'],
    ['DROP without COLUMN', 'ALTER TABLE t DROP c;'],
    ['DROP CONSTRAINT', 'ALTER TABLE t DROP CONSTRAINT t_pkey;'],
    ['DROP SCHEMA', 'DROP SCHEMA s CASCADE;'],
    ['DROP POLICY', 'DROP POLICY p ON t;'],
    ['DROP INDEX', 'DROP INDEX t_idx;'],
    ['RENAME TO', 'ALTER TABLE t RENAME TO u;'],
    ['RENAME COLUMN', 'ALTER TABLE t RENAME COLUMN a TO b;'],
    ['RENAME without COLUMN', 'ALTER TABLE t RENAME a TO b;'],
    ['TRUNCATE', 'TRUNCATE t;'],
    ['retype', 'ALTER TABLE t ALTER COLUMN c TYPE bigint;'],
    ['retype (SET DATA TYPE)', 'ALTER TABLE t ALTER COLUMN c SET DATA TYPE text;'],
    ['retype without COLUMN', 'ALTER TABLE t ALTER c TYPE text;'],
    ['lower case', 'alter table t drop column c;'],
  ];

  it.each(cases)('refuses a destructive change: %s', (_, sql) => {
    const m = migrationDir({ '001_x.sql': `CREATE TABLE t (c int);\n${sql}\n` });
    try {
      expect(() => readMigrations({ namespace: 'x', dir: m.dir })).toThrow(MigrationError);
      expect(() => readMigrations({ namespace: 'x', dir: m.dir })).toThrow(/destructive/);
    } finally {
      m.remove();
    }
  });

  it('accepts a destructive change marked with a reason', () => {
    const m = migrationDir({
      '001_x.sql':
        '-- migration: allow-destructive: t was replaced by t2 in 000 and is empty\nDROP TABLE t;\n',
    });
    try {
      expect(readMigrations({ namespace: 'x', dir: m.dir })).toHaveLength(1);
    } finally {
      m.remove();
    }
  });

  it.each([
    ['no reason', '-- migration: allow-destructive:\nDROP TABLE t;'],
    ['a too-short reason', '-- migration: allow-destructive: ok\nDROP TABLE t;'],
    [
      'the marker inside a statement',
      "SELECT '-- migration: allow-destructive: because I say so';\nDROP TABLE t;",
    ],
  ])('refuses a destructive change with %s', (_, sql) => {
    const m = migrationDir({ '001_x.sql': sql });
    try {
      expect(() => readMigrations({ namespace: 'x', dir: m.dir })).toThrow(MigrationError);
    } finally {
      m.remove();
    }
  });

  it.each([
    ['a comment', '-- we never drop table t here\nCREATE TABLE t (c int);'],
    ['a block comment', '/* rename to something later */ CREATE TABLE t (c int);'],
    ['a string', "CREATE TABLE t (c int); COMMENT ON TABLE t IS 'do not drop table t or rename it';"],
    [
      'DROP NOT NULL and DROP DEFAULT',
      'ALTER TABLE t ALTER COLUMN c DROP NOT NULL, ALTER COLUMN c DROP DEFAULT;',
    ],
    ['a column named like a keyword', 'CREATE TABLE t (dropped_at timestamptz, renamed boolean, type text);'],
    ['ALTER TYPE ... ADD VALUE', "ALTER TYPE state ADD VALUE 'EXPIRED';"],
  ])('does not mistake %s for a destructive change', (_, sql) => {
    const m = migrationDir({ '001_x.sql': sql });
    try {
      expect(readMigrations({ namespace: 'x', dir: m.dir })).toHaveLength(1);
    } finally {
      m.remove();
    }
  });

  it('refuses badly named files and duplicate numbers', () => {
    const bad = migrationDir({ '1_x.sql': 'SELECT 1' });
    const dup = migrationDir({ '001_a.sql': 'SELECT 1', '001_b.sql': 'SELECT 1' });
    try {
      expect(() => readMigrations({ namespace: 'x', dir: bad.dir })).toThrow(/NNN_snake_case/);
      expect(() => readMigrations({ namespace: 'x', dir: dup.dir })).toThrow(/two migrations numbered 001/);
    } finally {
      bad.remove();
      dup.remove();
    }
  });

  it('orders by number, not by file name', () => {
    const m = migrationDir({ '999_a.sql': 'SELECT 1', '1000_b.sql': 'SELECT 2', '010_c.sql': 'SELECT 3' });
    try {
      expect(readMigrations({ namespace: 'x', dir: m.dir }).map((x) => x.version)).toEqual([10, 999, 1000]);
    } finally {
      m.remove();
    }
  });
});

describe.each(drivers)('migrate on %s', (driver) => {
  let bare: Awaited<ReturnType<typeof openBareDatabase>>;
  let n = 0;
  /** A namespace and schema of its own for each test, so they can share one database. */
  const fresh = () => `m${++n}`;

  beforeAll(async () => {
    bare = await openBareDatabase(driver);
  });
  afterAll(async () => {
    await bare?.close();
  });

  const versions = async (ns: string) =>
    (
      await bare.handle.owner.query<{ version: number }>(
        'SELECT version FROM runtime.schema_migrations WHERE namespace = $1 ORDER BY version',
        [ns],
      )
    ).rows.map((r) => r.version);

  it('applies pending migrations in order, once', async () => {
    const ns = fresh();
    const m = migrationDir({
      '001_create.sql': `CREATE SCHEMA ${ns}; CREATE TABLE ${ns}.t (id int PRIMARY KEY);`,
      '002_add.sql': `ALTER TABLE ${ns}.t ADD COLUMN note text;`,
      '010_index.sql': `CREATE INDEX ON ${ns}.t (note); GRANT SELECT ON ${ns}.t TO :app_role;`,
    });
    try {
      const set = { namespace: ns, dir: m.dir };
      expect((await migrate(bare.handle, [set], APP_ROLE)).map((x) => x.version)).toEqual([1, 2, 10]);
      expect(await versions(ns)).toEqual([1, 2, 10]);
      // Idempotent: a second run applies nothing and fails on nothing.
      expect(await migrate(bare.handle, [set], APP_ROLE)).toEqual([]);
      // A new file is applied alone.
      m.write('011_more.sql', `ALTER TABLE ${ns}.t ADD COLUMN more int;`);
      expect((await migrate(bare.handle, [set], APP_ROLE)).map((x) => x.version)).toEqual([11]);
      const grants = await bare.handle.owner.query<{ ok: boolean }>(
        `SELECT has_table_privilege($1, '${ns}.t', 'SELECT') AS ok`,
        [APP_ROLE],
      );
      expect(grants.rows[0]?.ok).toBe(true);
    } finally {
      m.remove();
    }
  });

  it('refuses an applied file that was edited, and applies nothing of that run', async () => {
    const ns = fresh();
    const m = migrationDir({ '001_create.sql': `CREATE SCHEMA ${ns}; CREATE TABLE ${ns}.t (id int);` });
    try {
      const set = { namespace: ns, dir: m.dir };
      await migrate(bare.handle, [set], APP_ROLE);
      m.write('001_create.sql', `CREATE SCHEMA ${ns}; CREATE TABLE ${ns}.t (id int, extra int);`);
      m.write('002_next.sql', `CREATE TABLE ${ns}.u (id int);`);
      await expect(migrate(bare.handle, [set], APP_ROLE)).rejects.toThrow(/changed after it was applied/);
      expect(await versions(ns)).toEqual([1]);
    } finally {
      m.remove();
    }
  });

  it('rolls a failing migration back whole and keeps the ones before it', async () => {
    const ns = fresh();
    const m = migrationDir({
      '001_ok.sql': `CREATE SCHEMA ${ns};`,
      '002_bad.sql': `CREATE TABLE ${ns}.half (id int); SELECT no_such_function();`,
    });
    try {
      await expect(migrate(bare.handle, [{ namespace: ns, dir: m.dir }], APP_ROLE)).rejects.toThrow(
        /no_such_function/,
      );
      expect(await versions(ns)).toEqual([1]);
      const half = await bare.handle.owner.query(`SELECT to_regclass('${ns}.half') AS t`);
      expect(half.rows[0]).toEqual({ t: null });
    } finally {
      m.remove();
    }
  });

  it('refuses a destructive migration before applying anything', async () => {
    const ns = fresh();
    const m = migrationDir({
      '001_ok.sql': `CREATE SCHEMA ${ns};`,
      '002_drop.sql': `DROP SCHEMA ${ns};`,
    });
    try {
      await expect(migrate(bare.handle, [{ namespace: ns, dir: m.dir }], APP_ROLE)).rejects.toThrow(
        MigrationError,
      );
      expect(await versions(ns)).toEqual([]);
    } finally {
      m.remove();
    }
  });

  it('runs function bodies and quoted semicolons as written', async () => {
    const ns = fresh();
    const m = migrationDir({
      '001_fn.sql': `CREATE SCHEMA ${ns};
CREATE FUNCTION ${ns}.f() RETURNS text LANGUAGE plpgsql AS $fn1$
BEGIN
  RETURN 'a;b'; -- ; in a comment
END $fn1$;
CREATE TABLE ${ns}.t (v text DEFAULT 'x;y');`,
    });
    try {
      await migrate(bare.handle, [{ namespace: ns, dir: m.dir }], APP_ROLE);
      const r = await bare.handle.owner.query<{ v: string }>(`SELECT ${ns}.f() AS v`);
      expect(r.rows[0]?.v).toBe('a;b');
    } finally {
      m.remove();
    }
  });

  it.runIf(driver === 'postgres')(
    'lets replicas starting together apply each migration exactly once',
    async () => {
      const ns = fresh();
      const m = migrationDir({
        '001_a.sql': `CREATE SCHEMA ${ns}; CREATE TABLE ${ns}.t (id int);`,
        '002_b.sql': `ALTER TABLE ${ns}.t ADD COLUMN b int;`,
        '003_c.sql': `ALTER TABLE ${ns}.t ADD COLUMN c int;`,
      });
      const others = await Promise.all([openHandle(bare.config), openHandle(bare.config)]);
      try {
        const set = { namespace: ns, dir: m.dir };
        const results = await Promise.all([bare.handle, ...others].map((h) => migrate(h, [set], APP_ROLE)));
        const applied = results.flat().map((x) => x.version);
        expect(applied.sort()).toEqual([1, 2, 3]);
        expect(await versions(ns)).toEqual([1, 2, 3]);
      } finally {
        await Promise.all(others.map((h) => h.close()));
        m.remove();
      }
    },
  );
});

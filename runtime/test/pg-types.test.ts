/**
 * The driver's real[] and float8[] parser gives what pg's own array parser gives, for what PostgreSQL prints and for
 * what only pg's parser can read (it falls back); on PostgreSQL, for arrays the server printed itself.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseFloatArray, pgTypes } from '../src/db/pg-types.js';
import { openTestDatabase, type TestDb } from './helpers.js';

const builtin = pg.types.getTypeParser as (
  oid: number,
  format?: 'text' | 'binary',
) => (text: string) => unknown;
const pgParse = builtin(1021, 'text');

function mulberry32(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('parseFloatArray', () => {
  it("gives pg's values for PostgreSQL's output and for what it hands back to pg", () => {
    const cases = [
      '{}',
      '{0}',
      '{1.5,-2.25,3}',
      '{1e-05,-3.4028235e+38,1.175494e-38,5e-324}',
      '{NaN,Infinity,-Infinity}',
      '{NULL,1,NULL}',
      '{-0}',
      // Not what PostgreSQL prints for these types: pg's parser decides.
      '{{1,2},{3,4}}',
      '{"1.5","NULL"}',
      '[0:1]={1,2}',
    ];
    for (const text of cases) expect(parseFloatArray(text), text).toEqual(pgParse(text));
    expect(Object.is((parseFloatArray('{-0}') as number[])[0], -0)).toBe(true);
    const random = mulberry32(21);
    for (let n = 0; n < 200; n++) {
      const values = Array.from({ length: 1 + Math.floor(random() * 70) }, () =>
        String(Math.fround((random() - 0.5) * 10 ** Math.floor(random() * 20 - 10))),
      );
      const text = `{${values.join(',')}}`;
      expect(parseFloatArray(text)).toEqual(pgParse(text));
    }
  });

  it('is used for real[] and float8[] only, in text format', () => {
    expect(pgTypes.getTypeParser(1021)).toBe(parseFloatArray);
    expect(pgTypes.getTypeParser(1022, 'text')).toBe(parseFloatArray);
    expect(pgTypes.getTypeParser(1021, 'binary')).toBe(builtin(1021, 'binary'));
    expect(pgTypes.getTypeParser(1007)).toBe(builtin(1007));
  });
});

describe.runIf(Boolean(process.env['DATABASE_URL']))('parseFloatArray on PostgreSQL', () => {
  let t: TestDb;
  beforeAll(async () => {
    t = await openTestDatabase('postgres');
  });
  afterAll(() => t?.close());

  it("reads the arrays the server prints as pg's parser does", async () => {
    const r = await t.db.query<{ r: unknown; d: unknown; rt: string; dt: string }>(
      `SELECT a::real[] AS r, a AS d, a::real[]::text AS rt, a::text AS dt
         FROM (SELECT array_agg(CASE WHEN i % 17 = 0 THEN NULL
                                     WHEN i % 31 = 0 THEN 'NaN'::float8
                                     WHEN i % 37 = 0 THEN '-Infinity'::float8
                                     ELSE (random() - 0.5) * power(10, (random() * 60 - 30)::int) END) AS a
                 FROM generate_series(1, 64 * $1::int) i GROUP BY i % $1::int) s`,
      [50],
    );
    expect(r.rows).toHaveLength(50);
    for (const row of r.rows) {
      expect(row.r).toEqual(pgParse(row.rt));
      expect(row.d).toEqual(pgParse(row.dt));
    }
  });
});

/**
 * How the PostgreSQL driver turns column text into values: pg's own parsers, except one-dimensional real[] and
 * float8[] (embeddings), split at the commas. pg's array parser builds every element a character at a time (an
 * array push and a join per element): for a search returning 18 records of 64 dimensions that was ~0.4 MB of garbage
 * and 40 % of everything the memory service allocated per hybrid search. Same values: PostgreSQL writes these arrays
 * unquoted (`{1.5,-2e-05,NaN,-Infinity,NULL}`) and `Number` reads each element as pg's `parseFloat` does.
 * Anything else (nested or quoted arrays) goes to pg's parser.
 */
import pg from 'pg';

/** float4[] and float8[] (pg_type.oid). */
const FLOAT4_ARRAY = 1021;
const FLOAT8_ARRAY = 1022;

/** pg's parsers, by type oid. */
const builtin = pg.types.getTypeParser as (
  oid: number,
  format?: 'text' | 'binary',
) => (value: string) => unknown;

/** A one-dimensional array of unquoted elements: what PostgreSQL prints for real[] and float8[]. */
const FLAT = /^\{[^{}"\\]*\}$/;

export function parseFloatArray(text: string): (number | null)[] {
  if (!FLAT.test(text)) return builtin(FLOAT8_ARRAY, 'text')(text) as (number | null)[];
  if (text.length === 2) return [];
  const parts = text.slice(1, -1).split(',');
  const out = new Array<number | null>(parts.length);
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i]!;
    out[i] = p === 'NULL' ? null : Number(p);
  }
  return out;
}

/** The `types` of every pool and client this runtime opens. */
export const pgTypes = {
  getTypeParser(oid: number, format?: 'text' | 'binary'): (value: string) => unknown {
    if ((format ?? 'text') === 'text' && (oid === FLOAT4_ARRAY || oid === FLOAT8_ARRAY))
      return parseFloatArray;
    return builtin(oid, format);
  },
};

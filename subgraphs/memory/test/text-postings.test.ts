/**
 * The copy's full-text postings (src/vector-index/text-postings.ts) against PostgreSQL itself, on whichever driver
 * the suite runs (PGlite, and PostgreSQL 15 in CI): for generated documents and websearch queries, the chunks
 * matched in process are exactly those `tsv @@ query` matches, and each rank is `ts_rank_cd(tsv, query, 32)` to the
 * bit (its float4 bytes). Documents repeat words, hold stop words, forms that stem alike, and weights (setweight);
 * queries use OR, NOT, repeats, stop words, and what must be left to PostgreSQL (phrases, hyphenated words,
 * prefixes, weights, a lone NOT, nothing but stop words), which parseTsquery must refuse. Then the postings through
 * churn: texts replaced, cleared, moved between slots, and compacted, against a rebuilt reference.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mulberry32 } from '../../../test/fault-proxy/src/prng.js';
import { parseTsquery, TextPostings, type TextQuery } from '../src/vector-index/text-postings.js';
import { startMemoryHarness, type MemoryHarness } from './harness.js';

let h: MemoryHarness;
beforeAll(async () => {
  h = await startMemoryHarness();
});
afterAll(async () => {
  await h?.close();
});

const random = mulberry32(2718);
const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
/** Few words, so queries match often and covers overlap; two pairs stem alike; stop words leave gaps. */
const WORDS = ['cat', 'cats', 'dog', 'run', 'running', 'mat', 'zebra', 'quokka', 'émigré', 'naïve'];
const STOP = ['the', 'a', 'of', 'and', 'with'];

function document(): string {
  const n = Math.floor(random() * 40);
  return Array.from({ length: n }, () => (random() < 0.2 ? pick(STOP) : pick(WORDS))).join(' ');
}

function websearch(): string {
  const n = 1 + Math.floor(random() * 5);
  const terms: string[] = [];
  for (let i = 0; i < n; i++) {
    const r = random();
    const word = pick(WORDS);
    if (r < 0.15) terms.push('or');
    else if (r < 0.3) terms.push(`-${word}`);
    else if (r < 0.35) terms.push(pick(STOP));
    else terms.push(word);
  }
  return terms.join(' ');
}

interface Pair {
  doc: number;
  query: number;
  matches: boolean;
  rank: number;
}

/** The tsvectors and tsqueries as PostgreSQL sends them, and its verdict on every pair. */
async function postgres(
  docs: readonly string[],
  weights: readonly string[],
  queries: readonly string[],
  to: 'websearch' | 'tsquery',
): Promise<{ tsv: Uint8Array[]; tsq: Uint8Array[]; pairs: Pair[] }> {
  const query = to === 'websearch' ? `websearch_to_tsquery('english', t)` : `to_tsquery('english', t)`;
  const d = await h.db.query<{ v: Uint8Array }>(
    `SELECT tsvectorsend(CASE WHEN w = '' THEN to_tsvector('english', t)
                              ELSE setweight(to_tsvector('english', t), w::"char") || to_tsvector('english', t) END) AS v
       FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS x(t, w, i) ORDER BY i`,
    [docs, weights],
  );
  const q = await h.db.query<{ q: Uint8Array }>(
    `SELECT tsquerysend(${query}) AS q FROM unnest($1::text[]) WITH ORDINALITY AS x(t, i) ORDER BY i`,
    [queries],
  );
  const r = await h.db.query<{ d: number; q: number; m: boolean; r: Uint8Array }>(
    `WITH d AS MATERIALIZED (SELECT i, CASE WHEN w = '' THEN to_tsvector('english', t)
                               ELSE setweight(to_tsvector('english', t), w::"char") || to_tsvector('english', t) END AS v
                  FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS x(t, w, i)),
          q AS MATERIALIZED (SELECT i, ${query} AS q FROM unnest($3::text[]) WITH ORDINALITY AS x(t, i))
     SELECT d.i::int - 1 AS d, q.i::int - 1 AS q, d.v @@ q.q AS m, float4send(ts_rank_cd(d.v, q.q, 32)) AS r
       FROM d CROSS JOIN q`,
    [docs, weights, queries],
  );
  return {
    tsv: d.rows.map((row) => row.v),
    tsq: q.rows.map((row) => row.q),
    pairs: r.rows.map((row) => ({
      doc: row.d,
      query: row.q,
      matches: row.m,
      rank: new DataView(row.r.buffer, row.r.byteOffset, 4).getFloat32(0),
    })),
  };
}

/** One chunk's tsvectorsend as TextPostings.set takes a record's chunks: after its 32-bit length. */
function framed(...chunks: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + 4 + c.byteLength, 0));
  const view = new DataView(out.buffer);
  let o = 0;
  for (const c of chunks) {
    view.setInt32(o, c.byteLength);
    out.set(c, o + 4);
    o += 4 + c.byteLength;
  }
  return out;
}

/** What the postings match: slot → best rank. */
function matched(postings: TextPostings, q: TextQuery): Map<number, number> {
  const hits = postings.match(q);
  const out = new Map<number, number>();
  for (let i = 0; i < hits.n; i++) {
    const slot = hits.slots[i]!;
    out.set(slot, Math.max(out.get(slot) ?? -1, hits.ranks[i]!));
  }
  return out;
}

describe('TextPostings against PostgreSQL', () => {
  it('matches what @@ matches and ranks as ts_rank_cd(tsv, q, 32) to the bit, on 400 documents × 200 queries', async () => {
    // The first document holds none of the words: what matches it matches a chunk without the query's lexemes.
    // Two are past PostgreSQL's last position (16,383): the words there share it, so covers overlap and ties between
    // lexemes at one position are broken by their order.
    const long = (tail: string) => `${'filler '.repeat(16_380)}${tail}`;
    const docs = [
      'xylophone',
      long('cat dog zebra mat cat run quokka dog'),
      long('quokka mat dog cats running zebra the mat'),
      ...Array.from({ length: 397 }, document),
    ];
    // A fifth of the documents carry a weighted copy of their words (setweight(…, 'A' | 'B' | 'C') || …).
    const weights = docs.map(() => (random() < 0.2 ? pick(['A', 'B', 'C']) : ''));
    const queries = Array.from({ length: 200 }, websearch);
    const pg = await postgres(docs, weights, queries, 'websearch');
    const postings = new TextPostings();
    pg.tsv.forEach((v, slot) => postings.set(slot, framed(v)));
    let served = 0;
    let compared = 0;
    let matches = 0;
    const refused = new Set<number>();
    const parsed = pg.tsq.map((bytes, j) => {
      const q = parseTsquery(bytes);
      if (q) served++;
      else refused.add(j);
      return q;
    });
    const ours = parsed.map((q) => (q ? matched(postings, q) : null));
    for (const pair of pg.pairs) {
      const mine = ours[pair.query];
      if (!mine) continue;
      compared++;
      const rank = mine.get(pair.doc);
      const where = `document ${JSON.stringify(docs[pair.doc])} (${weights[pair.doc] || 'D'}), query ${JSON.stringify(queries[pair.query])}`;
      expect(rank !== undefined, where).toBe(pair.matches);
      if (pair.matches) {
        matches++;
        expect(Object.is(rank, pair.rank), `${where}: ${rank} vs PostgreSQL's ${pair.rank}`).toBe(true);
      }
    }
    // Refused only what PostgreSQL must match: stop words alone (an empty query), or a query that matches a chunk
    // holding none of its lexemes (`-cat`, `mat or -cat`). websearch makes no phrase of these words.
    for (const j of refused) {
      const empty = new DataView(pg.tsq[j]!.buffer, pg.tsq[j]!.byteOffset).getInt32(0) === 0;
      const matchesNone = pg.pairs.find((p) => p.doc === 0 && p.query === j)!.matches;
      expect(empty || matchesNone, `refused ${JSON.stringify(queries[j])}`).toBe(true);
    }
    expect(served).toBeGreaterThan(150);
    expect(compared).toBe(served * docs.length);
    expect(matches).toBeGreaterThan(10_000);
  });

  it('refuses phrases, hyphenated words, prefixes, weights, a lone NOT and stop words alone', async () => {
    const websearchRefused = ['"cat dog"', 'e-mail cat', '-cat', 'the a of', '-cat or -dog', 'cat or -dog'];
    const w = await postgres([''], [''], websearchRefused, 'websearch');
    w.tsq.forEach((q, j) => expect(parseTsquery(q), websearchRefused[j]).toBeNull());
    const tsqueryRefused = ['cat:*', 'cat:A & dog', 'cat <-> dog', 'cat <2> dog', '!(cat & dog)'];
    const t = await postgres([''], [''], tsqueryRefused, 'tsquery');
    t.tsq.forEach((q, j) => expect(parseTsquery(q), tsqueryRefused[j]).toBeNull());
    // And serves these, with their distinct lexemes once each.
    const servedQueries = ['cat & !dog', 'cats | cat', '(cat | dog) & !(zebra & mat)'];
    const s = await postgres([''], [''], servedQueries, 'tsquery');
    expect(s.tsq.map((q) => parseTsquery(q)?.lexemes)).toEqual([
      ['dog', 'cat'],
      ['cat'],
      ['mat', 'zebra', 'dog', 'cat'],
    ]);
  });

  it('keeps its matches and ranks through replaced, cleared and moved texts, and compactions', async () => {
    const docs = Array.from({ length: 300 }, document);
    const pg = await postgres(
      docs,
      docs.map(() => ''),
      ['cat', 'dog or zebra', 'run -mat', 'quokka cats'],
      'websearch',
    );
    const queries = pg.tsq.map((q) => parseTsquery(q)!);
    // Slot → its chunks (indexes into docs); the reference rebuilds postings from it.
    const model = new Map<number, number[]>();
    const postings = new TextPostings(64);
    const slots = 60;
    let compactions = 0;
    for (let step = 0; step < 3000; step++) {
      const handles = postings.handleCount;
      const slot = Math.floor(random() * slots);
      const r = random();
      if (r < 0.6) {
        const chunks = Array.from({ length: 1 + Math.floor(random() * 3) }, () =>
          Math.floor(random() * docs.length),
        );
        postings.set(slot, framed(...chunks.map((c) => pg.tsv[c]!)));
        model.set(slot, chunks);
      } else if (r < 0.8) {
        postings.clear(slot);
        model.delete(slot);
      } else {
        // As FlatIndex.remove does: the slot's text goes, and the last slot's moves into it.
        const last = Math.max(-1, ...model.keys());
        postings.clear(slot);
        model.delete(slot);
        if (last > slot) {
          postings.move(last, slot);
          model.set(slot, model.get(last)!);
          model.delete(last);
        }
      }
      if (step % 100 === 99) {
        const reference = new TextPostings();
        for (const [s, chunks] of model) reference.set(s, framed(...chunks.map((c) => pg.tsv[c]!)));
        for (const q of queries) expect(matched(postings, q)).toEqual(matched(reference, q));
        expect(postings.postings).toBe(reference.postings);
      }
      if (handles > postings.handleCount) compactions++;
    }
    expect(compactions).toBeGreaterThan(5);
  });
});

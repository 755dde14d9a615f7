/**
 * FlatIndex, the in-process copy's data structure, against a brute-force reference written the obvious way (a list
 * of records, filter, score, sort): the same hits in the same order with the same scores (to the bit), under
 * filters, keyset positions, hybrid text scores, and after a seeded random mix of inserts, replacements and
 * removals (removal moves the last slot into the hole).
 */
import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../../test/fault-proxy/src/prng.js';
import {
  encodeTextMatches,
  type TextMatches,
  FlatIndex,
  toReal,
  norm32,
  type IndexedRecord,
  type ScanFilter,
  type ScanQuery,
} from '../src/vector-index/flat-index.js';

const DIM = 6;
const KINDS = ['note', 'incident', 'fact'];
const AUTHORS = ['u1', 'u2', 'device:d1'];
const TAGS = ['red', 'green', 'blue'];

/** A UUID whose order is n's (the copy's ids are UUIDs). */
const uid = (n: number) => `00000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;

/** A hybrid query's text matches, each record's best rank (a 32-bit float, as sent) kept for the reference. */
const texts = new WeakMap<readonly Uint8Array[], Map<string, number>>();
function textOf(entries: Iterable<readonly [string, number]>, weight: number, perPart?: number) {
  const list = [...entries];
  const parts = encodeTextMatches(list, perPart);
  const best = new Map<string, number>();
  for (const [id, rank] of list) best.set(id, Math.max(Math.fround(rank), best.get(id) ?? -Infinity));
  texts.set(parts, best);
  return { parts, weight };
}

/**
 * Matching chunks as PostgreSQL sends them: one to three per chosen record, each with its own rank, in random
 * order (a record's chunks apart), and chunks of records the copy does not hold.
 */
function chunkMatches(random: () => number, ids: readonly string[], share: number): [string, number][] {
  const entries: [string, number][] = [];
  for (const id of ids) {
    if (random() >= share) continue;
    const chunks = 1 + Math.floor(random() * 3);
    for (let c = 0; c < chunks; c++) entries.push([id, random()]);
  }
  for (let i = 0; i < 5; i++) entries.push([uid(5_000_000 + Math.floor(random() * 1000)), random()]);
  for (let i = entries.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [entries[i], entries[j]] = [entries[j]!, entries[i]!];
  }
  return entries;
}

function makeRecord(random: () => number, id: string): IndexedRecord {
  const embedding = Float32Array.from({ length: DIM }, () => random() * 2 - 1);
  return {
    id,
    embedding,
    norm: norm32([...embedding]),
    kind: KINDS[Math.floor(random() * KINDS.length)]!,
    author: AUTHORS[Math.floor(random() * AUTHORS.length)]!,
    tags: TAGS.filter(() => random() < 0.4),
    updatedUs: 1_000_000 + Math.floor(random() * 1000),
    expiresUs: random() < 0.2 ? 1_000_000 + Math.floor(random() * 1000) : Infinity,
  };
}

/** The reference: SQL's formula, in SQL's order of operations, over a plain list. */
function reference(records: Map<string, IndexedRecord>, q: ScanQuery) {
  const f = q.filter;
  const qn = norm32([...q.embedding]);
  const hits = [];
  for (const r of records.values()) {
    if (!(r.expiresUs > f.nowUs)) continue;
    if (f.kind != null && r.kind !== f.kind) continue;
    if (f.tag != null && !r.tags.includes(f.tag)) continue;
    if (f.authorId != null && r.author !== f.authorId) continue;
    if (f.updatedSinceUs != null && r.updatedUs < f.updatedSinceUs) continue;
    let textScore: number | null = null;
    if (q.text) {
      const t = texts.get((q.text as TextMatches).parts)!.get(r.id);
      if (t === undefined) continue;
      textScore = t;
    }
    let dot = 0;
    for (let j = 0; j < DIM; j++) dot += r.embedding[j]! * toReal(q.embedding[j]!);
    const vectorScore = (1 + dot / (r.norm * qn)) / 2;
    const score =
      textScore === null ? vectorScore : q.text!.weight * textScore + (1 - q.text!.weight) * vectorScore;
    if (q.after && !(score < q.after.value || (score === q.after.value && r.id > q.after.id))) continue;
    hits.push({ id: r.id, score, vectorScore, textScore });
  }
  hits.sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : 1));
  return { hits: hits.slice(0, q.k), matched: hits.length };
}

describe('FlatIndex', () => {
  it('gives the reference hits, scores and counts under filters, positions and text, through random churn', () => {
    const random = mulberry32(18);
    const index = new FlatIndex(DIM, 4);
    const records = new Map<string, IndexedRecord>();
    let next = 0;
    for (let step = 0; step < 40; step++) {
      // Churn: inserts, replacements of existing ids, removals (also of ids never stored).
      for (let i = 0; i < 60; i++) {
        const roll = random();
        const existing = [...records.keys()];
        if (roll < 0.55 || existing.length === 0) {
          const r = makeRecord(random, uid(next++));
          records.set(r.id, r);
          index.upsert(r);
        } else if (roll < 0.75) {
          const r = makeRecord(random, existing[Math.floor(random() * existing.length)]!);
          records.set(r.id, r);
          index.upsert(r);
        } else {
          const id = roll < 0.95 ? existing[Math.floor(random() * existing.length)]! : uid(1_000_000 + i);
          expect(index.remove(id)).toBe(records.delete(id));
        }
      }
      expect(index.count).toBe(records.size);
      const filters: ScanFilter[] = [
        { nowUs: 1_000_500 },
        { nowUs: 1_000_500, kind: KINDS[step % 3] },
        { nowUs: 1_000_500, tag: TAGS[step % 3], authorId: AUTHORS[(step + 1) % 3] },
        { nowUs: 1_000_000, updatedSinceUs: 1_000_400 },
        { nowUs: 0, kind: 'never-stored' },
      ];
      for (const filter of filters) {
        const embedding = Array.from({ length: DIM }, () => random() * 2 - 1);
        // Split into parts of 1 to 40 entries, as PostgreSQL's rows of them (a record's chunks in different parts).
        const text =
          step % 2 === 0
            ? null
            : textOf(chunkMatches(random, [...records.keys()], 0.3), 0.3, 1 + Math.floor(random() * 40));
        const first: ScanQuery = { embedding, filter, text, k: 7 };
        const want = reference(records, first);
        const got = index.scan(first);
        expect(got).toEqual(want);
        // Page 2 from page 1's last hit.
        const last = got.hits.at(-1);
        if (last) {
          const second: ScanQuery = { ...first, after: { value: last.score, id: last.id } };
          expect(index.scan(second)).toEqual(reference(records, second));
        }
      }
    }
  });

  it('scores past the block of gathered slots and every remainder of eight alike, with and without text', () => {
    // The scan gathers accepted slots in blocks of 1,024 and scores eight at a time: sizes around those edges, every
    // hit kept (k = all), so each score is compared with the reference's.
    const random = mulberry32(1024);
    for (const size of [1, 3, 7, 8, 9, 1023, 1024, 1025, 2051]) {
      const index = new FlatIndex(DIM);
      const records = new Map<string, IndexedRecord>();
      for (let i = 0; i < size; i++) {
        const r = { ...makeRecord(random, uid(i)), expiresUs: Infinity };
        records.set(r.id, r);
        index.upsert(r);
      }
      const embedding = Array.from({ length: DIM }, () => random() * 2 - 1);
      const scores = chunkMatches(random, [...records.keys()], 0.7);
      for (const q of [
        { embedding, filter: { nowUs: 0 }, k: size },
        { embedding, filter: { nowUs: 0, kind: KINDS[0] }, k: size },
        { embedding, filter: { nowUs: 0 }, text: textOf(scores, 0.4), k: size },
      ] satisfies ScanQuery[]) {
        const got = index.scan(q);
        expect(got).toEqual(reference(records, q));
        if (!q.text && !('kind' in q.filter)) expect(got.hits).toHaveLength(size);
      }
    }
  });

  it('scores a record with several matching chunks once, by its best chunk, and never again on a later page', () => {
    const index = new FlatIndex(2);
    const [a, b, c] = [uid(1), uid(2), uid(3)];
    for (const id of [a, b, c])
      index.upsert({ ...makeRecord(mulberry32(1), id), embedding: Float32Array.of(1, 0) });
    const embedding = [1, 0];
    // Weight 1: the score is the text score; a's chunks straddle b's.
    // Two entries to a part: a's best chunk is in the second part, its others in the first and third.
    const text = {
      parts: encodeTextMatches(
        [
          [a, 0.25],
          [b, 0.5],
          [a, 0.75],
          [c, 0.125],
          [a, 0.5],
        ],
        2,
      ),
      weight: 1,
    };
    const filter = { nowUs: 0 };
    const first = index.scan({ embedding, filter, text, k: 10 });
    expect(first.hits.map((h) => [h.id, h.score, h.textScore])).toEqual([
      [a, 0.75, 0.75],
      [b, 0.5, 0.5],
      [c, 0.125, 0.125],
    ]);
    expect(first.matched).toBe(3);
    // After a's hit, a's lesser chunks (0.5 ties b's score, 0.25 is below it) must not bring a back.
    const next = index.scan({ embedding, filter, text, k: 10, after: { value: 0.75, id: a } });
    expect(next.hits.map((h) => h.id)).toEqual([b, c]);
    expect(next.matched).toBe(2);
  });

  it('breaks score ties by id, ascending, and pages through them without gaps or repeats', () => {
    const index = new FlatIndex(2);
    // The first words straddle 2^31 (uuid order is unsigned); the rest differ only in the last word.
    const ids = [
      uid(3),
      '80000000-0000-4000-8000-000000000000',
      uid(1),
      'ffffffff-ffff-4fff-bfff-ffffffffffff',
      uid(5),
      uid(2),
      '7fffffff-0000-4000-8000-000000000000',
      uid(4),
    ];
    for (const id of ids) {
      index.upsert({
        id,
        embedding: Float32Array.from([1, 0]),
        norm: 1,
        kind: 'k',
        author: 'a',
        tags: [],
        updatedUs: 0,
        expiresUs: Infinity,
      });
    }
    const seen: string[] = [];
    let after: { value: number; id: string } | null = null;
    for (;;) {
      const page = index.scan({ embedding: [1, 0], filter: { nowUs: 0 }, after, k: 2 });
      if (page.hits.length === 0) break;
      seen.push(...page.hits.map((h) => h.id));
      after = { value: page.hits.at(-1)!.score, id: page.hits.at(-1)!.id };
    }
    expect(seen).toEqual([...ids].sort());
  });

  it('finds every id it holds and none it does not through 20,000 inserts, removals and re-inserts', () => {
    // The id table (open addressing, linear probing, removal by moving later entries back) against a Set.
    const random = mulberry32(20_000);
    const index = new FlatIndex(2, 1);
    const held = new Set<string>();
    const r = (id: string): IndexedRecord => ({
      id,
      embedding: Float32Array.from([1, 1]),
      norm: Math.SQRT2,
      kind: 'k',
      author: 'a',
      tags: [],
      updatedUs: 0,
      expiresUs: Infinity,
    });
    // Random UUIDs (any word may have its high bit set) and sequential ones (differing in the last word only).
    const ids = Array.from({ length: 20_000 }, (_, i) =>
      i % 2 === 0
        ? uid(i)
        : [8, 4, 4, 4, 12]
            .map((n) => Array.from({ length: n }, () => Math.floor(random() * 16).toString(16)).join(''))
            .join('-'),
    );
    for (const id of ids) {
      index.upsert(r(id));
      held.add(id);
    }
    for (let round = 0; round < 3; round++) {
      for (const id of ids) {
        if (random() < 0.5) expect(index.remove(id)).toBe(held.delete(id));
      }
      for (const id of ids) {
        if (random() < 0.25 && !held.has(id)) {
          index.upsert(r(id));
          held.add(id);
        }
      }
      expect(index.count).toBe(held.size);
      for (const id of ids) expect(index.has(id)).toBe(held.has(id));
      const all = index.scan({ embedding: [1, 1], filter: { nowUs: 0 }, k: ids.length });
      expect(all.hits.map((h) => h.id)).toEqual([...held].sort());
    }
  });

  it('refuses embeddings of another dimension and grows past its first capacity', () => {
    const index = new FlatIndex(3, 1);
    const r = (id: string, v: number[]): IndexedRecord => ({
      id,
      embedding: Float32Array.from(v),
      norm: norm32(v),
      kind: 'k',
      author: 'a',
      tags: ['t', 't'],
      updatedUs: 0,
      expiresUs: Infinity,
    });
    expect(() => index.upsert(r(uid(0), [1, 2]))).toThrow(RangeError);
    expect(() => index.upsert(r('not-a-uuid', [1, 2, 3]))).toThrow(/not a UUID/);
    expect(() => index.remove('x')).toThrow(RangeError);
    expect(() => index.scan({ embedding: [1], filter: { nowUs: 0 }, k: 1 })).toThrow(RangeError);
    const before = index.bytes;
    for (let i = 0; i < 100; i++) index.upsert(r(uid(i), [i + 1, 1, 0]));
    expect(index.count).toBe(100);
    expect(index.bytes).toBeGreaterThan(before);
    expect(index.scan({ embedding: [1, 0, 0], filter: { nowUs: 0, tag: 't' }, k: 1 }).hits[0]!.id).toBe(
      uid(99),
    );
    // Uppercase ids are the same records (PostgreSQL's uuid reads either); hits name them as PostgreSQL prints them.
    expect(index.has(uid(42).toUpperCase())).toBe(true);
    expect(index.remove(uid(42).toUpperCase())).toBe(true);
    expect(index.has(uid(42))).toBe(false);
    expect(index.count).toBe(99);
  });
});

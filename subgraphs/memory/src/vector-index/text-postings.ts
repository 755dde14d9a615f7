/**
 * Full-text matching and ranking in process, for hybrid search on the in-process copy (`EXACT_IN_MEMORY`): an
 * inverted index of the copy's records' chunks, built from their tsvectors as PostgreSQL stores them, and
 * PostgreSQL's `tsv @@ query` and `ts_rank_cd(tsv, query, 32)` computed over it, equal to the bit
 * (test/text-postings.test.ts compares both with PostgreSQL's own on generated documents and queries).
 *
 * Why: PostgreSQL answers a hybrid search's text part by visiting every matching chunk's heap page (a one-word
 * query at 1,000,000 records: ~20,000 random pages, 40-60 ms of the server's CPU on a machine with slow memory).
 * Here the matching chunks of a lexeme are one sequential list, with their positions inline.
 *
 * - Lexemes and positions come from PostgreSQL (tsvectorsend of `chunks.tsv`, tsquerysend of
 *   `websearch_to_tsquery`), so parsing, stemming, stop words and configuration stay PostgreSQL's.
 * - A query is served here when it is made of lexemes, AND, OR and NOT, with at most 16 distinct lexemes and no
 *   match for a chunk that holds none of them. Phrases (`"…"`, hyphenated words: `<->`), weights and prefixes
 *   (never from websearch_to_tsquery), and queries such as `-word` alone are left to PostgreSQL (parseTsquery
 *   returns null).
 *
 * Layout: a posting list per lexeme, a Uint16Array of entries [handle high, handle low, npos, positions…], with
 * the positions as PostgreSQL's WordEntryPos (weight in the top two bits). A chunk is a handle (a number given in
 * increasing order, so lists stay sorted by handle as they grow at the end); `owner[handle]` is its record's slot
 * in the copy, or −1 once the record's text is replaced or removed. Dead entries are skipped until they outnumber
 * the live ones, then every list is rewritten without them and the handles renumbered (compact).
 */

import { Lexicon } from './lexicon.js';

const QI_VAL = 1;
const QI_OPR = 2;
const OP_NOT = 1;
const OP_AND = 2;
const OP_OR = 3;

/** The most distinct lexemes a query served here may have (its truth table has 2^n entries). */
const MAX_QUERY_LEXEMES = 16;

/**
 * ts_rank_cd's weights for the classes D, C, B, A (PostgreSQL's float4 defaults), inverted in float8 as
 * calc_rank_cd does.
 */
const INVERSE_WEIGHTS = Float64Array.from([0.1, 0.2, 0.4, 1.0], (w) => 1 / Math.fround(w));

/** A query as matched here. */
export interface TextQuery {
  /** Its distinct lexemes; lexeme i is bit i of a mask. */
  lexemes: readonly string[];
  /** truth[mask] is 1 when the query holds for a chunk holding exactly the lexemes of mask. */
  truth: Uint8Array;
  /**
   * bitOfOrder[r] is the bit of the lexeme that comes r-th in PostgreSQL's lexeme order (bytes, a prefix first):
   * the order of a tsvector's entries, which breaks ties between lexemes at one position when ranking.
   */
  bitOfOrder: Int32Array;
  /** orderOfBit[i]: lexeme i's place in that order. */
  orderOfBit: Int32Array;
}

type Node =
  { op: 'val'; bit: number } | { op: 'not'; arg: Node } | { op: 'and' | 'or'; left: Node; right: Node };

/**
 * The query tsquerysend wrote, when it can be matched here; null when PostgreSQL must match it (see the file's
 * comment). Throws on bytes that are not a tsquery.
 */
export function parseTsquery(bytes: Uint8Array): TextQuery | null {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const size = view.getInt32(0);
  if (size <= 0) return null;
  type Item = { type: 'val'; lexeme: string } | { type: 'opr'; oper: number };
  const items: Item[] = [];
  let o = 4;
  for (let i = 0; i < size; i++) {
    const type = bytes[o++];
    if (type === QI_VAL) {
      const weight = bytes[o++];
      const prefix = bytes[o++];
      const end = bytes.indexOf(0, o);
      if (end < 0) throw new RangeError('tsquery: operand without its terminating NUL');
      if (weight !== 0 || prefix !== 0) return null;
      items.push({ type: 'val', lexeme: utf8(bytes, o, end) });
      o = end + 1;
    } else if (type === QI_OPR) {
      const oper = bytes[o++]!;
      if (oper !== OP_NOT && oper !== OP_AND && oper !== OP_OR) return null; // a phrase, or unknown
      items.push({ type: 'opr', oper });
    } else {
      return null;
    }
  }
  if (o !== bytes.byteLength) throw new RangeError('tsquery: trailing bytes');
  const bits = new Map<string, number>();
  // Polish notation as PostgreSQL keeps it: an operator, then its right operand, then its left.
  const node = (i: number): [Node, number] => {
    const item = items[i];
    if (!item) throw new RangeError('tsquery: an operator lacks an operand');
    if (item.type === 'val') {
      let bit = bits.get(item.lexeme);
      if (bit === undefined) bits.set(item.lexeme, (bit = bits.size));
      return [{ op: 'val', bit }, i + 1];
    }
    const [right, next] = node(i + 1);
    if (item.oper === OP_NOT) return [{ op: 'not', arg: right }, next];
    const [left, after] = node(next);
    return [{ op: item.oper === OP_AND ? 'and' : 'or', left, right }, after];
  };
  const [root, end] = node(0);
  if (end !== items.length) throw new RangeError('tsquery: items left over');
  if (bits.size > MAX_QUERY_LEXEMES) return null;
  const lexemes = [...bits.keys()];
  const truth = new Uint8Array(1 << lexemes.length);
  const evaluate = (n: Node, mask: number): boolean =>
    n.op === 'val'
      ? (mask & (1 << n.bit)) !== 0
      : n.op === 'not'
        ? !evaluate(n.arg, mask)
        : n.op === 'and'
          ? evaluate(n.left, mask) && evaluate(n.right, mask)
          : evaluate(n.left, mask) || evaluate(n.right, mask);
  for (let mask = 0; mask < truth.length; mask++) truth[mask] = evaluate(root, mask) ? 1 : 0;
  // A chunk with none of the lexemes would match: every chunk is a candidate, which PostgreSQL's index handles.
  if (truth[0] === 1) return null;
  const encoded = lexemes.map((l) => Buffer.from(l, 'utf8'));
  const bitOfOrder = Int32Array.from(lexemes.keys()).sort((a, b) => Buffer.compare(encoded[a]!, encoded[b]!));
  const orderOfBit = new Int32Array(lexemes.length);
  bitOfOrder.forEach((bit, order) => (orderOfBit[bit] = order));
  return { lexemes, truth, bitOfOrder, orderOfBit };
}

function utf8(bytes: Uint8Array, from: number, to: number): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset + from, to - from).toString('utf8');
}

/** The matching chunks of a query: their records' slots and ranks (float4 values), in no particular order. */
export interface TextHits {
  slots: Int32Array;
  ranks: Float64Array;
  n: number;
}

const EMPTY = new Uint16Array(0);
/** Dead entries below this never trigger a compaction (small copies rewrite nothing). */
const COMPACT_FLOOR = 1 << 16;
/** Estimated heap bytes of a term's posting list object beyond its elements. */
const LIST_OVERHEAD = 96;
/** Above this many positions a chunk's are sorted by the engine's sort, below by insertion (no allocation). */
const INSERTION_SORT_MAX = 64;

export class TextPostings {
  private readonly lexicon = new Lexicon();
  private lists: Uint16Array[] = [];
  private lengths: number[] = [];
  /** handle → the slot of its record, or −1. */
  private owner = new Int32Array(1024).fill(-1);
  private handles = 0;
  /** Per slot: its chunks' first handle and count, and their entries (postings) in all. */
  private firstOf = new Int32Array(0);
  private countOf = new Int32Array(0);
  private postingsOf = new Int32Array(0);
  private live = 0;
  private dead = 0;
  private listBytes = 0;
  private scratch = new Int32Array(256);
  private hitSlots = new Int32Array(16);
  private hitRanks = new Float64Array(16);

  /** compactFloor: dead entries below this never trigger a compaction (tests pass small ones). */
  constructor(private readonly compactFloor = COMPACT_FLOOR) {}

  /** Approximate heap bytes held. */
  get bytes(): number {
    return (
      this.listBytes +
      LIST_OVERHEAD * this.lists.length +
      this.lexicon.bytes +
      4 * this.owner.length +
      12 * this.firstOf.length +
      12 * this.hitSlots.length
    );
  }

  /** Posting entries of live chunks (tests and stats). */
  get postings(): number {
    return this.live;
  }

  /** Handles given out since the last compaction (tests: a compaction renumbers them densely). */
  get handleCount(): number {
    return this.handles;
  }

  /** Room for slots 0 … capacity − 1 (the copy grows its slots). */
  growSlots(capacity: number): void {
    const grow = (from: Int32Array) => {
      const to = new Int32Array(capacity);
      to.set(from.subarray(0, Math.min(from.length, capacity)));
      return to;
    };
    this.firstOf = grow(this.firstOf);
    this.countOf = grow(this.countOf);
    this.postingsOf = grow(this.postingsOf);
  }

  /**
   * Replaces slot `slot`'s text with `data`: its chunks' tsvectors as tsvectorsend writes them, each after its
   * length as a 32-bit big-endian integer (sync.ts reads them so); null or empty for none.
   */
  set(slot: number, data: Uint8Array | null): void {
    if (slot >= this.firstOf.length) this.growSlots(Math.max(slot + 1, 2 * this.firstOf.length));
    this.clear(slot);
    if (!data || data.byteLength === 0) return;
    const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
    const first = this.handles;
    let count = 0;
    let postings = 0;
    for (let o = 0; o < data.byteLength;) {
      const length = view.getInt32(o);
      const end = o + 4 + length;
      if (length < 4 || end > data.byteLength) throw new RangeError('text: a chunk overruns its record');
      const handle = this.handles++;
      count++;
      if (handle >= this.owner.length) this.growOwner(handle + 1);
      this.owner[handle] = slot;
      postings += this.addChunk(data, view, o + 4, end, handle);
      o = end;
    }
    this.firstOf[slot] = first;
    this.countOf[slot] = count;
    this.postingsOf[slot] = postings;
    this.live += postings;
  }

  /** Drops slot `slot`'s text (its entries become dead). */
  clear(slot: number): void {
    const count = this.countOf[slot] ?? 0;
    if (count === 0) return;
    const first = this.firstOf[slot]!;
    for (let h = first; h < first + count; h++) this.owner[h] = -1;
    this.dead += this.postingsOf[slot]!;
    this.live -= this.postingsOf[slot]!;
    this.countOf[slot] = 0;
    this.postingsOf[slot] = 0;
    if (this.dead > this.compactFloor && this.dead > this.live) this.compact();
  }

  /** Slot `from`'s text now belongs to slot `to` (the copy moved its last slot into a hole); `to` had none. */
  move(from: number, to: number): void {
    const count = this.countOf[from] ?? 0;
    if (count === 0) return;
    const first = this.firstOf[from]!;
    for (let h = first; h < first + count; h++) this.owner[h] = to;
    this.firstOf[to] = first;
    this.countOf[to] = count;
    this.postingsOf[to] = this.postingsOf[from]!;
    this.countOf[from] = 0;
    this.postingsOf[from] = 0;
  }

  /** Gives back what the lists grew ahead of need (after a first load: up to half of them). */
  trim(): void {
    for (let t = 0; t < this.lists.length; t++) {
      const list = this.lists[t]!;
      const length = this.lengths[t]!;
      if (list.length === length) continue;
      this.listBytes -= 2 * (list.length - length);
      this.lists[t] = list.slice(0, length);
    }
  }

  private growHits(n: number): void {
    const slots = new Int32Array(n);
    slots.set(this.hitSlots);
    const ranks = new Float64Array(n);
    ranks.set(this.hitRanks);
    this.hitSlots = slots;
    this.hitRanks = ranks;
  }

  /**
   * Every chunk the query matches: its record's slot and ts_rank_cd(tsv, query, 32). The arrays are the postings'
   * own, valid until the next match.
   */
  match(q: TextQuery): TextHits {
    const n = q.lexemes.length;
    const lists: Uint16Array[] = [];
    const ends = new Int32Array(n);
    const at = new Int32Array(n);
    let bound = 0;
    for (let i = 0; i < n; i++) {
      const t = this.lexicon.id(q.lexemes[i]!);
      lists.push(t < 0 ? EMPTY : this.lists[t]!);
      ends[i] = t < 0 ? 0 : this.lengths[t]!;
      bound += ends[i]! >>> 2; // an entry takes at least four values
    }
    // The hits go to arrays kept from one match to the next (grown, never shrunk): a search allocates nothing per
    // match, so that it does not drive the collector (whose full pauses were hybrid's slowest searches).
    if (this.hitSlots.length < bound) this.growHits(Math.min(bound, 1 << 20));
    let slots = this.hitSlots;
    let ranks = this.hitRanks;
    let found = 0;
    const owner = this.owner;
    const truth = q.truth;
    const starts = new Int32Array(n);
    const counts = new Int32Array(n);
    for (;;) {
      // The smallest handle at the lists' heads, and which lists have it.
      let handle = Infinity;
      for (let i = 0; i < n; i++) {
        if (at[i]! >= ends[i]!) continue;
        const list = lists[i]!;
        const h = list[at[i]!]! * 65536 + list[at[i]! + 1]!;
        if (h < handle) handle = h;
      }
      if (handle === Infinity) break;
      let mask = 0;
      for (let i = 0; i < n; i++) {
        const a = at[i]!;
        if (a >= ends[i]!) continue;
        const list = lists[i]!;
        if (list[a]! * 65536 + list[a + 1]! !== handle) continue;
        mask |= 1 << i;
        counts[i] = list[a + 2]!;
        starts[i] = a + 3;
        at[i] = a + 3 + counts[i]!;
      }
      const slot = owner[handle]!;
      if (slot < 0 || truth[mask] !== 1) continue;
      if (found === slots.length) {
        this.growHits(2 * found);
        slots = this.hitSlots;
        ranks = this.hitRanks;
      }
      slots[found] = slot;
      ranks[found++] = this.rank(q, mask, lists, starts, counts);
    }
    return { slots, ranks, n: found };
  }

  /**
   * ts_rank_cd(tsv, query, 32) of one chunk, from the positions of the query's lexemes it holds, as PostgreSQL's
   * calc_rank_cd computes it: the positions in order (position, weight, lexeme order), covers found by its Cover,
   * each adding (entries / Σ 1/weight) / (1 + noise), in float8; then rank / (rank + 1), as a float4.
   */
  private rank(
    q: TextQuery,
    mask: number,
    lists: Uint16Array[],
    starts: Int32Array,
    counts: Int32Array,
  ): number {
    const lexemes = q.lexemes.length;
    let total = 0;
    for (let i = 0; i < lexemes; i++) if (mask & (1 << i)) total += counts[i]!;
    if (total === 0) return 0;
    if (this.scratch.length < total) this.scratch = new Int32Array(2 * total);
    // Each entry as one sortable number: position (14 bits), weight (2), lexeme order (4). A lexeme's positions
    // come in order, so insertion moves little; many positions go to the engine's sort.
    const doc = this.scratch;
    const insert = total <= INSERTION_SORT_MAX;
    let n = 0;
    for (let i = 0; i < lexemes; i++) {
      if (!(mask & (1 << i))) continue;
      const list = lists[i]!;
      const order = q.orderOfBit[i]!;
      for (let j = starts[i]!, end = starts[i]! + counts[i]!; j < end; j++) {
        const wep = list[j]!;
        const key = ((wep & 0x3fff) << 6) | ((wep >>> 14) << 4) | order;
        let k = n++;
        if (insert) {
          for (; k > 0 && doc[k - 1]! > key; k--) doc[k] = doc[k - 1]!;
        }
        doc[k] = key;
      }
    }
    if (!insert) doc.subarray(0, n).sort();
    const truth = q.truth;
    const bitOfOrder = q.bitOfOrder;
    let wdoc = 0;
    let from = 0; // Cover's ext->pos
    for (;;) {
      // Cover: the first entry at which the query holds, scanning up from `from`; then down from there to the
      // last entry at which it holds again. Tried from the next entry when that gives no cover.
      let seen = 0;
      let q2 = 0;
      let end = -1;
      for (let e = from; e < n; e++) {
        const key = doc[e]!;
        seen |= 1 << bitOfOrder[key & 15]!;
        if (truth[seen] === 1) {
          if (key >>> 6 > q2) {
            q2 = key >>> 6;
            end = e;
          }
          break;
        }
      }
      if (end < 0) break;
      let p = 0x7fffffff;
      let begin = -1;
      let e = end;
      seen = 0;
      for (; e >= from; e--) {
        const key = doc[e]!;
        seen |= 1 << bitOfOrder[key & 15]!;
        if (truth[seen] === 1) {
          if (key >>> 6 < p) {
            begin = e;
            p = key >>> 6;
          }
          break;
        }
      }
      if (p > q2) {
        from++;
        continue;
      }
      from = e + 1;
      let invSum = 0;
      for (let k = begin; k <= end; k++) invSum += INVERSE_WEIGHTS[(doc[k]! >>> 4) & 3]!;
      const cpos = (end - begin + 1) / invSum;
      let noise = q2 - p - (end - begin);
      if (noise < 0) noise = (end - begin) >>> 1;
      wdoc += cpos / (1 + noise);
    }
    return Math.fround(wdoc / (wdoc + 1));
  }

  /** Adds one chunk's tsvector (data[from, to)) under `handle`; returns its entries. */
  private addChunk(data: Uint8Array, view: DataView, from: number, to: number, handle: number): number {
    const lexemes = view.getInt32(from);
    let o = from + 4;
    const lexicon = this.lexicon;
    for (let i = 0; i < lexemes; i++) {
      const term = lexicon.addTerminated(data, o, to - 2);
      const end = lexicon.end;
      if (term === this.lists.length) {
        this.lists.push(EMPTY);
        this.lengths.push(0);
      }
      const npos = view.getUint16(end + 1);
      o = end + 3;
      if (o + 2 * npos > to) throw new RangeError('text: positions overrun their chunk');
      let list = this.lists[term]!;
      let length = this.lengths[term]!;
      if (length + 3 + npos > list.length) {
        const bigger = new Uint16Array(Math.max(8, Math.ceil(1.5 * list.length), length + 3 + npos));
        bigger.set(list.subarray(0, length));
        this.listBytes += 2 * (bigger.length - list.length);
        this.lists[term] = list = bigger;
      }
      list[length] = handle >>> 16;
      list[length + 1] = handle & 0xffff;
      list[length + 2] = npos;
      length += 3;
      for (let j = 0; j < npos; j++, o += 2) list[length++] = view.getUint16(o);
      this.lengths[term] = length;
    }
    if (o !== to) throw new RangeError('text: a chunk has bytes after its lexemes');
    return lexemes;
  }

  private growOwner(min: number): void {
    const bigger = new Int32Array(Math.max(min, 2 * this.owner.length)).fill(-1);
    bigger.set(this.owner);
    this.owner = bigger;
  }

  /** Rewrites every list without dead entries, renumbers handles densely, and forgets lexemes left with none. */
  private compact(): void {
    const renumber = new Int32Array(this.handles).fill(-1);
    let handles = 0;
    for (let h = 0; h < this.handles; h++) if (this.owner[h]! >= 0) renumber[h] = handles++;
    const owner = new Int32Array(Math.max(1024, handles)).fill(-1);
    for (let h = 0; h < this.handles; h++) if (renumber[h]! >= 0) owner[renumber[h]!] = this.owner[h]!;
    for (let slot = 0; slot < this.countOf.length; slot++) {
      if (this.countOf[slot]! > 0) this.firstOf[slot] = renumber[this.firstOf[slot]!]!;
    }
    this.listBytes = 0;
    const lengths = this.lengths;
    for (let t = 0; t < this.lists.length; t++) {
      const list = this.lists[t]!;
      const end = lengths[t]!;
      let w = 0;
      for (let r = 0; r < end;) {
        const npos = list[r + 2]!;
        const next = r + 3 + npos;
        const h = renumber[list[r]! * 65536 + list[r + 1]!]!;
        if (h >= 0) {
          list[w] = h >>> 16;
          list[w + 1] = h & 0xffff;
          list.copyWithin(w + 2, r + 2, next);
          w += 3 + npos;
        }
        r = next;
      }
      lengths[t] = w;
    }
    // Lexemes left without a chunk are forgotten; the rest keep their order.
    const terms = this.lexicon.retain((t) => lengths[t]! > 0);
    const lists: Uint16Array[] = [];
    const kept: number[] = [];
    for (let t = 0; t < this.lists.length; t++) {
      if (terms[t]! < 0) continue;
      const list = this.lists[t]!;
      const w = lengths[t]!;
      const trimmed = w < list.length / 2 ? list.slice(0, w) : list;
      lists.push(trimmed);
      kept.push(w);
      this.listBytes += 2 * trimmed.length;
    }
    this.lists = lists;
    this.lengths = kept;
    this.owner = owner;
    this.handles = handles;
    this.dead = 0;
  }
}

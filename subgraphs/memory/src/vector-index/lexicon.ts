/**
 * The postings' lexemes as bytes (UTF-8, as tsvectorsend writes them), numbered densely: an open-addressing table
 * over one byte pool, so that adding a chunk's ~40 lexemes makes no string and no Map entry per lexeme (at
 * 1,000,000 chunks a string per lexeme was most of a first load's time). The hash is seeded per lexicon, so that
 * lexemes a client writes cannot be chosen to collide.
 */
import { getRandomValues } from 'node:crypto';

export class Lexicon {
  private pool = new Uint8Array(4096);
  private used = 0;
  private starts = new Int32Array(64);
  private lengths = new Int32Array(64);
  private hashes = new Int32Array(64);
  private count = 0;
  /** Term ids, or −1 for empty; a power of two, at most half full. */
  private table = new Int32Array(128).fill(-1);
  private readonly seed = getRandomValues(new Uint32Array(1))[0]! | 0;
  /** Where the last addTerminated found its lexeme's NUL. */
  end = 0;

  get size(): number {
    return this.count;
  }

  get bytes(): number {
    return this.pool.length + 12 * this.starts.length + 4 * this.table.length;
  }

  /**
   * The id of the NUL-terminated lexeme at data[from …] (added if new); its NUL's index is left in `end`. Throws when
   * no NUL comes before `limit`.
   */
  addTerminated(data: Uint8Array, from: number, limit: number): number {
    let h = this.seed;
    let e = from;
    for (; e < limit; e++) {
      const b = data[e]!;
      if (b === 0) break;
      h = Math.imul(h ^ b, 0x01000193);
    }
    if (e >= limit) throw new RangeError('text: a lexeme overruns its chunk');
    this.end = e;
    h = mix(h);
    const found = this.find(data, from, e, h);
    return found >= 0 ? found : this.insert(data, from, e, h);
  }

  /** The id of a lexeme given as a string, or −1. */
  id(lexeme: string): number {
    const bytes = Buffer.from(lexeme, 'utf8');
    let h = this.seed;
    for (const b of bytes) h = Math.imul(h ^ b, 0x01000193);
    return this.find(bytes, 0, bytes.length, mix(h));
  }

  /** Keeps only the terms `keep` accepts, numbered densely in their order; returns old id → new id (or −1). */
  retain(keep: (id: number) => boolean): Int32Array {
    const renumber = new Int32Array(this.count).fill(-1);
    const old = { pool: this.pool, starts: this.starts, lengths: this.lengths, hashes: this.hashes };
    const n = this.count;
    let kept = 0;
    let bytes = 0;
    for (let t = 0; t < n; t++) {
      if (keep(t)) {
        renumber[t] = kept++;
        bytes += old.lengths[t]!;
      }
    }
    let capacity = 64;
    while (capacity < kept) capacity *= 2;
    this.pool = new Uint8Array(Math.max(4096, bytes));
    this.used = 0;
    this.starts = new Int32Array(capacity);
    this.lengths = new Int32Array(capacity);
    this.hashes = new Int32Array(capacity);
    this.count = 0;
    let size = 128;
    while (size < 2 * capacity) size *= 2;
    this.table = new Int32Array(size).fill(-1);
    for (let t = 0; t < n; t++) {
      if (renumber[t]! < 0) continue;
      const s = old.starts[t]!;
      this.insert(old.pool, s, s + old.lengths[t]!, old.hashes[t]!);
    }
    return renumber;
  }

  private find(data: Uint8Array, from: number, to: number, h: number): number {
    const mask = this.table.length - 1;
    const length = to - from;
    for (let i = h & mask; ; i = (i + 1) & mask) {
      const t = this.table[i]!;
      if (t < 0) return -1;
      if (this.hashes[t] !== h || this.lengths[t] !== length) continue;
      const s = this.starts[t]!;
      let k = 0;
      while (k < length && this.pool[s + k] === data[from + k]) k++;
      if (k === length) return t;
    }
  }

  private insert(data: Uint8Array, from: number, to: number, h: number): number {
    const length = to - from;
    if (this.used + length > this.pool.length) {
      const pool = new Uint8Array(Math.max(2 * this.pool.length, this.used + length));
      pool.set(this.pool.subarray(0, this.used));
      this.pool = pool;
    }
    this.pool.set(data.subarray(from, to), this.used);
    const t = this.count++;
    if (t === this.starts.length) {
      const grow = (a: Int32Array) => {
        const b = new Int32Array(2 * a.length);
        b.set(a);
        return b;
      };
      this.starts = grow(this.starts);
      this.lengths = grow(this.lengths);
      this.hashes = grow(this.hashes);
    }
    this.starts[t] = this.used;
    this.lengths[t] = length;
    this.hashes[t] = h;
    this.used += length;
    if (2 * this.count > this.table.length) {
      this.table = new Int32Array(2 * this.table.length).fill(-1);
      for (let u = 0; u < this.count; u++) this.link(u);
    } else {
      this.link(t);
    }
    return t;
  }

  private link(t: number): void {
    const mask = this.table.length - 1;
    let i = this.hashes[t]! & mask;
    while (this.table[i]! >= 0) i = (i + 1) & mask;
    this.table[i] = t;
  }
}

/** murmur3's finaliser: spreads the FNV hash's bits over the low ones the table uses. */
function mix(h: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/**
 * How long this machine's memory takes to answer a load that depends on the one before: a pointer chase through a
 * buffer of `mb` megabytes, one 4-byte link per 64-byte line, the lines in one random cycle (Sattolo's shuffle, seeded,
 * so every run chases the same order). Searches whose time is one random page after another (PostgreSQL's bitmap heap
 * scan, lookups in a large table) move with this number; scans that stream memory do not. Benchmarks record it beside
 * their latencies so runs on different machines, or the same machine on a busier day, can be told apart.
 */
import { mulberry32 } from '../../../test/fault-proxy/src/prng.js';
import { median } from '../auth/stats.js';

const LINE_WORDS = 16; // 64 bytes of Int32

/** Nanoseconds per dependent load, the median of `rounds` chases of `steps` loads each. */
export function memoryLatencyNs(mb: number, { steps = 1_000_000, rounds = 3 } = {}): number {
  if (!(mb > 0)) throw new RangeError(`memoryLatencyNs: mb must be positive (got ${mb})`);
  const lines = Math.max(2, Math.floor((mb * 2 ** 20) / 64));
  const order = new Uint32Array(lines);
  for (let i = 0; i < lines; i++) order[i] = i;
  const random = mulberry32(64);
  // Sattolo: a single cycle through every line, so the chase never falls into a short loop that stays in cache.
  for (let i = lines - 1; i > 0; i--) {
    const j = Math.floor(random() * i);
    const t = order[i]!;
    order[i] = order[j]!;
    order[j] = t;
  }
  const buffer = new Int32Array(lines * LINE_WORDS);
  for (let i = 0; i < lines; i++) buffer[order[i]! * LINE_WORDS] = order[(i + 1) % lines]! * LINE_WORDS;
  const results: number[] = [];
  let at = 0;
  for (let r = 0; r < rounds; r++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < steps; i++) at = buffer[at]!;
    results.push(Number(process.hrtime.bigint() - t0) / steps);
  }
  // `at` is read so the chase cannot be optimised away.
  if (at < 0) throw new Error('unreachable');
  return median(results);
}

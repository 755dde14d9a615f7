/** Seeded randomness: mulberry32, and a per-request seed so decisions do not depend on arrival order. */
import { createHash } from 'node:crypto';

/** mulberry32 (Tommy Ettinger's 32-bit generator): uniform numbers in [0, 1), fully determined by the seed. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The seed of one request's draws: the run's seed, what the request is (its fingerprint) and how many identical
 * requests came before it. Concurrent clients then meet the same faults on every run whatever the interleaving.
 */
export function requestSeed(seed: number, fingerprint: string, occurrence: number): number {
  return createHash('sha256').update(`${seed}\0${fingerprint}\0${occurrence}`).digest().readUInt32BE(0);
}

/** What makes two requests "the same request": method, URL, idempotency key and body. */
export function requestFingerprint(
  method: string,
  url: string,
  idempotencyKey: string,
  body: Buffer,
): string {
  return createHash('sha256').update(`${method}\0${url}\0${idempotencyKey}\0`).update(body).digest('hex');
}

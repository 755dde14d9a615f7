/**
 * Micro-benchmark of the runtime's token verifier (createTokenVerifier), in its own quiet process, against identity's
 * real JWKS URL (fetched once, then jose's cache) and real tokens:
 *
 * - cache hit: the same token again and again, with a revocation list holding `revocations` live entries (so
 *   isRevoked does its four map lookups, not its empty-list shortcut), and without any list (the check's own share);
 * - cold: every call a token the verifier has not seen (ES256 signature, claims, zod, cache insert).
 *
 * The revocation list is the runtime's own (createRevocationList) over a stand-in for the database that answers its
 * one load query with the entries and never notifies: what is measured is the in-memory check every request makes.
 *
 * Protocol (IPC): parent sends {type:'run', job}; we answer {type:'result', result} or {type:'failed', error}.
 */
import { randomUUID } from 'node:crypto';
import {
  createLogger,
  createRevocationList,
  createTokenVerifier,
  type Database,
  type TokenVerifier,
} from '@agentgraph/runtime';
import { z } from 'zod';
import { median } from '../stats.js';

export const MicroJob = z.object({
  issuer: z.string().url(),
  audience: z.string(),
  jwksUrl: z.string().url(),
  /** Distinct valid tokens: [0] is the one verified again and again; the rest are each verified once, cold. */
  tokens: z.array(z.string()).min(10),
  revocations: z.number().int().min(0),
  hitIterations: z.number().int().positive(),
  hitRounds: z.number().int().positive(),
  /** Rounds of cold verifications (the tokens after [0] are split between a warm-up slice and these). */
  rounds: z.number().int().positive(),
});
export type MicroJob = z.infer<typeof MicroJob>;

export interface MicroResult {
  /** ns per verify() of a cached token, revocation list with `revocationEntries` entries; median of the rounds. */
  cacheHitNs: number;
  /** The same without a revocation list. */
  cacheHitNoRevocationListNs: number;
  /** µs per verify() of a token not seen before; median of the rounds. */
  coldUs: number;
  /** The fastest round of each (the least disturbed by other work on the machine). */
  best: { cacheHitNs: number; cacheHitNoRevocationListNs: number; coldUs: number };
  revocationEntries: number;
  hitIterationsPerRound: number;
  hitRounds: number;
  coldTokensPerRound: number;
  rounds: number;
  perRound: { cacheHitNs: number[]; cacheHitNoRevocationListNs: number[]; coldUs: number[] };
}

const log = createLogger({ service: 'bench-auth-micro' }, { level: 'warn' });

/** A Database that only does what createRevocationList needs: one load query and a listener that never fires. */
function revocationRows(count: number): Database {
  const expiresMs = Date.now() + 30 * 60_000;
  const rows = Array.from({ length: count }, () => ({
    kind: 'jti',
    value: randomUUID(),
    expires_ms: expiresMs,
  }));
  const stub: Pick<Database, 'query' | 'listen'> = {
    query: (async () => ({ rows, rowCount: rows.length })) as unknown as Database['query'],
    listen: async () => async () => undefined,
  };
  return stub as Database;
}

async function hits(verify: TokenVerifier, header: string, n: number): Promise<number> {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await verify(header);
  return Number(process.hrtime.bigint() - t0) / n;
}

async function colds(verify: TokenVerifier, headers: string[]): Promise<number> {
  const t0 = process.hrtime.bigint();
  for (const h of headers) await verify(h);
  return Number(process.hrtime.bigint() - t0) / headers.length / 1000;
}

async function run(raw: unknown): Promise<MicroResult> {
  const job = MicroJob.parse(raw);
  const list = createRevocationList(revocationRows(job.revocations), log);
  await list.ready;
  if (list.size !== job.revocations)
    throw new Error(`revocation list holds ${list.size}, expected ${job.revocations}`);
  const opts = { issuer: job.issuer, audience: job.audience, keys: job.jwksUrl };
  const withList = createTokenVerifier({ ...opts, revocations: list });
  const withoutList = createTokenVerifier(opts);
  const [hot, ...rest] = job.tokens.map((t) => `Bearer ${t}`);
  // Each cold token is used once, by one verifier: a warm-up slice, then one slice per round.
  const warmCold = Math.min(200, Math.floor(rest.length / (job.rounds + 1)));
  const perRoundCold = Math.floor((rest.length - warmCold) / job.rounds);
  if (perRoundCold < 50) throw new Error(`too few tokens for ${job.rounds} cold rounds: ${rest.length}`);
  const auth = await withList(hot);
  if (!auth) throw new Error('the hot token did not verify');
  await withoutList(hot);
  // Warm-up: JIT, the JWKS fetch, jose's key import.
  await hits(withList, hot!, 20_000);
  await hits(withoutList, hot!, 20_000);
  await colds(withList, rest.slice(0, warmCold));
  const perRound: MicroResult['perRound'] = { cacheHitNs: [], cacheHitNoRevocationListNs: [], coldUs: [] };
  // Hits: many short rounds, the two verifiers alternating which goes first, so a burst of other work on the machine
  // or a GC lands on both alike; the median is kept. Then the cold rounds (they allocate far more).
  for (let r = 0; r < job.hitRounds; r++) {
    const withFirst = r % 2 === 0;
    if (withFirst) perRound.cacheHitNs.push(await hits(withList, hot!, job.hitIterations));
    perRound.cacheHitNoRevocationListNs.push(await hits(withoutList, hot!, job.hitIterations));
    if (!withFirst) perRound.cacheHitNs.push(await hits(withList, hot!, job.hitIterations));
  }
  for (let r = 0; r < job.rounds; r++) {
    const from = warmCold + r * perRoundCold;
    perRound.coldUs.push(await colds(withList, rest.slice(from, from + perRoundCold)));
  }
  await list.close();
  const r1 = (n: number) => Math.round(n * 10) / 10;
  return {
    cacheHitNs: Math.round(median(perRound.cacheHitNs)),
    cacheHitNoRevocationListNs: Math.round(median(perRound.cacheHitNoRevocationListNs)),
    coldUs: r1(median(perRound.coldUs)),
    best: {
      cacheHitNs: Math.round(Math.min(...perRound.cacheHitNs)),
      cacheHitNoRevocationListNs: Math.round(Math.min(...perRound.cacheHitNoRevocationListNs)),
      coldUs: r1(Math.min(...perRound.coldUs)),
    },
    revocationEntries: list.size,
    hitIterationsPerRound: job.hitIterations,
    hitRounds: job.hitRounds,
    coldTokensPerRound: perRoundCold,
    rounds: job.rounds,
    perRound: {
      cacheHitNs: perRound.cacheHitNs.map(Math.round),
      cacheHitNoRevocationListNs: perRound.cacheHitNoRevocationListNs.map(Math.round),
      coldUs: perRound.coldUs.map(r1),
    },
  };
}

process.on('message', (m: { type?: string; job?: unknown }) => {
  if (m?.type === 'run') {
    run(m.job).then(
      (result) => process.send!({ type: 'result', result }),
      (err: Error) => process.send!({ type: 'failed', error: err.stack ?? String(err) }),
    );
  } else if (m?.type === 'stop') {
    process.exit(0);
  }
});
process.send!({ type: 'ready' });

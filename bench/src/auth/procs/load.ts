/**
 * The auth bench's load generator, in its own process so its CPU is not the targets'. Two kinds of job:
 *
 * - gateway: the same GraphQL query with no token, with one token on every request, or with the next token of a pool
 *   on every request (so the verifier's cache cannot help); either at full speed (autocannon, closed loop, one
 *   thread, pipelining 1) or open loop at a fixed rate (undici pool, evenly spaced requests). Every body is checked
 *   against the pre-flight answer exactly; latencies are recorded per response with process.hrtime.
 * - token-endpoint: N workers in a closed loop (undici, one keep-alive connection each) send refresh, token-exchange
 *   or device-authorization requests; every answer is checked (status 200 and the expected fields). A refresh worker
 *   follows its own rotation chain; if a refresh fails its chain is over (the token may have been used), so it stops.
 *
 * Protocol (IPC): parent sends {type:'run', job}; we send {type:'measure-start', at}, {type:'measure-end', at}
 * (monotonic µs), then {type:'result', result} or {type:'failed', error}. Tokens are never logged or returned.
 */
import autocannon from 'autocannon';
import { setTimeout as delay } from 'node:timers/promises';
import { Client, Pool } from 'undici';
import { z } from 'zod';
import { monoMicros } from '../../lib/proc.js';
import { summarizeLatencies, type LatencySummary } from '../stats.js';
import { checkTokenAnswer, tokenRequest, TOKEN_WORKLOADS, TokenWorkerSeed } from '../token-requests.js';

const Common = {
  warmupSeconds: z.number().min(0),
  durationSeconds: z.number().positive(),
};
export const GatewayJob = z.object({
  kind: z.literal('gateway'),
  url: z.string().url(),
  body: z.string(),
  connections: z.number().int().positive(),
  /** none: no Authorization header; one: tokens[0] on every request; pool: the next token on every request. */
  authorization: z.enum(['none', 'one', 'pool']),
  tokens: z.array(z.string()),
  expectBody: z.string(),
  /**
   * Open loop at this many requests/s, evenly spaced (latency from each request's scheduled time, so a stall is
   * not hidden); absent: closed loop at full speed (autocannon).
   */
  rate: z.number().positive().optional(),
  ...Common,
});
export type GatewayJob = z.infer<typeof GatewayJob>;
export const TokenEndpointJob = z.object({
  kind: z.literal('token-endpoint'),
  origin: z.string().url(),
  workload: z.enum(TOKEN_WORKLOADS),
  audience: z.string(),
  /** One per worker (its own refresh chain), or one shared by all. */
  seeds: z.array(TokenWorkerSeed).min(1),
  concurrency: z.number().int().positive(),
  ...Common,
});
export type TokenEndpointJob = z.infer<typeof TokenEndpointJob>;
const Job = z.discriminatedUnion('kind', [GatewayJob, TokenEndpointJob]);

export interface AuthLoadResult {
  /** Responses received in the measured window (any status). */
  responses: number;
  seconds: number;
  requestsPerSecond: number;
  /** Latency of the good answers. */
  latencyMs: LatencySummary | null;
  /** Bad answers and failed requests by reason ("HTTP 400 invalid_grant", "timeout", "body differs", ...). */
  errors: { total: number; byReason: Record<string, number> };
  warmup: { responses: number; errors: number; byReason: Record<string, number> };
  loadGeneratorCpuMs: number;
  /** refresh: chains that ended on a failed refresh. */
  brokenChains?: number;
  /** gateway: the first body that differed from the expected one (no tokens in it: the query is public data). */
  sampleMismatch?: string;
}

interface Window {
  responses: number;
  seconds: number;
  latencies: number[];
  byReason: Map<string, number>;
  sampleMismatch?: string;
}

const countReason = (m: Map<string, number>, why: string, n = 1) => m.set(why, (m.get(why) ?? 0) + n);

// ---- gateway: autocannon -------------------------------------------------------------------------------------

interface AutocannonInstance {
  on(event: 'response', fn: (client: unknown, status: number, bytes: number, ms: number) => void): void;
}
interface AutocannonResult {
  requests: { total: number };
  non2xx: number;
  errors: number;
  timeouts: number;
  mismatches: number;
  duration: number;
  statusCodeStats: Record<string, { count: number }>;
}

/**
 * Position in the token pool, kept across jobs (warm-up, rounds): the pool is walked as one long cycle, so a token
 * comes back only after every other one has been sent — with a pool larger than the verifiers' caches, never cached.
 */
let poolCursor = 0;

const JSON_HEADERS = { 'content-type': 'application/json', accept: 'application/json' };

/** The headers of the next gateway request: no token, the one token, or the pool's next token. */
function gatewayHeaders(job: GatewayJob): Record<string, string> {
  if (job.authorization === 'none') return JSON_HEADERS;
  const token = job.authorization === 'one' ? job.tokens[0]! : job.tokens[poolCursor++ % job.tokens.length]!;
  return { ...JSON_HEADERS, authorization: `Bearer ${token}` };
}

function fireGateway(job: GatewayJob, seconds: number): Promise<Window> {
  return job.rate === undefined ? fireGatewayClosed(job, seconds) : fireGatewayAtRate(job, job.rate, seconds);
}

/** Open loop: request k is due at t0 + k/rate; the pool queues when every connection is busy. */
async function fireGatewayAtRate(job: GatewayJob, rate: number, seconds: number): Promise<Window> {
  const w: Window = { responses: 0, seconds: 0, latencies: [], byReason: new Map() };
  const url = new URL(job.url);
  const pool = new Pool(url.origin, {
    connections: job.connections,
    pipelining: 1,
    headersTimeout: 10_000,
    bodyTimeout: 10_000,
  });
  const intervalMs = 1000 / rate;
  const total = Math.floor(seconds * rate);
  const inflight = new Set<Promise<void>>();
  const one = async (due: number) => {
    try {
      const res = await pool.request({
        path: url.pathname,
        method: 'POST',
        headers: gatewayHeaders(job),
        body: job.body,
      });
      const text = await res.body.text();
      w.responses++;
      if (res.statusCode !== 200) countReason(w.byReason, `HTTP ${res.statusCode}`);
      else if (text !== job.expectBody) {
        countReason(w.byReason, 'body differs from the pre-flight answer');
        if (w.sampleMismatch === undefined) w.sampleMismatch = text.slice(0, 600);
      } else w.latencies.push(performance.now() - due);
    } catch (err) {
      countReason(w.byReason, `request failed: ${(err as { code?: string }).code ?? (err as Error).name}`);
    }
  };
  const t0 = performance.now();
  try {
    for (let k = 0; k < total;) {
      const now = performance.now();
      for (; k < total && t0 + k * intervalMs <= now; k++) {
        const p = one(t0 + k * intervalMs);
        inflight.add(p);
        void p.finally(() => inflight.delete(p));
      }
      if (k < total) await delay(Math.max(0, t0 + k * intervalMs - performance.now()));
    }
    await Promise.all(inflight);
  } finally {
    await pool.close().catch(() => undefined);
  }
  w.seconds = (performance.now() - t0) / 1000;
  return w;
}

function fireGatewayClosed(job: GatewayJob, seconds: number): Promise<Window> {
  const w: Window = { responses: 0, seconds: 0, latencies: [], byReason: new Map() };
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: job.url,
        method: 'POST',
        body: job.body,
        headers: JSON_HEADERS,
        connections: job.connections,
        pipelining: 1,
        duration: seconds,
        timeout: 10,
        // Every mode rebuilds the request each time, so the load generator costs the same in all three.
        requests: [
          {
            setupRequest: (req: { headers: Record<string, string> }) => ({
              ...req,
              headers: gatewayHeaders(job),
            }),
          },
        ],
        verifyBody: (body: string) => {
          const ok = body === job.expectBody;
          if (!ok && w.sampleMismatch === undefined) w.sampleMismatch = body.slice(0, 600);
          return ok;
        },
      },
      (err: Error | null, r: AutocannonResult) => {
        if (err) return reject(err);
        w.responses = r.requests.total;
        w.seconds = r.duration;
        for (const [status, { count }] of Object.entries(r.statusCodeStats ?? {}))
          if (!status.startsWith('2')) countReason(w.byReason, `HTTP ${status}`, count);
        if (r.errors) countReason(w.byReason, 'connection errors', r.errors);
        if (r.timeouts) countReason(w.byReason, 'timeouts', r.timeouts);
        if (r.mismatches) countReason(w.byReason, 'body differs from the pre-flight answer', r.mismatches);
        resolve(w);
      },
    ) as AutocannonInstance;
    instance.on('response', (_client, status, _bytes, ms) => {
      if (status >= 200 && status < 300) w.latencies.push(ms);
    });
  });
}

// ---- token endpoint: closed-loop workers ---------------------------------------------------------------------

interface Worker {
  client: Client;
  seed: TokenWorkerSeed;
  refreshToken?: string;
  broken: boolean;
}

/**
 * Where each refresh chain is now, by the refresh token it started from: a later job (the next round) seeded with the
 * same chain continues from its tip instead of reusing a rotated-away token (which would revoke the whole family).
 */
const chainTips = new Map<string, string>();

function tokenWorkers(job: TokenEndpointJob): Worker[] {
  return Array.from({ length: job.concurrency }, (_, i) => {
    const seed = job.seeds[i % job.seeds.length]!;
    const tip = seed.refreshToken ? chainTips.get(seed.refreshToken) : undefined;
    return {
      client: new Client(job.origin, { pipelining: 1, headersTimeout: 10_000, bodyTimeout: 10_000 }),
      seed,
      ...(tip ? { refreshToken: tip } : {}),
      broken: false,
    };
  });
}

async function fireTokens(job: TokenEndpointJob, workers: Worker[], seconds: number): Promise<Window> {
  const w: Window = { responses: 0, seconds: 0, latencies: [], byReason: new Map() };
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  await Promise.all(
    workers.map(async (worker) => {
      while (!worker.broken && performance.now() < end) {
        const req = tokenRequest(job.workload, worker.seed, worker, job.audience);
        const sent =
          job.workload === 'refresh' ? (worker.refreshToken ?? worker.seed.refreshToken) : undefined;
        const start = performance.now();
        let answer: ReturnType<typeof checkTokenAnswer>;
        try {
          const res = await worker.client.request({
            path: req.path,
            method: 'POST',
            headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
            body: req.body,
          });
          const text = await res.body.text();
          w.responses++;
          answer = checkTokenAnswer(job.workload, res.statusCode, text, sent);
          if (answer.ok) w.latencies.push(performance.now() - start);
        } catch (err) {
          answer = {
            ok: false,
            why: `request failed: ${(err as { code?: string }).code ?? (err as Error).name}`,
          };
        }
        if (answer.ok) {
          if (answer.nextRefreshToken) worker.refreshToken = answer.nextRefreshToken;
        } else {
          countReason(w.byReason, answer.why);
          // A failed refresh leaves the chain in an unknown state (a resend could be a reuse): this chain is over.
          if (job.workload === 'refresh') worker.broken = true;
        }
      }
    }),
  );
  w.seconds = (performance.now() - t0) / 1000;
  return w;
}

// ---- the run -------------------------------------------------------------------------------------------------

const errorsOf = (m: Map<string, number>) => ({
  total: [...m.values()].reduce((a, b) => a + b, 0),
  byReason: Object.fromEntries(m),
});

async function run(raw: unknown): Promise<AuthLoadResult> {
  const job = Job.parse(raw);
  const workers = job.kind === 'token-endpoint' ? tokenWorkers(job) : [];
  const fire = (seconds: number) =>
    job.kind === 'gateway' ? fireGateway(job, seconds) : fireTokens(job, workers, seconds);
  try {
    const warm = job.warmupSeconds > 0 ? await fire(job.warmupSeconds) : null;
    const cpu0 = process.cpuUsage();
    process.send!({ type: 'measure-start', at: monoMicros() });
    const m = await fire(job.durationSeconds);
    process.send!({ type: 'measure-end', at: monoMicros() });
    const cpu = process.cpuUsage(cpu0);
    const warmErrors = errorsOf(warm?.byReason ?? new Map());
    return {
      responses: m.responses,
      seconds: Math.round(m.seconds * 1000) / 1000,
      requestsPerSecond: m.seconds > 0 ? m.responses / m.seconds : 0,
      latencyMs: summarizeLatencies(m.latencies),
      errors: errorsOf(m.byReason),
      warmup: { responses: warm?.responses ?? 0, errors: warmErrors.total, byReason: warmErrors.byReason },
      loadGeneratorCpuMs: (cpu.user + cpu.system) / 1000,
      ...(job.kind === 'token-endpoint' && job.workload === 'refresh'
        ? { brokenChains: workers.filter((x) => x.broken).length }
        : {}),
      ...(m.sampleMismatch !== undefined || warm?.sampleMismatch !== undefined
        ? { sampleMismatch: m.sampleMismatch ?? warm?.sampleMismatch }
        : {}),
    };
  } finally {
    for (const x of workers)
      if (x.seed.refreshToken && x.refreshToken) chainTips.set(x.seed.refreshToken, x.refreshToken);
    await Promise.all(workers.map((x) => x.client.close().catch(() => undefined)));
  }
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

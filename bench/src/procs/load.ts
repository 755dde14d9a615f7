/**
 * The load generator, in its own process: autocannon (programmatic, one thread) fires the same POST at one target,
 * first a warm-up whose numbers are thrown away, then the measured window. Every response body is checked against
 * the pre-flight answer (exact text when the target answers deterministically, else "no `errors` key"), so a run
 * that "succeeds" with GraphQL errors inside 200s is caught and reported as invalid, not averaged in.
 *
 * Protocol (IPC): parent sends {type:'run', job}; we send {type:'measure-start', at}, {type:'measure-end', at}
 * (monotonic µs, the clock .cpuprofile samples use), then {type:'result', result}.
 */
import autocannon from 'autocannon';
import { monoMicros } from '../lib/proc.js';

export interface LoadJob {
  url: string;
  body: string;
  headers: Record<string, string>;
  connections: number;
  warmupSeconds: number;
  durationSeconds: number;
  /** The exact body every response must have, when the target is deterministic. */
  expectBody?: string;
  /**
   * Access tokens handed out round-robin, one per connection (distinct callers: nothing can be shared between
   * connections on the token). Absent: every connection sends `headers` as is (one caller).
   */
  tokens?: string[];
}

export interface LoadResult {
  /** Responses received in the measured window. */
  requests: number;
  /** Requests sent (includes the ones still in flight when the window closed). */
  sent: number;
  seconds: number;
  requestsPerSecond: number;
  requestsPerSecondStddev: number;
  latencyMs: { p50: number; p90: number; p99: number; max: number; mean: number };
  bytesPerSecond: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  /** Bodies that did not match the pre-flight answer (GraphQL errors, missing data). */
  mismatches: number;
  /** Problems during the warm-up (reported, not part of the numbers). */
  warmup: {
    requests: number;
    sent: number;
    non2xx: number;
    errors: number;
    timeouts: number;
    mismatches: number;
  };
  loadGeneratorCpuMs: number;
  sampleMismatch?: string;
}

interface AutocannonResult {
  requests: { average: number; stddev: number; total: number; sent: number };
  latency: { p50: number; p90: number; p99: number; max: number; average: number };
  throughput: { average: number };
  non2xx: number;
  errors: number;
  timeouts: number;
  mismatches: number;
  duration: number;
}

let sampleMismatch: string | undefined;

function fire(job: LoadJob, seconds: number): Promise<AutocannonResult> {
  const verifyBody = job.expectBody
    ? (body: string) => {
        const ok = body === job.expectBody;
        if (!ok && !sampleMismatch) sampleMismatch = body.slice(0, 600);
        return ok;
      }
    : (body: string) => {
        const ok = !body.includes('"errors"') && body.includes('"data"');
        if (!ok && !sampleMismatch) sampleMismatch = body.slice(0, 600);
        return ok;
      };
  const headers = { 'content-type': 'application/json', accept: 'application/json', ...job.headers };
  let next = 0;
  const setupClient = job.tokens?.length
    ? (client: { setHeaders(h: Record<string, string>): void }) =>
        client.setHeaders({ ...headers, authorization: `Bearer ${job.tokens![next++ % job.tokens!.length]}` })
    : undefined;
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url: job.url,
        method: 'POST',
        body: job.body,
        headers,
        ...(setupClient ? { setupClient } : {}),
        connections: job.connections,
        pipelining: 1,
        duration: seconds,
        timeout: 10,
        verifyBody,
      },
      (err: Error | null, result: AutocannonResult) => (err ? reject(err) : resolve(result)),
    );
  });
}

async function run(job: LoadJob): Promise<LoadResult> {
  const warm = job.warmupSeconds > 0 ? await fire(job, job.warmupSeconds) : null;
  const warmupMismatch = sampleMismatch;
  sampleMismatch = undefined;
  const cpu0 = process.cpuUsage();
  process.send!({ type: 'measure-start', at: monoMicros() });
  const r = await fire(job, job.durationSeconds);
  process.send!({ type: 'measure-end', at: monoMicros() });
  const cpu = process.cpuUsage(cpu0);
  return {
    requests: r.requests.total,
    sent: r.requests.sent,
    seconds: r.duration,
    requestsPerSecond: r.requests.total / r.duration,
    requestsPerSecondStddev: r.requests.stddev,
    latencyMs: {
      p50: r.latency.p50,
      p90: r.latency.p90,
      p99: r.latency.p99,
      max: r.latency.max,
      mean: r.latency.average,
    },
    bytesPerSecond: r.throughput.average,
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    mismatches: r.mismatches,
    warmup: {
      requests: warm?.requests.total ?? 0,
      sent: warm?.requests.sent ?? 0,
      non2xx: warm?.non2xx ?? 0,
      errors: warm?.errors ?? 0,
      timeouts: warm?.timeouts ?? 0,
      mismatches: warm?.mismatches ?? 0,
    },
    loadGeneratorCpuMs: (cpu.user + cpu.system) / 1000,
    sampleMismatch: sampleMismatch ?? warmupMismatch,
  };
}

process.on('message', (m: { type: string; job?: LoadJob }) => {
  if (m.type === 'run' && m.job) {
    run(m.job).then(
      (result) => process.send!({ type: 'result', result }),
      (err: Error) => process.send!({ type: 'failed', error: err.stack ?? String(err) }),
    );
  } else if (m.type === 'stop') {
    process.exit(0);
  }
});
process.send!({ type: 'ready' });

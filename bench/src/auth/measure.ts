/**
 * One measured run of the auth bench: hands a job to the load generator and samples, at the start and the end of its
 * measured window, the CPU time of every bench process, of the PostgreSQL server and of the whole machine; then turns
 * the answer into an AuthRunResult (valid only without errors). Also the unmeasured warm-up and the median of rounds.
 */
import { machineBusyMs, type Child } from '../lib/proc.js';
import { cpuBetween, treeSnapshot, type CpuSnapshot } from './cpu.js';
import type { AuthLoadResult, GatewayJob, TokenEndpointJob } from './procs/load.js';
import type { AuthRunName, AuthRunResult } from './report.js';

/** Above this share of the machine's CPU used by processes outside the bench, a result is flagged as contended. */
const CONTENTION_LIMIT_PCT = 5;

/** The bench's processes (identity is the services process on PGlite). */
export interface Procs {
  gateway: Child;
  identity: Child;
  services: Child;
  load: Child;
}

export interface MeasureContext {
  log(msg: string): void;
  selfCpuMs(): number;
  machine: { cpus: number };
}

/** Runs a job unmeasured (the warm-up pass); problems are logged, the measured run will show them if they persist. */
export async function warmUp(
  load: Child,
  name: string,
  job: GatewayJob | TokenEndpointJob,
  log: (msg: string) => void,
): Promise<void> {
  load.send({ type: 'run', job });
  const a = await load.message<{ type: string; result?: AuthLoadResult; error?: string }>(
    (m) => ['result', 'failed'].includes((m as { type?: string }).type ?? ''),
    job.durationSeconds * 1000 + 60_000,
  );
  if (a.type === 'failed') throw new Error(`warm-up of ${name} failed: ${a.error}`);
  if (a.result!.errors.total > 0)
    log(`warm-up of ${name} had errors: ${JSON.stringify(a.result!.errors.byReason)}`);
}

/** The round with the median requests/s; invalid if any round was. */
export function medianRound(rs: AuthRunResult[]): AuthRunResult {
  if (rs.length === 1) return rs[0]!;
  const sorted = [...rs].sort((a, b) => (a.load?.requestsPerSecond ?? 0) - (b.load?.requestsPerSecond ?? 0));
  const median = sorted[Math.floor((sorted.length - 1) / 2)]!;
  const reasons = rs.flatMap((r, i) => r.invalidReasons.map((x) => `round ${i + 1}: ${x}`));
  return {
    ...median,
    valid: reasons.length === 0,
    invalidReasons: reasons,
    warnings: rs.flatMap((r, i) => r.warnings.map((w) => `round ${i + 1}: ${w}`)),
    rounds: rs.map((r) => ({
      requestsPerSecond: r.load ? Math.round(r.load.requestsPerSecond) : null,
      p50: r.load?.latencyMs?.p50 ?? null,
      p99: r.load?.latencyMs?.p99 ?? null,
      cpuPerRequestUs: r.cpuPerRequestUs,
      foreignCpuPct: r.foreignCpuPct,
      valid: r.valid,
    })),
  };
}

/** A function measuring one run: the job, CPU deltas of every process over its window, validity, warnings. */
export function measurer(ctx: MeasureContext, procs: Procs, postmaster: number | null, postgres: boolean) {
  return async (
    name: AuthRunName,
    label: string,
    job: GatewayJob | TokenEndpointJob,
  ): Promise<AuthRunResult> => {
    const result: AuthRunResult = {
      name,
      label,
      valid: true,
      invalidReasons: [],
      warnings: [],
      load: null,
      cpuMs: { gateway: null, identity: null, otherSubgraphs: null, postgres: null, loadGenerator: null },
      cpuPerRequestUs: { gateway: null, identity: null, postgres: null },
      foreignCpuPct: null,
    };
    type Sample = { procs: (number | null)[]; pg: CpuSnapshot | null; machine: number | null; self: number };
    const sample = (): Sample => ({
      procs: [procs.gateway.cpuMs(), procs.identity.cpuMs(), procs.services.cpuMs(), procs.load.cpuMs()],
      pg: treeSnapshot(postmaster),
      machine: machineBusyMs(),
      self: ctx.selfCpuMs(),
    });
    let start: Sample | null = null;
    let fromUs = 0;
    const onMessage = (m: { type?: string; at?: number }) => {
      if (m.type === 'measure-start') {
        fromUs = m.at!;
        start = sample();
      } else if (m.type === 'measure-end' && start) {
        const end = sample();
        const d = end.procs.map((v, i) =>
          v !== null && start!.procs[i] !== null ? v - start!.procs[i]! : null,
        );
        const pg = cpuBetween(start.pg, end.pg);
        result.cpuMs = {
          gateway: d[0] ?? null,
          identity: d[1] ?? null,
          otherSubgraphs: postgres ? (d[2] ?? null) : null,
          postgres: pg,
          loadGenerator: d[3] ?? null,
        };
        if (end.machine !== null && start.machine !== null) {
          // identity and services are one process on PGlite: count it once.
          const ours =
            (d[0] ?? 0) +
            (d[1] ?? 0) +
            (postgres ? (d[2] ?? 0) : 0) +
            (d[3] ?? 0) +
            (pg ?? 0) +
            (end.self - start.self);
          const capacity = ((m.at! - fromUs) / 1000) * ctx.machine.cpus;
          result.foreignCpuPct = Math.max(
            0,
            Math.round(((end.machine - start.machine - ours) / capacity) * 1000) / 10,
          );
        }
      }
    };
    try {
      procs.load.proc.on('message', onMessage);
      procs.load.send({ type: 'run', job });
      const answer = await procs.load.message<{ type: string; result?: AuthLoadResult; error?: string }>(
        (m) => ['result', 'failed'].includes((m as { type?: string }).type ?? ''),
        (job.warmupSeconds + job.durationSeconds) * 1000 + 60_000,
      );
      if (answer.type === 'failed') throw new Error(`load generator failed: ${answer.error}`);
      const r = answer.result!;
      result.load = r;
      const per = (ms: number | null) =>
        ms === null || r.responses === 0 ? null : Math.round((ms * 1000) / r.responses);
      result.cpuPerRequestUs = {
        gateway: job.kind === 'gateway' ? per(result.cpuMs.gateway) : null,
        identity: per(result.cpuMs.identity),
        postgres: per(result.cpuMs.postgres),
      };
      if (r.errors.total > 0)
        result.invalidReasons.push(
          `${r.errors.total} errors: ${Object.entries(r.errors.byReason)
            .map(([k, n]) => `${n} × ${k}`)
            .join(', ')}`,
        );
      if (r.responses === 0) result.invalidReasons.push('no responses');
      if (job.kind === 'gateway' && job.rate !== undefined && r.seconds > job.durationSeconds * 1.1)
        result.warnings.push(
          `did not keep up with ${job.rate} req/s: the last answer came ${r.seconds}s after the start of a ` +
            `${job.durationSeconds}s schedule`,
        );
      if (r.brokenChains) result.invalidReasons.push(`${r.brokenChains} refresh chains broke`);
      if (r.sampleMismatch) ctx.log(`${name}: sample of an unexpected body: ${r.sampleMismatch}`);
      if (r.warmup.errors > 0)
        ctx.log(`${name}: warm-up had errors (not counted): ${JSON.stringify(r.warmup.byReason)}`);
      if (result.foreignCpuPct !== null && result.foreignCpuPct > CONTENTION_LIMIT_PCT)
        result.warnings.push(
          `other processes used ${result.foreignCpuPct}% of the machine's CPU during the window`,
        );
    } catch (err) {
      result.error = (err as Error).message;
      result.invalidReasons.push(`failed: ${(err as Error).message.split('\n')[0]}`);
    } finally {
      procs.load.proc.off('message', onMessage);
    }
    result.valid = result.invalidReasons.length === 0;
    const l = result.load;
    ctx.log(
      `${name}: ${l ? `${Math.round(l.requestsPerSecond)} req/s, p50 ${l.latencyMs?.p50 ?? '—'} ms, p99 ${l.latencyMs?.p99 ?? '—'} ms` : 'no numbers'}` +
        `${result.valid ? '' : ` — INVALID (${result.invalidReasons.join('; ')})`}`,
    );
    return result;
  };
}

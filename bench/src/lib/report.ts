/** Machine info, the readable table, and the results files. */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import type { LoadResult } from '../procs/load.js';
import { REPO_ROOT } from './proc.js';

export function machineInfo() {
  const cpus = os.cpus();
  let commit: string | null = null;
  let dirty: boolean | null = null;
  try {
    commit = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: REPO_ROOT, encoding: 'utf8' }).trim();
    dirty =
      execFileSync('git', ['status', '--porcelain'], { cwd: REPO_ROOT, encoding: 'utf8' }).trim() !== '';
  } catch {
    /* not a git checkout */
  }
  return {
    cpus: cpus.length,
    cpuModel: cpus[0]?.model ?? 'unknown',
    totalMemoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    v8: process.versions.v8,
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    loadAverageAtStart: os.loadavg().map((l) => Math.round(l * 100) / 100),
    git: { commit, dirty },
  };
}

export interface TargetResult {
  name: string;
  label: string;
  url: string;
  valid: boolean;
  invalidReasons: string[];
  startupMs: number | null;
  load: LoadResult | null;
  /** CPU used during the measured window, ms, per process (from /proc). */
  cpuMs: { target: number | null; subgraphs: number | null; loadGenerator: number | null };
  /** CPU per request, µs (target process, subgraphs process). */
  cpuPerRequestUs: { target: number | null; subgraphs: number | null };
  responseBytes: number | null;
  /** CPU used by processes outside the bench during the window, % of the whole machine (2 cores = 200% → 100). */
  foreignCpuPct: number | null;
  /** Database round trips the subgraphs made per request (transactions; statements incl. BEGIN/COMMIT). */
  dbPerRequest: { transactions: number; statements: number; bySql?: Record<string, number> } | null;
  /** With --rounds > 1: every round's headline numbers (the fields above are the median round's). */
  rounds?: {
    requestsPerSecond: number | null;
    p50: number | null;
    p99: number | null;
    targetCpuUsPerRequest: number | null;
    subgraphsCpuUsPerRequest: number | null;
    foreignCpuPct: number | null;
    valid: boolean;
  }[];
  /** Not invalid, but to be read with care (contention). */
  warnings: string[];
  error?: string;
}

const fmt = (n: number | null | undefined, digits = 0) =>
  n === null || n === undefined || Number.isNaN(n)
    ? '—'
    : n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

export function table(results: TargetResult[]): string {
  const header = [
    'target',
    'req/s',
    'p50 ms',
    'p99 ms',
    'max ms',
    'errors',
    'target CPU µs/req',
    'subgraphs CPU µs/req',
    'DB stmts/req',
    'others CPU',
    'status',
  ];
  const rows = results.map((r) => {
    const l = r.load;
    const errs = l ? l.non2xx + l.errors + l.timeouts + l.mismatches : null;
    return [
      r.label,
      l ? fmt(l.requestsPerSecond) : '—',
      l ? fmt(l.latencyMs.p50) : '—',
      l ? fmt(l.latencyMs.p99) : '—',
      l ? fmt(l.latencyMs.max) : '—',
      errs === null ? '—' : String(errs),
      fmt(r.cpuPerRequestUs.target),
      fmt(r.cpuPerRequestUs.subgraphs),
      r.dbPerRequest ? fmt(r.dbPerRequest.statements, 1) : '—',
      r.foreignCpuPct === null ? '—' : `${fmt(r.foreignCpuPct, 1)}%`,
      r.valid ? (r.warnings.length ? 'ok, CONTENDED' : 'ok') : `INVALID: ${r.invalidReasons.join('; ')}`,
    ];
  });
  if (results.some((r) => r.rounds)) {
    header.splice(2, 0, 'rounds req/s');
    results.forEach((r, i) =>
      rows[i]!.splice(2, 0, r.rounds?.map((x) => x.requestsPerSecond ?? '—').join(' / ') ?? '—'),
    );
  }
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === 0 || i === cells.length - 1 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)))
      .join('  ');
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

export function writeResults(resultsDir: string, stamp: string, kind: string, data: unknown): string[] {
  mkdirSync(resultsDir, { recursive: true });
  const text = JSON.stringify(data, null, 2) + '\n';
  const suffix = kind === 'gateway' ? '' : `-${kind}`;
  const files = [join(resultsDir, `${stamp}${suffix}.json`), join(resultsDir, `latest${suffix}.json`)];
  for (const f of files) writeFileSync(f, text);
  return files;
}

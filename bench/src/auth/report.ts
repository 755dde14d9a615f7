/** The auth bench's result shapes, the "verification overhead" arithmetic, and the printed tables. */
import type { AuthLoadResult } from './procs/load.js';
import type { MicroResult } from './procs/micro.js';

export type AuthRunName =
  | 'gateway-no-token-rate'
  | 'gateway-one-token-rate'
  | 'gateway-token-pool-rate'
  | 'gateway-no-token'
  | 'gateway-one-token'
  | 'gateway-token-pool'
  | 'token-refresh'
  | 'token-exchange'
  | 'device-authorization';

export interface AuthRunResult {
  name: AuthRunName;
  label: string;
  valid: boolean;
  invalidReasons: string[];
  /** Not invalid, but to be read with care (contention). */
  warnings: string[];
  load: AuthLoadResult | null;
  /** CPU used in the measured window, ms (from /proc): each process, and PostgreSQL's whole server. */
  cpuMs: {
    gateway: number | null;
    identity: number | null;
    otherSubgraphs: number | null;
    postgres: number | null;
    loadGenerator: number | null;
  };
  /** The same per response, µs. */
  cpuPerRequestUs: { gateway: number | null; identity: number | null; postgres: number | null };
  /** CPU used by processes outside the bench (and outside its PostgreSQL) in the window, % of the machine. */
  foreignCpuPct: number | null;
  /** With --rounds > 1: every round's headline numbers (the fields above are the median round's). */
  rounds?: {
    requestsPerSecond: number | null;
    p50: number | null;
    p99: number | null;
    cpuPerRequestUs: AuthRunResult['cpuPerRequestUs'];
    foreignCpuPct: number | null;
    valid: boolean;
  }[];
  error?: string;
}

export interface OverheadOf {
  /** Gateway CPU per request, this run minus the run without a token, µs. */
  gatewayCpuUs: number | null;
  /** The same for identity, which serves the query and verifies the token again (zero trust). */
  identityCpuUs: number | null;
  p50Ms: number | null;
  p99Ms: number | null;
  /** Requests/s of this run over the run without a token. */
  throughputRatio: number | null;
}

export interface OverheadPair {
  /** (b) − (a): one token, verified from the cache after its first request, plus the revocation check. */
  cachedToken: OverheadOf;
  /** (c) − (a): a token the verifiers have not seen on every request (ES256 signature check each time). */
  coldToken: OverheadOf;
}

export interface VerificationOverhead {
  /** The same request rate for all three (open loop): CPU and latency differences are the verification's cost. */
  atFixedRate: OverheadPair;
  /** Each at full speed (closed loop): what it does to capacity (CPU per request also shifts with the load). */
  atFullSpeed: OverheadPair;
}

const diff = (a: number | null | undefined, b: number | null | undefined, digits = 0) =>
  a === null || a === undefined || b === null || b === undefined
    ? null
    : Math.round((a - b) * 10 ** digits) / 10 ** digits;

function overhead(run: AuthRunResult | undefined, base: AuthRunResult | undefined): OverheadOf {
  const ok = run?.valid && base?.valid;
  const l = ok ? run!.load : null;
  const b = ok ? base!.load : null;
  return {
    gatewayCpuUs: ok ? diff(run!.cpuPerRequestUs.gateway, base!.cpuPerRequestUs.gateway) : null,
    identityCpuUs: ok ? diff(run!.cpuPerRequestUs.identity, base!.cpuPerRequestUs.identity) : null,
    p50Ms: diff(l?.latencyMs?.p50, b?.latencyMs?.p50, 2),
    p99Ms: diff(l?.latencyMs?.p99, b?.latencyMs?.p99, 2),
    throughputRatio:
      l && b && b.requestsPerSecond > 0
        ? Math.round((l.requestsPerSecond / b.requestsPerSecond) * 100) / 100
        : null,
  };
}

export function verificationOverhead(results: AuthRunResult[]): VerificationOverhead {
  const by = (n: AuthRunName) => results.find((r) => r.name === n);
  return {
    atFixedRate: {
      cachedToken: overhead(by('gateway-one-token-rate'), by('gateway-no-token-rate')),
      coldToken: overhead(by('gateway-token-pool-rate'), by('gateway-no-token-rate')),
    },
    atFullSpeed: {
      cachedToken: overhead(by('gateway-one-token'), by('gateway-no-token')),
      coldToken: overhead(by('gateway-token-pool'), by('gateway-no-token')),
    },
  };
}

const fmt = (n: number | null | undefined, digits = 0) =>
  n === null || n === undefined || Number.isNaN(n)
    ? '—'
    : n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

function grid(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === 0 || i === cells.length - 1 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)))
      .join('  ');
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

const status = (r: AuthRunResult) =>
  r.valid ? (r.warnings.length ? 'ok, CONTENDED' : 'ok') : `INVALID: ${r.invalidReasons.join('; ')}`;

export function authTable(results: AuthRunResult[]): string {
  const header = [
    'run',
    'req/s',
    'p50 ms',
    'p99 ms',
    'errors',
    'gateway CPU µs/req',
    'identity CPU µs/req',
    'PostgreSQL CPU µs/req',
    'others CPU',
    'status',
  ];
  const rows = results.map((r) => {
    const l = r.load;
    return [
      r.label,
      l ? fmt(l.requestsPerSecond) : '—',
      fmt(l?.latencyMs?.p50, 2),
      fmt(l?.latencyMs?.p99, 2),
      l ? String(l.errors.total) : '—',
      fmt(r.cpuPerRequestUs.gateway),
      fmt(r.cpuPerRequestUs.identity),
      fmt(r.cpuPerRequestUs.postgres),
      r.foreignCpuPct === null ? '—' : `${fmt(r.foreignCpuPct, 1)}%`,
      status(r),
    ];
  });
  if (results.some((r) => r.rounds)) {
    header.splice(2, 0, 'rounds req/s');
    results.forEach((r, i) =>
      rows[i]!.splice(2, 0, r.rounds?.map((x) => x.requestsPerSecond ?? '—').join(' / ') ?? '—'),
    );
  }
  return grid(header, rows);
}

const signed = (n: number | null, digits = 0) => (n === null ? '—' : `${n >= 0 ? '+' : ''}${fmt(n, digits)}`);

export function overheadLines(o: VerificationOverhead, poolIsCold: boolean, rate: number): string {
  const cpu = (x: OverheadOf) =>
    `gateway CPU ${signed(x.gatewayCpuUs)} µs/req, identity CPU ${signed(x.identityCpuUs)} µs/req`;
  const lat = (x: OverheadOf) => `p50 ${signed(x.p50Ms, 2)} ms, p99 ${signed(x.p99Ms, 2)} ms`;
  const b = '(b − a) one token, cached + revocation check';
  const c = poolIsCold
    ? '(c − a) a new token every request, ES256 cold'
    : '(c − a) pool tokens (pool ≤ verifier cache: mostly CACHED, not cold)';
  return [
    `verification overhead at ${fmt(rate)} req/s (vs. no token):`,
    `  ${b}: ${cpu(o.atFixedRate.cachedToken)}, ${lat(o.atFixedRate.cachedToken)}`,
    `  ${c}: ${cpu(o.atFixedRate.coldToken)}, ${lat(o.atFixedRate.coldToken)}`,
    'at full speed (vs. no token):',
    `  ${b}: throughput ×${fmt(o.atFullSpeed.cachedToken.throughputRatio, 2)}, ${cpu(o.atFullSpeed.cachedToken)}`,
    `  ${c}: throughput ×${fmt(o.atFullSpeed.coldToken.throughputRatio, 2)}, ${cpu(o.atFullSpeed.coldToken)}`,
  ].join('\n');
}

export function microLines(m: MicroResult | null, error?: string): string {
  if (!m) return `createTokenVerifier micro-benchmark: failed${error ? ` (${error.split('\n')[0]})` : ''}`;
  return [
    'createTokenVerifier in-process (median of rounds; best round in brackets):',
    `  cache hit + revocation check (${m.revocationEntries} live entries): ${fmt(m.cacheHitNs)} ns/op ` +
      `[${fmt(m.best.cacheHitNs)}]; without a revocation list: ${fmt(m.cacheHitNoRevocationListNs)} ns/op ` +
      `[${fmt(m.best.cacheHitNoRevocationListNs)}]`,
    `  cold ES256 verify (new token each call): ${fmt(m.coldUs, 1)} µs/op [${fmt(m.best.coldUs, 1)}]`,
  ].join('\n');
}

/**
 * CPU time of process trees we did not start ourselves, from /proc: the PostgreSQL server of the bench database (its
 * postmaster, found by the port in DATABASE_URL, and every backend and helper under it). Backends come and go, so a
 * measurement compares per-process snapshots instead of totals: a process that exited in between loses only what it
 * used after the first snapshot was taken. Linux only; null elsewhere or when the server is not local.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { procCpuMs } from '../lib/proc.js';

/** pid → CPU ms. */
export type CpuSnapshot = Map<number, number>;

function parentOf(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return null;
  }
}

function allPids(): number[] {
  try {
    return readdirSync('/proc')
      .filter((d) => /^\d+$/.test(d))
      .map(Number);
  } catch {
    return [];
  }
}

/** The postmaster listening on `port` (started with `-p <port>`, as scripts/pg-cluster.sh does), or null. */
export function findPostmaster(databaseUrl: string | undefined): number | null {
  if (!databaseUrl) return null;
  const port = new URL(databaseUrl).port;
  if (!port) return null;
  for (const pid of allPids()) {
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      if (!/(^|\/)postgres$/.test(argv[0] ?? '')) continue;
      const p = argv.indexOf('-p');
      if (p >= 0 && argv[p + 1] === port) return pid;
    } catch {
      /* gone, or not ours to read */
    }
  }
  return null;
}

export function treeSnapshot(root: number | null): CpuSnapshot | null {
  if (root === null) return null;
  const snap: CpuSnapshot = new Map();
  const own = procCpuMs(root);
  if (own === null) return null;
  snap.set(root, own);
  for (const pid of allPids()) {
    if (pid !== root && parentOf(pid) === root) {
      const ms = procCpuMs(pid);
      if (ms !== null) snap.set(pid, ms);
    }
  }
  return snap;
}

/** CPU ms used between two snapshots (new processes count in full, exited ones up to the first snapshot). */
export function cpuBetween(before: CpuSnapshot | null, after: CpuSnapshot | null): number | null {
  if (!before || !after) return null;
  let total = 0;
  for (const [pid, ms] of after) total += ms - (before.get(pid) ?? 0);
  return total;
}

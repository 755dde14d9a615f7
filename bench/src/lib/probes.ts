/**
 * What the stream benches (coordination-bench.ts, fanout-bench.ts) read from their children and the machine: a
 * private PostgreSQL cluster's CPU, a child's memory after a full GC, the subgraphs' database round trips.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { procCpuMs, type Child } from './proc.js';

/**
 * CPU ms of a private cluster's server processes (`clusterDir` from scripts/pg-cluster.sh): the postmaster's own and
 * its exited children's (cutime, cstime: autovacuum workers come and go), plus its live children's; null without a
 * private cluster.
 */
export function postgresCpuMs(clusterDir: string | null): number | null {
  if (!clusterDir) return null;
  try {
    const postmaster = Number(
      readFileSync(join(clusterDir, 'data/postmaster.pid'), 'utf8').split('\n', 1)[0],
    );
    const stat = readFileSync(`/proc/${postmaster}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields 14-17 of /proc/<pid>/stat (utime, stime, cutime, cstime) are f[11..14], in clock ticks (100/s).
    let total = ((Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) * 1000) / 100;
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
        const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        if (ppid === postmaster) total += procCpuMs(Number(entry)) ?? 0;
      } catch {
        /* gone */
      }
    }
    return total;
  } catch {
    return null;
  }
}

export interface Memory {
  rss: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
}

/** The child's memory after a full GC (bench/src/lib/memory-probe.ts). */
export async function memoryOf(child: Child): Promise<Memory> {
  const answer = child.message<Memory & { gc: boolean }>(
    (m) => (m as { type?: string }).type === 'memory',
    60_000,
  );
  child.send({ type: 'memory' });
  const m = await answer;
  if (!m.gc) throw new Error(`${child.name} was started without --expose-gc`);
  return m;
}

export interface DbCounts {
  transactions: number;
  statements: number;
  bySql: Record<string, number>;
}

/** The subgraphs' database round trips so far (bench/src/procs/subgraphs.ts counts them). */
export async function dbCountsOf(child: Child): Promise<DbCounts> {
  const answer = child.message<DbCounts>((m) => (m as { type?: string }).type === 'db-counts', 30_000);
  child.send({ type: 'db-counts' });
  return answer;
}

/**
 * Child processes of the bench: every target, the subgraphs and the load generator run in their own Node process
 * (tsx loader), with stdout/stderr going to a log file, an IPC channel when we own the code, CPU time read from
 * /proc (so it works for processes we do not control), and a graceful stop so `--cpu-prof` can write its profile.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { setPriority } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
export const BENCH_SRC = fileURLToPath(new URL('../', import.meta.url));

/**
 * One gateway secret for every child of this run (GATEWAY_SECRET, runtime/src/gateway-secret.ts): a gateway in one
 * process and subgraphs in another must agree on it, and development mode would make up one per process.
 */
export const BENCH_GATEWAY_SECRET = process.env['GATEWAY_SECRET'] ?? randomBytes(32).toString('base64url');

export interface ChildOptions {
  /** A label for logs and tables. */
  name: string;
  /** The .ts entry point (absolute path). */
  entry: string;
  args?: string[];
  env?: Record<string, string>;
  /** Folder for the child's stdout/stderr log. */
  logDir: string;
  /** Extra node flags, e.g. --cpu-prof. */
  nodeFlags?: string[];
  /** Open an IPC channel (only for our own scripts). */
  ipc?: boolean;
  /** Scheduling priority (nice value) to give the process, e.g. -10; best effort (needs CAP_SYS_NICE). */
  priority?: number;
}

/** Sets a process's nice value; false when not allowed. */
export function trySetPriority(pid: number | undefined, priority: number): boolean {
  try {
    setPriority(pid ?? 0, priority);
    return true;
  } catch {
    return false;
  }
}

export interface Child {
  name: string;
  proc: ChildProcess;
  logFile: string;
  /** Resolves with the first IPC message satisfying the predicate; rejects if the child exits first. */
  message<T = unknown>(pred: (m: unknown) => boolean, timeoutMs?: number): Promise<T>;
  send(m: unknown): void;
  /** Total user+system CPU time of the process, in ms (Linux /proc; null elsewhere). */
  cpuMs(): number | null;
  /** Ask nicely (SIGTERM, or an IPC 'stop' if ipc), wait, then SIGKILL. */
  stop(graceMs?: number): Promise<number | null>;
  exited: Promise<number | null>;
}

const CLK_TCK = 100; // USER_HZ on Linux; stable across kernels we run on.

export function procCpuMs(pid: number | undefined): number | null {
  if (!pid) return null;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may contain spaces; fields after the closing paren are space-separated.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const utime = Number(rest[11]);
    const stime = Number(rest[12]);
    return ((utime + stime) * 1000) / CLK_TCK;
  } catch {
    return null;
  }
}

export function spawnChild(opts: ChildOptions): Child {
  const logFile = join(opts.logDir, `${opts.name}.log`);
  const log = createWriteStream(logFile, { flags: 'a' });
  const proc = spawn(
    process.execPath,
    [...(opts.nodeFlags ?? []), '--import', 'tsx', opts.entry, ...(opts.args ?? [])],
    {
      cwd: REPO_ROOT,
      env: { ...process.env, GATEWAY_SECRET: BENCH_GATEWAY_SECRET, ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe', ...(opts.ipc ? (['ipc'] as const) : [])],
    },
  );
  if (opts.priority !== undefined) trySetPriority(proc.pid, opts.priority);
  proc.stdout!.pipe(log, { end: false });
  proc.stderr!.pipe(log, { end: false });
  const exited = new Promise<number | null>((resolve) => {
    proc.once('exit', (code, signal) => {
      log.write(`\n[bench] ${opts.name} exited code=${code} signal=${signal}\n`);
      resolve(code);
    });
  });
  let alive = true;
  void exited.then(() => {
    alive = false;
  });

  const child: Child = {
    name: opts.name,
    proc,
    logFile,
    exited,
    message<T>(pred: (m: unknown) => boolean, timeoutMs = 120_000) {
      return new Promise<T>((resolve, reject) => {
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`${opts.name}: no answer within ${timeoutMs} ms (see ${logFile})`));
        }, timeoutMs);
        const onMessage = (m: unknown) => {
          if (pred(m)) {
            cleanup();
            resolve(m as T);
          }
        };
        const onExit = (code: number | null) => {
          cleanup();
          reject(new Error(`${opts.name} exited (code ${code}) before answering; see ${logFile}`));
        };
        const cleanup = () => {
          clearTimeout(timer);
          proc.off('message', onMessage);
          proc.off('exit', onExit);
        };
        proc.on('message', onMessage);
        proc.once('exit', onExit);
      });
    },
    send(m) {
      proc.send?.(m as never);
    },
    cpuMs: () => procCpuMs(proc.pid),
    async stop(graceMs = 15_000) {
      if (!alive) return exited;
      if (opts.ipc && proc.connected) proc.send({ type: 'stop' });
      else proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), graceMs);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
  return child;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

/** Monotonic time in microseconds, the clock V8 stamps .cpuprofile samples with (CLOCK_MONOTONIC on Linux). */
export function monoMicros(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Busy CPU time of the whole machine so far, ms (all CPUs; Linux /proc/stat; null elsewhere). */
export function machineBusyMs(): number | null {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!;
    const f = line.trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal. Interrupt time is left out: loopback traffic is handled in
    // softirq context and would count the bench's own networking as someone else's.
    const busy = f[0]! + f[1]! + f[2]! + f[7]!;
    return (busy * 1000) / CLK_TCK;
  } catch {
    return null;
  }
}

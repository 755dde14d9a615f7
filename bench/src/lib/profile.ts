/**
 * Reading a V8 .cpuprofile (what `node --cpu-prof` writes): keep only the samples taken inside the measured
 * window (sample times are CLOCK_MONOTONIC µs, the clock the load generator stamps the window with), then
 * aggregate self time by function and by package, and inclusive ("total") time by package and by function.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from './proc.js';

/**
 * `node` flags that write a process's CPU profile to its own folder under `runDir`. --cpu-prof writes one file per
 * thread (tsx runs its loader hooks in a worker thread); `mainThreadProfile` picks the main thread's.
 */
export function cpuProfileFlags(runDir: string, name: string): string[] {
  return ['--cpu-prof', `--cpu-prof-dir=${join(runDir, `cpuprofile-${name}`)}`];
}

/** The main thread's profile of process `name` (thread id 0 in Node's CPU.<date>.<time>.<pid>.<tid>.<seq> name). */
export function mainThreadProfile(runDir: string, name: string): string {
  const dir = join(runDir, `cpuprofile-${name}`);
  const main = readdirSync(dir).filter((f) => /^CPU\.\d+\.\d+\.\d+\.0\.\d+\.cpuprofile$/.test(f));
  if (main.length !== 1) throw new Error(`expected one main-thread profile in ${dir}, found ${main.length}`);
  return join(dir, main[0]!);
}

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface Entry {
  name: string;
  pkg: string;
  /** Share of the window's samples, percent. */
  pct: number;
  /** Estimated CPU ms (samples x mean sampling interval). */
  ms: number;
}

export interface ProfileSummary {
  file: string;
  window: { fromUs: number; toUs: number; filtered: boolean; note?: string };
  samples: number;
  /** Share of samples that were (idle): the process had nothing to do. */
  idlePct: number;
  /** Non-idle CPU in the window, ms (estimated from samples). */
  busyMs: number;
  selfByPackage: Entry[];
  totalByPackage: Entry[];
  selfByFunction: Entry[];
  totalByFunction: Entry[];
}

const ROOT_URL = 'file://' + REPO_ROOT;

/** Which package a frame belongs to: an npm package, a folder of this repo, a Node internal module, or V8. */
export function packageOf(frame: CallFrame): string {
  const { url, functionName } = frame;
  if (!url) {
    if (functionName === '(garbage collector)') return '(gc)';
    if (functionName === '(idle)' || functionName === '(program)' || functionName === '(root)')
      return functionName;
    return '(native)';
  }
  if (url.startsWith('wasm://')) return '(wasm: pglite)';
  if (url.startsWith('node:')) {
    const parts = url.slice(5).split('/');
    return 'node:' + (parts[0] === 'internal' ? parts.slice(0, 2).join('/') : parts[0]);
  }
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + '/node_modules/'.length).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  if (url.startsWith(ROOT_URL)) {
    const rel = url.slice(ROOT_URL.length).split('/');
    return 'agentgraph/' + (rel[0] === 'subgraphs' ? `subgraphs/${rel[1]}` : rel[0]);
  }
  return url;
}

function shortLocation(frame: CallFrame): string {
  const { url, lineNumber } = frame;
  if (!url) return '';
  const nm = url.lastIndexOf('/node_modules/');
  let file =
    nm >= 0
      ? url.slice(nm + '/node_modules/'.length)
      : url.startsWith(ROOT_URL)
        ? url.slice(ROOT_URL.length)
        : url;
  file = file.replace(/^node:/, 'node:');
  return `${file}:${lineNumber + 1}`;
}

function top(
  counts: Map<string, { pkg: string; n: number }>,
  total: number,
  msPerSample: number,
  limit: number,
): Entry[] {
  return [...counts.entries()]
    .sort((a, b) => b[1].n - a[1].n)
    .slice(0, limit)
    .map(([name, { pkg, n }]) => ({
      name,
      pkg,
      pct: Math.round((1000 * n) / total) / 10,
      ms: Math.round(n * msPerSample),
    }));
}

export function summarizeProfile(
  file: string,
  window?: { fromUs: number; toUs: number },
  limit = 25,
): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const n of profile.nodes) byId.set(n.id, n);
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

  // Sample times: startTime + running sum of deltas.
  let t = profile.startTime;
  let filtered = false;
  let note: string | undefined;
  const inWindow: number[] = [];
  const usable = window && window.fromUs >= profile.startTime && window.toUs <= profile.endTime + 1_000_000;
  if (window && !usable) {
    note = `measured window [${window.fromUs}, ${window.toUs}] is outside the profile [${profile.startTime}, ${profile.endTime}]; whole profile used`;
  }
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0;
    if (!usable || (t >= window!.fromUs && t <= window!.toUs)) inWindow.push(profile.samples[i]!);
  }
  if (usable) filtered = true;
  const spanUs = usable ? window!.toUs - window!.fromUs : profile.endTime - profile.startTime;
  const total = inWindow.length || 1;
  const msPerSample = spanUs / 1000 / total;

  const selfPkg = new Map<string, { pkg: string; n: number }>();
  const selfFn = new Map<string, { pkg: string; n: number }>();
  const totalPkg = new Map<string, { pkg: string; n: number }>();
  const totalFn = new Map<string, { pkg: string; n: number }>();
  const fnKey = (f: CallFrame) => `${f.functionName || '(anonymous)'} ${shortLocation(f)}`.trim();
  let idle = 0;

  // Inclusive attribution: memoise each node's set of distinct packages/functions on its stack.
  const stackPkgs = new Map<number, Set<string>>();
  const stackFns = new Map<number, Map<string, string>>();
  const stackOf = (id: number): [Set<string>, Map<string, string>] => {
    const cached = stackPkgs.get(id);
    if (cached) return [cached, stackFns.get(id)!];
    const node = byId.get(id)!;
    const p = parent.get(id);
    const [pp, pf] = p === undefined ? [new Set<string>(), new Map<string, string>()] : stackOf(p);
    const pkgs = new Set(pp);
    const fns = new Map(pf);
    const pkg = packageOf(node.callFrame);
    if (!pkg.startsWith('(')) {
      pkgs.add(pkg);
      fns.set(fnKey(node.callFrame), pkg);
    }
    stackPkgs.set(id, pkgs);
    stackFns.set(id, fns);
    return [pkgs, fns];
  };

  for (const id of inWindow) {
    const node = byId.get(id)!;
    const pkg = packageOf(node.callFrame);
    if (pkg === '(idle)') idle++;
    const bump = (m: Map<string, { pkg: string; n: number }>, k: string, p: string) => {
      const e = m.get(k);
      if (e) e.n++;
      else m.set(k, { pkg: p, n: 1 });
    };
    bump(selfPkg, pkg, pkg);
    if (!pkg.startsWith('(') || pkg === '(gc)' || pkg === '(native)')
      bump(selfFn, fnKey(node.callFrame), pkg);
    const [pkgs, fns] = stackOf(id);
    for (const p of pkgs) bump(totalPkg, p, p);
    for (const [f, p] of fns) bump(totalFn, f, p);
  }

  return {
    file,
    window: {
      fromUs: window?.fromUs ?? profile.startTime,
      toUs: window?.toUs ?? profile.endTime,
      filtered,
      ...(note ? { note } : {}),
    },
    samples: inWindow.length,
    idlePct: Math.round((1000 * idle) / total) / 10,
    busyMs: Math.round((inWindow.length - idle) * msPerSample),
    selfByPackage: top(selfPkg, total, msPerSample, limit),
    totalByPackage: top(totalPkg, total, msPerSample, limit),
    selfByFunction: top(selfFn, total, msPerSample, limit),
    totalByFunction: top(totalFn, total, msPerSample, limit),
  };
}

export function formatProfile(title: string, s: ProfileSummary, rows = 15): string {
  const line = (e: Entry) =>
    `  ${e.pct.toFixed(1).padStart(5)}%  ${String(e.ms).padStart(6)} ms  ${e.name.length > 90 ? e.name.slice(0, 87) + '...' : e.name}${e.name === e.pkg ? '' : `  [${e.pkg}]`}`;
  const out = [
    `\n=== ${title} — ${s.samples} samples, busy ${s.busyMs} ms, idle ${s.idlePct}%${s.window.filtered ? ' (measured window only)' : ''}`,
  ];
  if (s.window.note) out.push(`  note: ${s.window.note}`);
  out.push(' self time by package:', ...s.selfByPackage.slice(0, rows).map(line));
  out.push(' total (inclusive) time by package:', ...s.totalByPackage.slice(0, rows).map(line));
  out.push(' self time by function:', ...s.selfByFunction.slice(0, rows).map(line));
  out.push(' total (inclusive) time by function:', ...s.totalByFunction.slice(0, rows).map(line));
  return out.join('\n');
}

/**
 * Memory per idle stream through the gateway, away from any database: a stub subgraph (runtime's subgraph server, one
 * subscription that never yields) and our gateway, each in its own process (stream-memory-proc.ts); this process opens
 * the streams, each on its own HTTP connection, like `npm run bench -- --coordination` does. Reports heap + external
 * memory after a full GC per added stream in each process (a baseline of `--baseline` streams subtracted), and with
 * `--snapshot <dir>` takes heap snapshots at both points and prints the biggest differences by constructor.
 *
 *   tsx gateway/perf/stream-memory.ts [--streams 2000] [--baseline 100] [--settle 3] [--snapshot /tmp/snaps]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    streams: { type: 'string', default: '2000' },
    baseline: { type: 'string', default: '100' },
    settle: { type: 'string', default: '3' },
    snapshot: { type: 'string' },
    sample: { type: 'boolean', default: false },
  },
});
const STREAMS = Number(values.streams);
const BASELINE = Number(values.baseline);
const SETTLE_MS = Number(values.settle) * 1000;
const ROOT = new URL('../../', import.meta.url).pathname;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Memory {
  rss: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
}

function start(role: string, env: Record<string, string> = {}): ChildProcess {
  const child = spawn(
    process.execPath,
    ['--expose-gc', '--import', 'tsx', join(ROOT, 'gateway/perf/stream-memory-proc.ts'), role],
    { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] },
  );
  return child;
}

function ask<T>(child: ChildProcess, message: object | null, type: string): Promise<T> {
  return new Promise((resolve) => {
    const on = (m: { type?: string }) => {
      if (m?.type !== type) return;
      child.off('message', on);
      resolve(m as T);
    };
    child.on('message', on);
    if (message) child.send(message);
  });
}

const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });

function openStream(base: URL): Promise<() => void> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ query: 'subscription S { idle }' });
    const req = http.request(
      {
        host: base.hostname,
        port: base.port,
        path: '/graphql/stream',
        method: 'POST',
        agent,
        headers: {
          'content-type': 'application/json',
          accept: 'text/event-stream',
          authorization: 'Bearer perf',
          'content-length': Buffer.byteLength(body),
        },
      },
      (res) => {
        if (res.statusCode !== 200) return reject(new Error(`stream answered ${res.statusCode}`));
        res.on('data', () => undefined);
        res.on('error', () => undefined);
        resolve(() => req.destroy());
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** Self size by "type:constructor" over a V8 heap snapshot. */
function bySelfSize(file: string): Map<string, { size: number; count: number }> {
  const snap = JSON.parse(readFileSync(file, 'utf8')) as {
    snapshot: { meta: { node_fields: string[]; node_types: [string[]] } };
    nodes: number[];
    strings: string[];
  };
  const fields = snap.snapshot.meta.node_fields;
  const types = snap.snapshot.meta.node_types[0];
  const width = fields.length;
  const [iType, iName, iSize] = ['type', 'name', 'self_size'].map((f) => fields.indexOf(f)) as [
    number,
    number,
    number,
  ];
  const out = new Map<string, { size: number; count: number }>();
  for (let i = 0; i < snap.nodes.length; i += width) {
    const type = types[snap.nodes[i + iType]!]!;
    let name = snap.strings[snap.nodes[i + iName]!]!;
    if (type === 'string' || type === 'concatenated string' || type === 'sliced string') name = '';
    if (name.length > 60) name = name.slice(0, 60);
    const key = `${type}:${name}`;
    const e = out.get(key) ?? { size: 0, count: 0 };
    e.size += snap.nodes[i + iSize]!;
    e.count++;
    out.set(key, e);
  }
  return out;
}

function diff(beforeFile: string, afterFile: string, streams: number): string[] {
  const a = bySelfSize(beforeFile);
  const b = bySelfSize(afterFile);
  const rows = [...b].map(([k, v]) => {
    const was = a.get(k) ?? { size: 0, count: 0 };
    return { k, bytes: (v.size - was.size) / streams, count: (v.count - was.count) / streams };
  });
  rows.sort((x, y) => y.bytes - x.bytes);
  return rows
    .slice(0, 40)
    .map((r) => `${r.bytes.toFixed(0).padStart(7)} B ${r.count.toFixed(2).padStart(7)}x  ${r.k}`);
}

const subgraph = start('subgraph');
const gateway = start('gateway', {
  SUBGRAPH_URL: (await ask<{ url: string }>(subgraph, null, 'ready')).url,
});
try {
  const base = new URL((await ask<{ url: string }>(gateway, null, 'ready')).url);
  const closers: Array<() => void> = [];
  const openMany = async (count: number) => {
    for (let i = 0; i < count; i += 200)
      closers.push(
        ...(await Promise.all(Array.from({ length: Math.min(200, count - i) }, () => openStream(base)))),
      );
  };
  const measure = async (label: string) => {
    await sleep(SETTLE_MS);
    const [g, s] = await Promise.all([
      ask<Memory>(gateway, { type: 'memory' }, 'memory'),
      ask<Memory>(subgraph, { type: 'memory' }, 'memory'),
    ]);
    if (values.snapshot) {
      for (const [name, child] of [
        ['gateway', gateway],
        ['subgraph', subgraph],
      ] as const)
        await ask(
          child,
          { type: 'snapshot', file: join(values.snapshot, `${name}-${label}.heapsnapshot`) },
          'snapshot',
        );
    }
    return { gateway: g, subgraph: s };
  };
  await openMany(BASELINE);
  const before = await measure('before');
  if (values.sample)
    await Promise.all([gateway, subgraph].map((c) => ask(c, { type: 'sampling-start' }, 'sampling-start')));
  const t0 = performance.now();
  await openMany(STREAMS - BASELINE);
  const openSeconds = (performance.now() - t0) / 1000;
  const after = await measure('after');
  const added = STREAMS - BASELINE;
  const live = (m: Memory) => m.heapUsed + m.external;
  const kb = (x: number) => Math.round((x / 1024 / added) * 10) / 10;
  const result = {
    streams: STREAMS,
    openSeconds: Math.round(openSeconds * 10) / 10,
    perStreamKb: {
      gateway: kb(live(after.gateway) - live(before.gateway)),
      gatewayHeap: kb(after.gateway.heapUsed - before.gateway.heapUsed),
      gatewayRss: kb(after.gateway.rss - before.gateway.rss),
      subgraph: kb(live(after.subgraph) - live(before.subgraph)),
      subgraphHeap: kb(after.subgraph.heapUsed - before.subgraph.heapUsed),
      subgraphRss: kb(after.subgraph.rss - before.subgraph.rss),
    },
  };
  console.log(JSON.stringify(result, null, 2));
  if (values.sample) {
    await sleep(SETTLE_MS);
    for (const [name, child] of [
      ['gateway', gateway],
      ['subgraph', subgraph],
    ] as const) {
      const { profile } = await ask<{
        profile: { stacks: Record<string, number>; packages: Record<string, number> };
      }>(child, { type: 'sampling-stop' }, 'sampling-stop');
      const top = (o: Record<string, number>, n: number) =>
        Object.entries(o)
          .sort((a, b) => b[1] - a[1])
          .slice(0, n)
          .map(([k, v]) => `${(v / added).toFixed(0).padStart(7)} B  ${k}`);
      console.log(`\n${name}: live bytes per added stream by package (sampled, innermost package frame)`);
      for (const line of top(profile.packages, 20)) console.log(line);
      console.log(`\n${name}: by allocating stack`);
      for (const line of top(profile.stacks, 45)) console.log(line);
    }
  }
  if (values.snapshot) {
    for (const name of ['gateway', 'subgraph']) {
      console.log(`\n${name}: per added stream, by self size (type:constructor)`);
      const f = (label: string) => join(values.snapshot!, `${name}-${label}.heapsnapshot`);
      for (const line of diff(f('before'), f('after'), added)) console.log(line);
    }
  }
  for (const close of closers) close();
} finally {
  gateway.send({ type: 'stop' });
  subgraph.send({ type: 'stop' });
}

/**
 * A gateway's own CPU per request, away from database and subgraph costs: canned subgraphs in one process, the
 * gateway under test in another, autocannon here. Reports the target process's CPU time (user + system, from
 * /proc) per answered request, which says more than requests/s on a shared machine.
 *
 *   tsx gateway/perf/cpu.ts [--targets ours,ours-nodedupe,stock,stock-keepalive] [--seconds 10] [--connections 16]
 *
 * Every connection sends the same query; for `ours` that lets identical in-flight subgraph reads be shared, which is
 * why `ours-nodedupe` is listed too.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';

const { values } = parseArgs({
  options: {
    targets: { type: 'string', default: 'ours,ours-nodedupe,stock-keepalive,stock' },
    seconds: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '3' },
    connections: { type: 'string', default: '16' },
    profile: { type: 'string' },
  },
});
const ROOT = new URL('../../', import.meta.url).pathname;
const QUERY =
  '{ rooms(first: 5) { edges { node { name messages(first: 5) { edges { node { body author { displayName } } } } } } } }';

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]); // utime + stime
  return (ticks * 1000) / 100; // USER_HZ = 100
}

function start(args: string[], env: Record<string, string> = {}, nodeFlags: string[] = []): ChildProcess {
  return spawn(process.execPath, [...nodeFlags, '--import', 'tsx', ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
}

async function firstLine(child: ChildProcess): Promise<string> {
  let buf = '';
  for await (const chunk of child.stdout!) {
    buf += chunk;
    const i = buf.indexOf('\n');
    if (i >= 0) return buf.slice(0, i);
  }
  throw new Error('child ended before printing');
}

async function waitReady(url: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    try {
      const r = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: QUERY }),
      });
      const body = (await r.json()) as { data?: unknown };
      if (r.ok && body.data) return;
    } catch {
      /* not yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} never answered`);
}

function load(
  url: string,
  seconds: number,
  connections: number,
): Promise<{ total: number; rps: number; p99: number; non2xx: number }> {
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url,
        method: 'POST',
        connections,
        duration: seconds,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: QUERY }),
      },
      (
        err: unknown,
        r: { requests: { total: number; average: number }; latency: { p99: number }; non2xx: number },
      ) =>
        err
          ? reject(err)
          : resolve({
              total: r.requests.total,
              rps: r.requests.average,
              p99: r.latency.p99,
              non2xx: r.non2xx,
            }),
    );
  });
}

const subgraphs = start(['gateway/perf/canned-subgraphs.ts']);
const urls = JSON.parse(await firstLine(subgraphs)) as Record<string, string>;
const dir = mkdtempSync(join(tmpdir(), 'gw-perf-'));
let sdl = readFileSync(join(ROOT, 'schemas/supergraph.graphql'), 'utf8');
for (const [name, url] of Object.entries(urls))
  sdl = sdl.replace(new RegExp(`(@join__graph\\(name: "${name}", url: ")[^"]+`), `$1${url}`);
writeFileSync(join(dir, 'supergraph.graphql'), sdl);

const results: Array<Record<string, unknown>> = [];
for (const target of values.targets!.split(',')) {
  const port = await freePort();
  let child: ChildProcess;
  let url: string;
  if (target.startsWith('ours')) {
    child = start(
      ['gateway/src/standalone.ts', ...(target === 'ours-nodedupe' ? ['--no-dedupe'] : [])],
      {
        GATEWAY_PORT: String(port),
        LOG_LEVEL: 'info',
        DATA_DIR: 'memory://',
        ...Object.fromEntries(Object.entries(urls).map(([n, u]) => [`SUBGRAPH_${n.toUpperCase()}_URL`, u])),
      },
      values.profile ? ['--cpu-prof', `--cpu-prof-dir=${values.profile}/${target}`] : [],
    );
    url = `http://127.0.0.1:${port}/graphql`;
  } else {
    child = start(
      [
        'bench/src/targets/apollo-stock.ts',
        '--sdl',
        join(dir, 'supergraph.graphql'),
        '--port',
        String(port),
        ...(target === 'stock-keepalive' ? ['--keepalive'] : []),
      ],
      { APOLLO_TELEMETRY_DISABLED: 'true' },
    );
    url = `http://127.0.0.1:${port}/`;
  }
  child.stdout!.resume();
  await waitReady(url);
  await load(url, Number(values.warmup), Number(values.connections));
  const before = cpuMs(child.pid!);
  const r = await load(url, Number(values.seconds), Number(values.connections));
  const used = cpuMs(child.pid!) - before;
  results.push({
    target,
    rps: Math.round(r.rps),
    p99ms: r.p99,
    non2xx: r.non2xx,
    cpuUsPerReq: Math.round((used * 1000) / r.total),
  });
  console.log(JSON.stringify(results.at(-1)));
  if (values.profile && target.startsWith('ours')) {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  } else child.kill('SIGKILL');
}
subgraphs.kill('SIGKILL');
console.table(results);

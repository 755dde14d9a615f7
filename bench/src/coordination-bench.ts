/**
 * Coordination streams at scale (issue 4): `npm run bench -- --coordination`, or on its own
 * `npx tsx bench/src/coordination-bench.ts [--streams 9800] [--devices 200] [--rate 1000] [--seconds 5]`; prints JSON.
 *
 * Three processes, as production would split them: the subgraphs (startPlatform's four on in-memory PGlite, or
 * DATABASE_URL), our gateway alone (gateway/src/standalone.ts), and this process as the desktops.
 *  1. Idle streams: opens `--streams` graphql-sse device streams (`deviceIntents`) through the gateway, spread over
 *     `--devices` enrolled devices, each its own HTTP connection; waits until every one answered 200, lets them sit,
 *     and reports the growth of the gateway's and the subgraphs' resident memory per stream (VmRSS from /proc, after
 *     the same settling time on both sides of the measurement; a baseline of 100 streams is subtracted).
 *  2. Latency: creates intents at `--rate` per second for `--seconds` through the gateway (round-robin over the
 *     devices, an OPERATOR-or-above user token) and times each from the moment its create request is sent to the
 *     moment its device's stream delivers it; p50/p90/p99/max, and the rate actually achieved.
 * Descriptors: every stream holds two sockets in the gateway (client side, and its own upstream request to the
 * coordination subgraph), so the gateway needs 2 × streams descriptors; the default stream count is the most this
 * machine's hard limit (`ulimit -Hn`) allows, at most 10,000.
 */
import { execFileSync } from 'node:child_process';
import http from 'node:http';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { BENCH_SRC, freePort, sleep, spawnChild, type Child } from './lib/proc.js';
import { machineInfo } from './lib/report.js';
import type { SubgraphsReady } from './procs/subgraphs.js';

function hardFdLimit(): number {
  try {
    return Number(execFileSync('bash', ['-c', 'ulimit -Hn'], { encoding: 'utf8' }).trim()) || 1024;
  } catch {
    return 1024;
  }
}

const fdLimit = hardFdLimit();
const { values } = parseArgs({
  options: {
    streams: { type: 'string', default: String(Math.min(10_000, Math.floor((fdLimit - 400) / 2))) },
    devices: { type: 'string', default: '200' },
    rate: { type: 'string', default: '1000' },
    seconds: { type: 'string', default: '5' },
    settle: { type: 'string', default: '5' },
  },
});
const STREAMS = Number(values.streams);
const DEVICES = Number(values.devices);
const RATE = Number(values.rate);
const SECONDS = Number(values.seconds);
const SETTLE_MS = Number(values.settle) * 1000;
const BASELINE = 100;

const runDir = mkdtempSync(join(tmpdir(), 'agentgraph-coord-bench-'));
const children: Child[] = [];
const log = (m: string) => process.stderr.write(`[coordination-bench] ${m}\n`);

interface Memory {
  rss: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
}

/** The child's memory after a full GC (bench/src/lib/memory-probe.ts). */
async function memoryOf(child: Child): Promise<Memory> {
  const answer = child.message<Memory & { gc: boolean }>(
    (m) => (m as { type?: string }).type === 'memory',
    60_000,
  );
  child.send({ type: 'memory' });
  const m = await answer;
  if (!m.gc) throw new Error(`${child.name} was started without --expose-gc`);
  return m;
}

const STREAM_QUERY = 'subscription D { deviceIntents { seq params } }';
const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });

interface OpenStream {
  deviceIndex: number;
  close(): void;
}

/** One graphql-sse stream over its own connection; `onIntent` gets each intent's `n` (from params). */
function openStream(
  url: URL,
  token: string,
  deviceIndex: number,
  onIntent: (n: number) => void,
): Promise<OpenStream> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ query: STREAM_QUERY });
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        path: '/graphql/stream',
        method: 'POST',
        agent,
        headers: {
          'content-type': 'application/json',
          accept: 'text/event-stream',
          authorization: `Bearer ${token}`,
          'content-length': Buffer.byteLength(body),
        },
      },
      (res) => {
        if (res.statusCode !== 200) {
          reject(new Error(`stream answered ${res.statusCode}`));
          res.resume();
          return;
        }
        res.setEncoding('utf8');
        let buffer = '';
        res.on('data', (chunk: string) => {
          buffer += chunk;
          let i;
          while ((i = buffer.indexOf('\n\n')) >= 0) {
            const event = buffer.slice(0, i);
            buffer = buffer.slice(i + 2);
            const m = /\\"n\\":(\d+)/.exec(event);
            if (m) onIntent(Number(m[1]));
          }
        });
        res.on('error', () => undefined);
        resolve({ deviceIndex, close: () => req.destroy() });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function main() {
  const ports = await Promise.all(Array.from({ length: 6 }, () => freePort()));
  const subgraphs = spawnChild({
    name: 'subgraphs',
    entry: join(BENCH_SRC, 'procs/subgraphs.ts'),
    env: {
      DATA_DIR: 'memory://',
      HOST: '127.0.0.1',
      IDENTITY_PORT: String(ports[0]),
      MEMORY_PORT: String(ports[1]),
      COORDINATION_PORT: String(ports[2]),
      CATALOG_PORT: String(ports[3]),
      GATEWAY_PORT: String(ports[4]),
      LOG_LEVEL: 'warn',
      BENCH_ROOMS: '0',
      BENCH_DEVICES: String(DEVICES),
      // Measured here: the streams and the fan-out, not the rate limiter (tested in the suite).
      RATE_LIMIT_INTENT_PRINCIPAL: 'off',
      RATE_LIMIT_INTENT_TENANT: 'off',
    },
    logDir: runDir,
    ipc: true,
    nodeFlags: ['--expose-gc'],
  });
  children.push(subgraphs);
  const sg = await subgraphs.message<SubgraphsReady>(
    (m) => (m as { type?: string }).type === 'ready',
    300_000,
  );
  const devices = sg.devices!;
  const gateway = spawnChild({
    name: 'gateway',
    entry: join(BENCH_SRC, 'targets/ours.ts'),
    env: {
      ...Object.fromEntries(
        Object.entries(sg.subgraphUrls).map(([n, u]) => [`SUBGRAPH_${n.toUpperCase()}_URL`, u]),
      ),
      GATEWAY_PORT: String(ports[5]),
      HOST: '127.0.0.1',
      TOKEN_ISSUER: sg.tokenIssuer,
      JWKS_URL: sg.jwksUrl,
      DATA_DIR: 'memory://',
      LOG_LEVEL: 'warn',
    },
    logDir: runDir,
    ipc: true,
    nodeFlags: ['--expose-gc'],
  });
  children.push(gateway);
  const gatewayUrl = new URL(`http://127.0.0.1:${ports[5]}`);
  for (let i = 0; ; i++) {
    try {
      const r = await fetch(new URL('/readyz', gatewayUrl));
      if (r.ok) break;
    } catch {
      /* not yet */
    }
    if (i > 600) throw new Error(`gateway not ready; see ${gateway.logFile}`);
    await sleep(100);
  }

  // --- 1. idle streams ---------------------------------------------------------------------------------------
  const received = new Map<number, number>();
  const onIntent = (n: number) => {
    if (!received.has(n)) received.set(n, performance.now());
  };
  const streams: OpenStream[] = [];
  const openBatch = async (count: number) => {
    const batch = 200;
    for (let i = 0; i < count; i += batch) {
      const opened = await Promise.all(
        Array.from({ length: Math.min(batch, count - i) }, (_, j) => {
          const index = (streams.length + j) % devices.length;
          return openStream(gatewayUrl, devices[index]!.token, index, onIntent);
        }),
      );
      streams.push(...opened);
    }
  };
  const t0 = performance.now();
  await openBatch(BASELINE);
  await sleep(SETTLE_MS);
  const base = { gateway: await memoryOf(gateway), subgraphs: await memoryOf(subgraphs) };
  await openBatch(STREAMS - BASELINE);
  const openMs = performance.now() - t0;
  await sleep(SETTLE_MS);
  const full = { gateway: await memoryOf(gateway), subgraphs: await memoryOf(subgraphs) };
  const added = STREAMS - BASELINE;
  // Live memory: heap + external (buffers) after GC; RSS also reported (it includes freed pages not returned).
  const live = (m: Memory) => m.heapUsed + m.external;
  const kb = (bytes: number) => Math.round((bytes / 1024 / added) * 10) / 10;
  const perStream = {
    gatewayKb: kb(live(full.gateway) - live(base.gateway)),
    subgraphsKb: kb(live(full.subgraphs) - live(base.subgraphs)),
    gatewayRssKb: kb(full.gateway.rss - base.gateway.rss),
    subgraphsRssKb: kb(full.subgraphs.rss - base.subgraphs.rss),
  };
  log(`${STREAMS} streams open in ${(openMs / 1000).toFixed(1)} s; per stream ${JSON.stringify(perStream)}`);

  // --- 2. create-to-received latency at RATE/s ----------------------------------------------------------------
  const ownerToken = sg.token;
  const sent = new Map<number, number>();
  const total = RATE * SECONDS;
  const errors: string[] = [];
  const createAgent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const create = (n: number) =>
    new Promise<void>((resolve) => {
      const device = devices[n % devices.length]!;
      const body = JSON.stringify({
        query:
          'mutation C($i: CreateIntentInput!, $k: ID!) { createIntent(input: $i, idempotencyKey: $k) { intent { seq } } }',
        variables: {
          i: { deviceId: device.id, action: 'bench', params: JSON.stringify({ n }), expiresInSeconds: 600 },
          k: `bench-${n}-${process.pid}`,
        },
      });
      sent.set(n, performance.now());
      const req = http.request(
        {
          host: gatewayUrl.hostname,
          port: gatewayUrl.port,
          path: '/graphql',
          method: 'POST',
          agent: createAgent,
          headers: {
            'content-type': 'application/json',
            authorization: `Bearer ${ownerToken}`,
            'content-length': Buffer.byteLength(body),
          },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          res.on('end', () => {
            if (res.statusCode !== 200 || text.includes('"errors"')) errors.push(text.slice(0, 300));
            resolve();
          });
        },
      );
      req.on('error', (e) => {
        errors.push(String(e));
        resolve();
      });
      req.end(body);
    });
  const pending: Promise<void>[] = [];
  const start = performance.now();
  for (let n = 1; n <= total; n++) {
    const due = start + ((n - 1) * 1000) / RATE;
    const wait = due - performance.now();
    if (wait > 1) await sleep(wait);
    pending.push(create(n));
  }
  await Promise.all(pending);
  const createdMs = performance.now() - start;
  // Let the last deliveries arrive: until all are in, or nothing new came for 20 s.
  for (let idle = 0, seen = received.size; received.size < total - errors.length && idle < 200;) {
    await sleep(100);
    if (received.size === seen) idle++;
    else [idle, seen] = [0, received.size];
  }
  const latencies: number[] = [];
  for (const [n, at] of sent) {
    const got = received.get(n);
    if (got !== undefined) latencies.push(got - at);
  }
  latencies.sort((a, b) => a - b);
  const q = (p: number) =>
    Math.round((latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? NaN) * 10) /
    10;

  const result = {
    bench: 'coordination-streams',
    machine: machineInfo(),
    database: process.env['DATABASE_URL'] ? 'postgres' : 'pglite',
    fdHardLimit: fdLimit,
    idleStreams: {
      streams: STREAMS,
      target: 10_000,
      devices: DEVICES,
      openSeconds: Math.round(openMs / 100) / 10,
      memoryBytes: { baseline: base, full },
      perStreamKb: {
        gateway: perStream.gatewayKb,
        subgraphs: perStream.subgraphsKb,
        total: Math.round((perStream.gatewayKb + perStream.subgraphsKb) * 10) / 10,
        gatewayRss: perStream.gatewayRssKb,
        subgraphsRss: perStream.subgraphsRssKb,
      },
      targetPerStreamKb: 20,
    },
    latency: {
      targetRatePerSecond: RATE,
      seconds: SECONDS,
      created: total - errors.length,
      achievedRatePerSecond: Math.round((total / createdMs) * 1000),
      errors: errors.length,
      firstError: errors[0] ?? null,
      delivered: latencies.length,
      createToReceivedMs: { p50: q(0.5), p90: q(0.9), p99: q(0.99), max: latencies.at(-1) ?? null },
      targetP99Ms: 100,
      openStreamsDuringRun: streams.length,
    },
  };
  console.log(JSON.stringify(result, null, 2));
  for (const s of streams) s.close();
}

try {
  await main();
} finally {
  for (const c of children.reverse()) await c.stop(10_000).catch(() => undefined);
}

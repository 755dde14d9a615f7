/**
 * Coordination streams at scale: `npm run bench -- --coordination`, or on its own
 * `npx tsx bench/src/coordination-bench.ts [--database postgres|pglite] [--streams N] [--devices 200]
 *  [--rate 1000[,300,...]] [--seconds 5] [--warmup 3] [--intents-only] [--rate-limits off|<n>/s:<burst>] [--profile]`;
 *  prints JSON.
 *
 * Three processes, as production would split them: the subgraphs (startPlatform's four on PostgreSQL — DATABASE_URL,
 * else a private cluster from scripts/pg-cluster.sh, stopped afterwards — or with `--database pglite` an in-memory
 * PGlite), our gateway alone (gateway/src/standalone.ts), and this process as the desktops.
 *  1. Idle streams: opens `--streams` graphql-sse device streams (`deviceIntents`) through the gateway, spread over
 *     `--devices` enrolled devices, each its own HTTP connection; waits until every one answered 200, lets them sit,
 *     and reports the growth of the gateway's and the subgraphs' live memory per stream (heap + external after a
 *     forced GC, on both sides of the measurement; a baseline of 100 streams is subtracted). `--intents-only` skips
 *     this part and opens one stream per device.
 *  2. Latency: after `--warmup` seconds at the first rate (discarded), for each `--rate` in turn, creates intents at
 *     that rate for `--seconds` through the gateway (round-robin over the devices, an OWNER user token) and times
 *     each from the moment its create request is sent to the moment its device's stream delivers it (and to the
 *     create's answer); p50/p90/p99/max, the rate actually achieved, the CPU each process used per intent
 *     (subgraphs, gateway, this process, PostgreSQL's processes of a private cluster, the rest of the machine; also
 *     net of each process's background use with no intents), and the subgraphs' database round trips per intent.
 *     `--profile` runs the subgraphs and the gateway under `node --cpu-prof` and summarises each rate's window.
 * Descriptors: every stream holds one socket in the gateway (the client's; streams reach the coordination subgraph
 * multiplexed over one connection) and one here, so the default stream count is the most this machine's hard limit
 * (`ulimit -Hn`) allows with 400 to spare, at most 10,000.
 */
import { execFileSync } from 'node:child_process';
import http from 'node:http';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { benchDatabase, defaultDatabaseKind } from './lib/database.js';
import {
  cpuProfileFlags,
  formatProfile,
  mainThreadProfile,
  summarizeProfile,
  type ProfileSummary,
} from './lib/profile.js';
import {
  BENCH_SRC,
  REPO_ROOT,
  freePort,
  machineBusyMs,
  monoMicros,
  sleep,
  spawnChild,
  type Child,
} from './lib/proc.js';
import { dbCountsOf, memoryOf, postgresCpuMs as clusterCpuMs, type Memory } from './lib/probes.js';
import { startOurGateway } from './lib/our-gateway.js';
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
    database: {
      type: 'string',
      default: defaultDatabaseKind(),
    },
    streams: { type: 'string', default: String(Math.min(10_000, fdLimit - 400)) },
    devices: { type: 'string', default: '200' },
    rate: { type: 'string', default: '1000' },
    seconds: { type: 'string', default: '5' },
    settle: { type: 'string', default: '5' },
    // Seconds of creating at the first rate before measuring (discarded): JIT, pool connections, the device cache.
    warmup: { type: 'string', default: '3' },
    'intents-only': { type: 'boolean', default: false },
    // 'off' (default, as in earlier runs) or a limit for both buckets, e.g. 100000/s:100000: the limiter's cost
    // without its refusals.
    'rate-limits': { type: 'string', default: 'off' },
    profile: { type: 'boolean', default: false },
  },
});
const DATABASE = values.database;
if (DATABASE !== 'postgres' && DATABASE !== 'pglite') {
  throw new Error(`--database must be postgres or pglite, not ${DATABASE}`);
}
const INTENTS_ONLY = values['intents-only'];
const DEVICES = Number(values.devices);
const STREAMS = INTENTS_ONLY ? DEVICES : Number(values.streams);
const RATES = values.rate.split(',').map(Number);
if (RATES.some((r) => !(r > 0))) throw new Error(`--rate must be positive numbers, comma-separated`);
const SECONDS = Number(values.seconds);
const SETTLE_MS = Number(values.settle) * 1000;
const WARMUP_SECONDS = Number(values.warmup);
const BASELINE = 100;
const PROFILE = values.profile;

const runDir = mkdtempSync(join(tmpdir(), 'agentgraph-coord-bench-'));
const children: Child[] = [];
const log = (m: string) => process.stderr.write(`[coordination-bench] ${m}\n`);

// --- the database ------------------------------------------------------------------------------------------------
const database = benchDatabase(DATABASE, REPO_ROOT, log);

const postgresCpuMs = () => clusterCpuMs(database.clusterDir);

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

const cpuProf = (name: string) => cpuProfileFlags(runDir, name);

async function main() {
  const ports = await Promise.all(Array.from({ length: 6 }, () => freePort()));
  const subgraphs = spawnChild({
    name: 'subgraphs',
    entry: join(BENCH_SRC, 'procs/subgraphs.ts'),
    env: {
      ...(await database.env()),
      HOST: '127.0.0.1',
      IDENTITY_PORT: String(ports[0]),
      MEMORY_PORT: String(ports[1]),
      COORDINATION_PORT: String(ports[2]),
      CATALOG_PORT: String(ports[3]),
      GATEWAY_PORT: String(ports[4]),
      LOG_LEVEL: 'warn',
      BENCH_ROOMS: '0',
      BENCH_DEVICES: String(DEVICES),
      // Measured here: the streams and the fan-out; the limiter's refusals are tested in the suite.
      RATE_LIMIT_INTENT_PRINCIPAL: values['rate-limits'],
      RATE_LIMIT_INTENT_TENANT: values['rate-limits'],
    },
    logDir: runDir,
    ipc: true,
    nodeFlags: ['--expose-gc', ...(PROFILE ? cpuProf('subgraphs') : [])],
  });
  children.push(subgraphs);
  const sg = await subgraphs.message<SubgraphsReady>(
    (m) => (m as { type?: string }).type === 'ready',
    300_000,
  );
  const devices = sg.devices!;
  const gateway = await startOurGateway({
    subgraphs: sg,
    port: ports[5]!,
    runDir,
    profile: PROFILE,
    children,
  });
  const gatewayUrl = new URL(`http://127.0.0.1:${ports[5]}`);

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
  let idleStreams: Record<string, unknown> | null = null;
  if (INTENTS_ONLY) {
    await openBatch(STREAMS);
    log(`${STREAMS} streams open (one per device; --intents-only)`);
  } else {
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
    log(
      `${STREAMS} streams open in ${(openMs / 1000).toFixed(1)} s; per stream ${JSON.stringify(perStream)}`,
    );
    idleStreams = {
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
    };
  }

  // --- 2. create-to-received latency at each rate --------------------------------------------------------------
  const ownerToken = sg.token;
  const createAgent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  let nextN = 1;
  let background: { subgraphs: number | null; gateway: number | null; postgres: number | null } = {
    subgraphs: null,
    gateway: null,
    postgres: null,
  };
  const windows: { rate: number; fromUs: number; toUs: number }[] = [];

  async function measure(rate: number, seconds = SECONDS) {
    const sent = new Map<number, number>();
    const answered = new Map<number, number>();
    const total = Math.round(rate * seconds);
    const errors: string[] = [];
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
              answered.set(n, performance.now());
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
    const first = nextN;
    nextN += total;
    const dbBefore = await dbCountsOf(subgraphs);
    const cpuBefore = {
      subgraphs: subgraphs.cpuMs(),
      gateway: gateway.cpuMs(),
      bench: process.cpuUsage(),
      postgres: postgresCpuMs(),
      machine: machineBusyMs(),
    };
    const fromUs = monoMicros();
    const pending: Promise<void>[] = [];
    const start = performance.now();
    for (let i = 0; i < total; i++) {
      const due = start + (i * 1000) / rate;
      const wait = due - performance.now();
      if (wait > 1) await sleep(wait);
      pending.push(create(first + i));
    }
    await Promise.all(pending);
    const createdMs = performance.now() - start;
    // Let the last deliveries arrive: until all are in, or nothing new came for 20 s.
    const delivered = () => {
      let c = 0;
      for (const n of sent.keys()) if (received.has(n)) c++;
      return c;
    };
    for (let idle = 0, seen = delivered(); seen < total - errors.length && idle < 200;) {
      await sleep(100);
      const now = delivered();
      if (now === seen) idle++;
      else [idle, seen] = [0, now];
    }
    const toUs = monoMicros();
    const cpuAfter = {
      subgraphs: subgraphs.cpuMs(),
      gateway: gateway.cpuMs(),
      bench: process.cpuUsage(cpuBefore.bench),
      postgres: postgresCpuMs(),
      machine: machineBusyMs(),
    };
    const dbAfter = await dbCountsOf(subgraphs);
    windows.push({ rate, fromUs, toUs });
    const latencies: number[] = [];
    let lastReceived = start;
    for (const [n, at] of sent) {
      const got = received.get(n);
      if (got !== undefined) {
        latencies.push(got - at);
        lastReceived = Math.max(lastReceived, got);
      }
    }
    latencies.sort((a, b) => a - b);
    const quantile = (sorted: number[], p: number) =>
      Math.round((sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? NaN) * 10) / 10;
    const q = (p: number) => quantile(latencies, p);
    // The create request alone (sent → answered), to tell the creating path from the streaming path.
    const responses = [...answered].map(([n, at]) => at - sent.get(n)!).sort((a, b) => a - b);
    const created = total - errors.length;
    const perIntent = (ms: number | null | undefined, base: number | null | undefined) =>
      ms == null || base == null || created === 0 ? null : Math.round(((ms - base) * 1000) / created);
    const benchMs = (cpuAfter.bench.user + cpuAfter.bench.system) / 1000;
    const machineMs =
      cpuAfter.machine == null || cpuBefore.machine == null ? null : cpuAfter.machine - cpuBefore.machine;
    const ownMs =
      (cpuAfter.subgraphs ?? 0) -
      (cpuBefore.subgraphs ?? 0) +
      ((cpuAfter.gateway ?? 0) - (cpuBefore.gateway ?? 0)) +
      benchMs +
      ((cpuAfter.postgres ?? 0) - (cpuBefore.postgres ?? 0));
    const windowMs = (toUs - fromUs) / 1000;
    const net = (after: number | null, before: number | null, cores: number | null) =>
      after == null || before == null || cores == null || created === 0
        ? null
        : Math.round(((after - before - cores * windowMs) * 1000) / created);
    const bySql: Record<string, number> = {};
    for (const [sql, count] of Object.entries(dbAfter.bySql)) {
      const d = count - (dbBefore.bySql[sql] ?? 0);
      if (d > 0 && created > 0) bySql[sql] = Math.round((d / created) * 100) / 100;
    }
    const result = {
      targetRatePerSecond: rate,
      seconds,
      created,
      // Creates sent per second of sending (the schedule), and creates answered per second until the last answer.
      achievedRatePerSecond: Math.round((total / createdMs) * 1000),
      deliveredPerSecond: Math.round((latencies.length / (lastReceived - start)) * 1000),
      errors: errors.length,
      firstError: errors[0] ?? null,
      delivered: latencies.length,
      createToReceivedMs: { p50: q(0.5), p90: q(0.9), p99: q(0.99), max: latencies.at(-1) ?? null },
      createResponseMs: {
        p50: quantile(responses, 0.5),
        p90: quantile(responses, 0.9),
        p99: quantile(responses, 0.99),
        max: responses.at(-1) ?? null,
      },
      targetP99Ms: 100,
      openStreamsDuringRun: streams.length,
      cpuUsPerIntent: {
        subgraphs: perIntent(cpuAfter.subgraphs, cpuBefore.subgraphs),
        gateway: perIntent(cpuAfter.gateway, cpuBefore.gateway),
        benchClient: perIntent(benchMs, 0),
        postgres: perIntent(cpuAfter.postgres, cpuBefore.postgres),
        others: machineMs == null ? null : perIntent(Math.max(0, machineMs - ownMs), 0),
      },
      // The same net of each process's background use (measured with no intents before the first rate).
      netCpuUsPerIntent: {
        subgraphs: net(cpuAfter.subgraphs, cpuBefore.subgraphs, background.subgraphs),
        gateway: net(cpuAfter.gateway, cpuBefore.gateway, background.gateway),
        postgres: net(cpuAfter.postgres, cpuBefore.postgres, background.postgres),
      },
      // Cores each process used over the window (1 = one full core).
      coresUsed: {
        windowMs: Math.round(windowMs),
        subgraphs:
          Math.round((((cpuAfter.subgraphs ?? 0) - (cpuBefore.subgraphs ?? 0)) / windowMs) * 100) / 100,
        gateway: Math.round((((cpuAfter.gateway ?? 0) - (cpuBefore.gateway ?? 0)) / windowMs) * 100) / 100,
        benchClient: Math.round((benchMs / windowMs) * 100) / 100,
        postgres:
          cpuAfter.postgres == null || cpuBefore.postgres == null
            ? null
            : Math.round(((cpuAfter.postgres - cpuBefore.postgres) / windowMs) * 100) / 100,
        others:
          machineMs == null ? null : Math.round((Math.max(0, machineMs - ownMs) / windowMs) * 100) / 100,
      },
      db: {
        statementsPerIntent: created
          ? Math.round(((dbAfter.statements - dbBefore.statements) / created) * 10) / 10
          : null,
        transactionsPerIntent: created
          ? Math.round(((dbAfter.transactions - dbBefore.transactions) / created) * 10) / 10
          : null,
        bySql,
      },
    };
    log(
      `rate ${rate}/s: achieved ${result.achievedRatePerSecond}/s, delivered ${result.deliveredPerSecond}/s, ` +
        `p50 ${result.createToReceivedMs.p50} ms, p99 ${result.createToReceivedMs.p99} ms ` +
        `(create answered p50 ${result.createResponseMs.p50} ms, p99 ${result.createResponseMs.p99} ms), errors ${errors.length}; ` +
        `cores ${JSON.stringify(result.coresUsed)}; db stmts/intent ${result.db.statementsPerIntent}`,
    );
    return result;
  }

  // Background: what each process uses with the streams open and no intents (timers, sweepers, keep-alives), so
  // the CPU per intent can be given net of it.
  const idleBefore = { subgraphs: subgraphs.cpuMs(), gateway: gateway.cpuMs(), postgres: postgresCpuMs() };
  const idleStart = performance.now();
  await sleep(5000);
  const idleMs = performance.now() - idleStart;
  const coresOf = (a: number | null, b: number | null) =>
    a == null || b == null ? null : Math.round(((b - a) / idleMs) * 1000) / 1000;
  background = {
    subgraphs: coresOf(idleBefore.subgraphs, subgraphs.cpuMs()),
    gateway: coresOf(idleBefore.gateway, gateway.cpuMs()),
    postgres: coresOf(idleBefore.postgres, postgresCpuMs()),
  };
  log(`background (no intents), cores: ${JSON.stringify(background)}`);

  if (WARMUP_SECONDS > 0) {
    log(`warm-up: ${WARMUP_SECONDS} s at ${RATES[0]}/s (discarded)`);
    await measure(RATES[0]!, WARMUP_SECONDS);
    await sleep(1000);
  }
  const latency = [];
  for (const rate of RATES) {
    latency.push(await measure(rate));
    await sleep(1000);
  }
  for (const s of streams) s.close();

  let profiles: Record<string, ProfileSummary> | null = null;
  if (PROFILE) {
    await Promise.all([gateway.stop(30_000), subgraphs.stop(30_000)]);
    profiles = {};
    for (const w of windows) {
      for (const name of ['subgraphs', 'gateway']) {
        try {
          const s = summarizeProfile(mainThreadProfile(runDir, name), w);
          profiles[`${name}@${w.rate}`] = s;
          process.stderr.write(formatProfile(`${name} process at ${w.rate} intents/s`, s) + '\n');
        } catch (err) {
          log(`no ${name} profile: ${(err as Error).message}`);
        }
      }
    }
  }

  const result = {
    bench: 'coordination-streams',
    machine: machineInfo(),
    database: DATABASE,
    rateLimits: values['rate-limits'],
    fdHardLimit: fdLimit,
    runDir,
    idleStreams,
    backgroundCores: background,
    // One entry per --rate; `latency` alone when there was one rate (the shape earlier runs had).
    latency: latency.length === 1 ? latency[0] : latency,
    ...(profiles ? { profiles } : {}),
  };
  console.log(JSON.stringify(result, null, 2));
}

try {
  await main();
} finally {
  for (const c of children.reverse()) await c.stop(10_000).catch(() => undefined);
  await database.close();
}

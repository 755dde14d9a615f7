/**
 * Room fan-out: `npm run bench -- --fanout [options]`, or alone
 * `npx tsx bench/src/fanout-bench.ts [--database postgres|pglite] [--sizes 1000,5000,10000] [--messages 20]
 *  [--tokens 8] [--gap-ms 300] [--settle 3] [--profile]`; prints JSON.
 *
 * Three processes, as in coordination-bench.ts: the subgraphs (PostgreSQL — DATABASE_URL, else a private cluster from
 * scripts/pg-cluster.sh, stopped afterwards — or an in-memory PGlite), our gateway alone, and this process as the
 * clients. One tenant, one room, `--tokens` access tokens of its owner (distinct callers) spread over the streams.
 * For each size in `--sizes` (streams are added up to it, never closed between sizes):
 *  1. opens graphql-sse streams (`roomMessages(roomId)`, live only) through the gateway over raw sockets (one
 *     connection each; the response is scanned for `"seq":N`, no SSE or JSON parser per stream, so the clients' CPU
 *     stays small; it is reported), lets them settle and reads each child's memory after a full GC: RSS and live heap
 *     per stream above a 100-stream baseline;
 *  2. measures 3 s with nothing posted (each process's background CPU), then posts `--messages` messages one after
 *     the other through the gateway (an OWNER token), each once the previous one reached every stream (or 30 s
 *     passed), `--gap-ms` apart. Each delivery is timed from the moment the post request is sent (the commit is
 *     inside the post's answer time, reported apart) to the moment that stream's socket holds the message;
 *     every stream must see every seq once, in order (gaps and repeats are counted);
 *  3. reports per size: delivery p50/p99/max over every (message, stream), "last stream received" per message
 *     p50/p99/max, the post's answer time, CPU ms per fan-out of the subgraphs, the gateway, PostgreSQL (a private
 *     cluster's processes), this process and the rest of the machine (others), raw and net of background, the
 *     subgraphs' database statements per fan-out, and the machine's load average.
 * `--profile` runs the subgraphs and the gateway under `node --cpu-prof` and summarises each size's posting window.
 */
import { mkdtempSync } from 'node:fs';
import net from 'node:net';
import os, { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { benchDatabase, defaultDatabaseKind } from './lib/database.js';
import { postGraphQL } from './lib/http.js';
import {
  dbCountsOf,
  memoryOf,
  postgresCpuMs as clusterCpuMs,
  type DbCounts,
  type Memory,
} from './lib/probes.js';
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
import { startOurGateway } from './lib/our-gateway.js';
import { machineInfo } from './lib/report.js';
import type { SubgraphsReady } from './procs/subgraphs.js';

const { values } = parseArgs({
  options: {
    database: { type: 'string', default: defaultDatabaseKind() },
    sizes: { type: 'string', default: '1000,5000,10000' },
    messages: { type: 'string', default: '20' },
    tokens: { type: 'string', default: '8' },
    'gap-ms': { type: 'string', default: '300' },
    settle: { type: 'string', default: '3' },
    profile: { type: 'boolean', default: false },
  },
});
const DATABASE = values.database;
if (DATABASE !== 'postgres' && DATABASE !== 'pglite') {
  throw new Error(`--database must be postgres or pglite, not ${DATABASE}`);
}
/** Streams open when the baseline memory is read; memory per stream is what each size adds above it. */
const BASELINE_STREAMS = 100;
const SIZES = values.sizes.split(',').map(Number);
if (SIZES.some((s, i) => !(s > BASELINE_STREAMS) || (i > 0 && s <= SIZES[i - 1]!))) {
  throw new Error(
    `--sizes must be increasing stream counts above 100, comma-separated (got ${values.sizes})`,
  );
}
const MESSAGES = Number(values.messages);
const TOKENS = Number(values.tokens);
const GAP_MS = Number(values['gap-ms']);
const SETTLE_MS = Number(values.settle) * 1000;
const PROFILE = values.profile;
/** A fan-out not complete after this is reported as incomplete (streams that never got it are counted). */
const FANOUT_TIMEOUT_MS = 30_000;

const runDir = mkdtempSync(join(tmpdir(), 'agentgraph-fanout-bench-'));
const children: Child[] = [];
const log = (m: string) => process.stderr.write(`[fanout-bench] ${m}\n`);
const database = benchDatabase(DATABASE, REPO_ROOT, log);
const postgresCpuMs = () => clusterCpuMs(database.clusterDir);

const STREAM_QUERY =
  'subscription R($room: ID!) { roomMessages(roomId: $room) { id seq body createdAt author { id } } }';
const SEQ = /"seq":(\d+)[,}]/g;

/**
 * The clients' side of every stream: which seq each stream saw last and when each stream received each message.
 * A stream is its index; `arrivals[m][i]` is when stream i received the m-th message posted (NaN: not yet).
 */
class Receivers {
  readonly lastSeq: number[] = [];
  readonly gaps: number[] = [];
  readonly repeats: number[] = [];
  /** Streams that got an event with errors (e.g. SERVICE_UNAVAILABLE: the subgraph gave up on them). */
  readonly failed = new Set<number>();
  /** Streams whose connection closed. */
  readonly closed = new Set<number>();
  /** The seq of the first message posted; arrivals are indexed from it. */
  firstSeq = Infinity;
  readonly arrivals: Float64Array[] = [];
  /** Streams that received message m so far. */
  readonly counts: number[] = [];
  /** Told when every stream received the message being waited for (`waitAll`). */
  private all: { m: number; resolve: () => void } | null = null;

  add(startSeq: number): number {
    this.lastSeq.push(startSeq);
    this.gaps.push(0);
    this.repeats.push(0);
    return this.lastSeq.length - 1;
  }

  expect(seq: number, streams: number): void {
    if (this.firstSeq === Infinity) this.firstSeq = seq;
    const m = seq - this.firstSeq;
    this.arrivals[m] = new Float64Array(streams).fill(NaN);
    this.counts[m] = 0;
  }

  received(stream: number, seq: number, at: number): void {
    const last = this.lastSeq[stream]!;
    if (seq <= last) {
      this.repeats[stream]!++;
      return;
    }
    if (seq !== last + 1) this.gaps[stream]!++;
    this.lastSeq[stream] = seq;
    const arrivals = this.arrivals[seq - this.firstSeq];
    if (arrivals && stream < arrivals.length && Number.isNaN(arrivals[stream]!)) {
      arrivals[stream] = at;
      const m = seq - this.firstSeq;
      if (++this.counts[m]! === arrivals.length && this.all?.m === m) this.all.resolve();
    }
  }

  /** Resolves when every stream received message m, or after `timeoutMs`. */
  waitAll(m: number, timeoutMs: number): Promise<void> {
    if (this.counts[m] === this.arrivals[m]!.length) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, timeoutMs);
      this.all = { m, resolve: done };
      function done(this: void) {
        clearTimeout(timer);
        resolve();
      }
    });
  }
}

/**
 * One stream over its own socket: a hand-written HTTP/1.1 request; resolves once the answer's head is in (200), then
 * scans every chunk for `"seq":N` (what is left of a chunk after its last match is kept, so a seq split across two
 * reads is still found once). Chunked-encoding framing is never inside an event: the gateway writes each event whole.
 */
function openStream(
  port: number,
  token: string,
  roomId: string,
  receivers: Receivers,
  index: number,
): Promise<net.Socket> {
  const body = JSON.stringify({ query: STREAM_QUERY, variables: { room: roomId } });
  const head =
    `POST /graphql/stream HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\n` +
    `accept: text/event-stream\r\nauthorization: Bearer ${token}\r\n` +
    `content-length: ${Buffer.byteLength(body)}\r\n\r\n`;
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: '127.0.0.1', noDelay: true });
    socket.setEncoding('latin1');
    let text = '';
    let open = false;
    socket.on('data', (chunk: string) => {
      text += chunk;
      if (!open) {
        const end = text.indexOf('\r\n\r\n');
        if (end < 0) return;
        if (!text.startsWith('HTTP/1.1 200')) {
          socket.destroy();
          reject(new Error(`stream ${index} answered: ${text.slice(0, 300)}`));
          return;
        }
        open = true;
        text = text.slice(end + 4);
        resolve(socket);
      }
      const at = performance.now();
      if (text.includes('"errors"')) receivers.failed.add(index);
      SEQ.lastIndex = 0;
      let keepFrom = 0;
      for (let m; (m = SEQ.exec(text));) {
        receivers.received(index, Number(m[1]), at);
        keepFrom = SEQ.lastIndex;
      }
      text = text.length - keepFrom > 64 ? text.slice(-64) : text.slice(keepFrom);
    });
    socket.on('error', (err) => {
      if (!open) reject(err);
    });
    socket.on('close', () => receivers.closed.add(index));
    socket.write(head + body);
  });
}

interface CpuSnapshot {
  subgraphs: number | null;
  gateway: number | null;
  postgres: number | null;
  bench: NodeJS.CpuUsage;
  machine: number | null;
  at: number;
}

const round1 = (x: number) => Math.round(x * 10) / 10;
const quantile = (sorted: ArrayLike<number>, p: number) =>
  sorted.length === 0 ? null : round1(sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!);

async function main() {
  const ports = await Promise.all(Array.from({ length: 6 }, () => freePort()));
  const cpuProf = (name: string) => cpuProfileFlags(runDir, name);
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
      BENCH_ROOMS: '1',
      BENCH_MESSAGES_PER_ROOM: '1',
      BENCH_TOKENS: String(TOKENS),
      // The fan-out is measured, not the limiter (tested in the suite): the posts are one at a time anyway.
      RATE_LIMIT_POST_PRINCIPAL: 'off',
      RATE_LIMIT_POST_TENANT: 'off',
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
  const gatewayPort = ports[5]!;
  const gateway = await startOurGateway({
    subgraphs: sg,
    port: gatewayPort,
    runDir,
    profile: PROFILE,
    children,
  });
  const graphqlUrl = `http://127.0.0.1:${gatewayPort}/graphql`;
  const owner = { authorization: `Bearer ${sg.token}` };
  const rooms = await postGraphQL(
    graphqlUrl,
    '{ rooms(first: 1) { edges { node { id lastSeq: messages(last: 1) { edges { node { seq } } } } } } }',
    {},
    owner,
  );
  type RoomsData = {
    rooms: { edges: { node: { id: string; lastSeq: { edges: { node: { seq: number } }[] } } }[] };
  };
  const room = (rooms.json?.data as RoomsData | undefined)?.rooms.edges[0]?.node;
  if (!room)
    throw new Error(`no seeded room through the gateway: ${rooms.status} ${rooms.text.slice(0, 300)}`);
  let lastSeq = room.lastSeq.edges[0]?.node.seq ?? 0;

  const receivers = new Receivers();
  const sockets: net.Socket[] = [];
  const openUpTo = async (count: number) => {
    const batch = 200;
    while (sockets.length < count) {
      const n = Math.min(batch, count - sockets.length);
      const opened = await Promise.all(
        Array.from({ length: n }, () => {
          const index = receivers.add(lastSeq);
          return openStream(gatewayPort, sg.tokens[index % sg.tokens.length]!, room.id, receivers, index);
        }),
      );
      sockets.push(...opened);
    }
  };

  const snapshot = (): CpuSnapshot => ({
    subgraphs: subgraphs.cpuMs(),
    gateway: gateway.cpuMs(),
    postgres: postgresCpuMs(),
    bench: process.cpuUsage(),
    machine: machineBusyMs(),
    at: performance.now(),
  });
  /** CPU ms each process used between two snapshots; `others` is the machine's busy time minus ours. */
  const used = (a: CpuSnapshot, b: CpuSnapshot) => {
    const d = (x: number | null, y: number | null) => (x == null || y == null ? null : y - x);
    const bench = (b.bench.user + b.bench.system - a.bench.user - a.bench.system) / 1000;
    const parts = {
      subgraphs: d(a.subgraphs, b.subgraphs),
      gateway: d(a.gateway, b.gateway),
      postgres: d(a.postgres, b.postgres),
      bench,
    };
    const machine = d(a.machine, b.machine);
    const ours = (parts.subgraphs ?? 0) + (parts.gateway ?? 0) + (parts.postgres ?? 0) + bench;
    return { ...parts, others: machine == null ? null : Math.max(0, machine - ours), ms: b.at - a.at };
  };

  // Baseline memory with 100 streams open.
  await openUpTo(BASELINE_STREAMS);
  await sleep(SETTLE_MS);
  const base = { gateway: await memoryOf(gateway), subgraphs: await memoryOf(subgraphs) };

  const sizes = [];
  const windows: { size: number; fromUs: number; toUs: number }[] = [];
  for (const size of SIZES) {
    const t0 = performance.now();
    await openUpTo(size);
    const openMs = performance.now() - t0;
    await sleep(SETTLE_MS);
    const mem = { gateway: await memoryOf(gateway), subgraphs: await memoryOf(subgraphs) };
    const added = size - BASELINE_STREAMS;
    const perStreamKb = (a: number, b: number) => round1((b - a) / 1024 / added);
    const live = (m: Memory) => m.heapUsed + m.external;
    const memory = {
      rssKb: {
        gateway: perStreamKb(base.gateway.rss, mem.gateway.rss),
        subgraphs: perStreamKb(base.subgraphs.rss, mem.subgraphs.rss),
        total: perStreamKb(base.gateway.rss + base.subgraphs.rss, mem.gateway.rss + mem.subgraphs.rss),
      },
      liveKb: {
        gateway: perStreamKb(live(base.gateway), live(mem.gateway)),
        subgraphs: perStreamKb(live(base.subgraphs), live(mem.subgraphs)),
      },
      targetRssKb: 10,
    };
    const load = os.loadavg().map((l) => Math.round(l * 100) / 100);
    log(
      `${size} streams open in ${round1(openMs / 1000)} s; per stream ${JSON.stringify(memory)}; load ${load}`,
    );

    // Background: nothing posted.
    const idleA = snapshot();
    await sleep(3000);
    const idle = used(idleA, snapshot());

    const dbBefore: DbCounts = await dbCountsOf(subgraphs);
    const fromUs = monoMicros();
    const before = snapshot();
    const posts: {
      m: number;
      sentAt: number;
      answeredMs: number;
      lastMs: number | null;
      delivered: number;
    }[] = [];
    let failedPosts = 0;
    for (let k = 0; k < MESSAGES; k++) {
      const seq = lastSeq + 1;
      receivers.expect(seq, size);
      const sentAt = performance.now();
      const r = await postGraphQL(
        graphqlUrl,
        'mutation P($room: ID!, $body: String!, $key: ID!) { postMessage(roomId: $room, input: { body: $body }, idempotencyKey: $key) { message { seq } } }',
        {
          room: room.id,
          body: `fan-out ${size} #${k}: the quick brown fox`,
          key: `fanout-${size}-${k}-${process.pid}`,
        },
        owner,
      );
      const answeredMs = performance.now() - sentAt;
      const got = (r.json?.data as { postMessage?: { message: { seq: number } } } | undefined)?.postMessage
        ?.message.seq;
      if (got !== seq) {
        failedPosts++;
        log(`post ${k} answered ${r.status} ${r.text.slice(0, 300)} (expected seq ${seq})`);
        if (got === undefined) continue;
      }
      lastSeq = seq;
      const m = seq - receivers.firstSeq;
      await receivers.waitAll(m, FANOUT_TIMEOUT_MS - (performance.now() - sentAt));
      const arrivals = receivers.arrivals[m]!;
      let last = -Infinity;
      for (const at of arrivals) if (at > last) last = at;
      posts.push({
        m,
        sentAt,
        answeredMs,
        lastMs: receivers.counts[m] ? last - sentAt : null,
        delivered: receivers.counts[m]!,
      });
      await sleep(GAP_MS);
    }
    const after = snapshot();
    const toUs = monoMicros();
    windows.push({ size, fromUs, toUs });
    const dbAfter: DbCounts = await dbCountsOf(subgraphs);

    // Every delivery, timed from its post's request start.
    const all = new Float64Array(posts.length * size);
    let n = 0;
    let missing = 0;
    for (const p of posts) {
      for (const at of receivers.arrivals[p.m]!) {
        if (Number.isNaN(at)) missing++;
        else all[n++] = at - p.sentAt;
      }
    }
    const deliveries = all.subarray(0, n).sort();
    const lasts = posts
      .map((p) => p.lastMs)
      .filter((x): x is number => x !== null)
      .sort((a, b) => a - b);
    const answers = posts.map((p) => p.answeredMs).sort((a, b) => a - b);
    const cpu = used(before, after);
    const fanouts = posts.length;
    const perFanout = (ms: number | null) => (ms == null || fanouts === 0 ? null : round1(ms / fanouts));
    const netPerFanout = (ms: number | null, idleMs: number | null) =>
      ms == null || idleMs == null || fanouts === 0
        ? null
        : round1((ms - (idleMs * cpu.ms) / idle.ms) / fanouts);
    const statements = dbAfter.statements - dbBefore.statements;
    const result = {
      streams: size,
      openSeconds: round1(openMs / 1000),
      loadAverage: load,
      memoryPerStream: memory,
      messages: fanouts,
      failedPosts,
      deliveryMs: {
        from: 'post request sent',
        p50: quantile(deliveries, 0.5),
        p99: quantile(deliveries, 0.99),
        max: quantile(deliveries, 1),
      },
      lastStreamReceivedMs: {
        p50: quantile(lasts, 0.5),
        p99: quantile(lasts, 0.99),
        max: lasts.at(-1) ?? null,
      },
      postAnsweredMs: {
        p50: quantile(answers, 0.5),
        p99: quantile(answers, 0.99),
        max: answers.at(-1) ?? null,
      },
      targetP99Ms: 500,
      undelivered: missing,
      gaps: receivers.gaps.reduce((a, b) => a + b, 0),
      repeats: receivers.repeats.reduce((a, b) => a + b, 0),
      // Streams so far (all sizes) that got an error event or whose connection closed: they miss every later message.
      streamsFailed: receivers.failed.size,
      streamsClosed: receivers.closed.size,
      // CPU per fan-out (one message to every stream), over the posting window (the gaps between posts included).
      cpuMsPerFanout: {
        subgraphs: perFanout(cpu.subgraphs),
        gateway: perFanout(cpu.gateway),
        postgres: perFanout(cpu.postgres),
        benchClients: perFanout(cpu.bench),
        others: perFanout(cpu.others),
      },
      netCpuMsPerFanout: {
        subgraphs: netPerFanout(cpu.subgraphs, idle.subgraphs),
        gateway: netPerFanout(cpu.gateway, idle.gateway),
        postgres: netPerFanout(cpu.postgres, idle.postgres),
      },
      cpuUsPerDeliveredEvent: {
        subgraphs: cpu.subgraphs == null || n === 0 ? null : Math.round((cpu.subgraphs * 1000) / n),
        gateway: cpu.gateway == null || n === 0 ? null : Math.round((cpu.gateway * 1000) / n),
        postgres: cpu.postgres == null || n === 0 ? null : Math.round((cpu.postgres * 1000) / n),
      },
      othersCores: cpu.others == null ? null : Math.round((cpu.others / cpu.ms) * 100) / 100,
      backgroundCores: {
        subgraphs: idle.subgraphs == null ? null : Math.round((idle.subgraphs / idle.ms) * 100) / 100,
        gateway: idle.gateway == null ? null : Math.round((idle.gateway / idle.ms) * 100) / 100,
        postgres: idle.postgres == null ? null : Math.round((idle.postgres / idle.ms) * 100) / 100,
        others: idle.others == null ? null : Math.round((idle.others / idle.ms) * 100) / 100,
      },
      db: {
        statementsPerFanout: fanouts ? round1(statements / fanouts) : null,
        transactionsPerFanout: fanouts
          ? round1((dbAfter.transactions - dbBefore.transactions) / fanouts)
          : null,
      },
    };
    log(
      `${size} streams: delivery p50 ${result.deliveryMs.p50} / p99 ${result.deliveryMs.p99} / max ` +
        `${result.deliveryMs.max} ms; last stream p50 ${result.lastStreamReceivedMs.p50} / p99 ` +
        `${result.lastStreamReceivedMs.p99} ms; post answered p50 ${result.postAnsweredMs.p50} ms; CPU ms/fan-out ` +
        `${JSON.stringify(result.cpuMsPerFanout)}; db statements/fan-out ${result.db.statementsPerFanout}; ` +
        `undelivered ${missing}, gaps ${result.gaps}, repeats ${result.repeats}, streams failed ` +
        `${result.streamsFailed} / closed ${result.streamsClosed}; others ${result.othersCores} cores`,
    );
    sizes.push(result);
  }
  for (const s of sockets) s.destroy();

  let profiles: Record<string, ProfileSummary> | null = null;
  if (PROFILE) {
    await Promise.all([gateway.stop(30_000), subgraphs.stop(30_000)]);
    profiles = {};
    for (const w of windows) {
      for (const name of ['subgraphs', 'gateway']) {
        try {
          const s = summarizeProfile(mainThreadProfile(runDir, name), w);
          profiles[`${name}@${w.size}`] = s;
          process.stderr.write(formatProfile(`${name} process, ${w.size} streams`, s) + '\n');
        } catch (err) {
          log(`no ${name} profile: ${(err as Error).message}`);
        }
      }
    }
  }

  console.log(
    JSON.stringify(
      {
        bench: 'room-fanout',
        machine: machineInfo(),
        database: DATABASE,
        tokens: TOKENS,
        runDir,
        baselineMemoryBytes: base,
        sizes,
        ...(profiles ? { profiles } : {}),
      },
      null,
      2,
    ),
  );
}

try {
  await main();
} finally {
  for (const c of children.reverse()) await c.stop(10_000).catch(() => undefined);
  await database.close();
}

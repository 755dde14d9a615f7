/**
 * `npm run bench` — the gateway benchmark, everything side by side in one run: the same supergraph, the
 * same subgraph processes, the same query, the same load generator settings, each target in its own process,
 * measured one after another.
 *
 *   npm run bench                       subgraph direct, ours, stock @apollo/gateway, stock + keep-alive, Hive
 *   npm run bench -- --profile          ours (and the subgraphs) under node --cpu-prof; prints where the time goes
 *   npm run bench -- --subgraph-servers coordination subgraph on our runtime server vs Fastify + mercurius
 *   npm run bench -- --auth             token verification overhead at the gateway, token endpoint throughput
 *   npm run bench -- --coordination     idle device streams (memory per stream), intent create-to-received latency
 *   npm run bench -- --fanout           one room message to 1,000 / 5,000 / 10,000 streams: delivery latency, CPU, RSS
 *   npm run bench -- --memory           memory writes and search (text, vector, hybrid) at 100,000 records
 *   npm run bench -- --secrets          the secret filter: recall/precision on the labelled corpus, MB/s scanned
 *   npm run bench -- --catalog          analysis of a 5 MB package, TUF signing of a 1,000-target channel
 *   npm run bench -- --console          the web console's initial load: transfer size and time to interactive
 *   npm run bench -- --csharp           C# SDK: overhead per call over plain HttpClient, outbox throughput
 *   npm run bench -- --python           Python SDK: overhead per call over plain httpx, outbox throughput
 *
 * Options: --connections 32 --warmup 3 --duration 10 --targets direct,ours,stock,stock-keepalive,hive
 * See bench/README.md for what the numbers mean and their caveats.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { canonical, postGraphQL, waitForGraphQL } from './lib/http.js';
import { DIRECT_QUERY, GATEWAY_QUERY, TRIVIAL_QUERY } from './lib/queries.js';
import {
  cpuProfileFlags,
  formatProfile,
  mainThreadProfile,
  summarizeProfile,
  type ProfileSummary,
} from './lib/profile.js';
import { GATEWAY_SECRET_HEADER } from '@agentgraph/runtime';
import {
  BENCH_GATEWAY_SECRET,
  BENCH_SRC,
  REPO_ROOT,
  freePort,
  machineBusyMs,
  sleep,
  spawnChild,
  trySetPriority,
  type Child,
} from './lib/proc.js';
import { benchDatabase, defaultDatabaseKind } from './lib/database.js';
import { machineInfo, table, writeResults, type TargetResult } from './lib/report.js';
import type { LoadJob, LoadResult } from './procs/load.js';
import type { SubgraphsReady } from './procs/subgraphs.js';
import { runAuthBench } from './auth/run-auth.js';

/**
 * Modes that run one bench script hand it every other argument as is (`npm run bench -- --coordination --streams
 * 10000 --rate 100`): the script checks them; this runner does not know them.
 */
const SCRIPT_MODES = [
  'coordination',
  'fanout',
  'memory',
  'catalog',
  'console',
  'csharp',
  'python',
  'schema-check',
  'secrets',
] as const;
const scriptMode = SCRIPT_MODES.find((m) => process.argv.includes(`--${m}`));
const forwarded = scriptMode ? process.argv.slice(2).filter((a) => a !== `--${scriptMode}`) : [];

const { values: args } = parseArgs({
  args: scriptMode ? [`--${scriptMode}`] : process.argv.slice(2),
  options: {
    profile: { type: 'boolean', default: false },
    'subgraph-servers': { type: 'boolean', default: false },
    auth: { type: 'boolean', default: false },
    sdk: { type: 'boolean', default: false },
    'schema-check': { type: 'boolean', default: false },
    coordination: { type: 'boolean', default: false },
    fanout: { type: 'boolean', default: false },
    memory: { type: 'boolean', default: false },
    secrets: { type: 'boolean', default: false },
    catalog: { type: 'boolean', default: false },
    csharp: { type: 'boolean', default: false },
    python: { type: 'boolean', default: false },
    console: { type: 'boolean', default: false },
    'token-concurrency': { type: 'string', default: '16' },
    'token-pool': { type: 'string', default: '12000' },
    rate: { type: 'string', default: '400' },
    connections: { type: 'string', default: '32' },
    warmup: { type: 'string', default: '3' },
    duration: { type: 'string', default: '10' },
    targets: { type: 'string' },
    'log-level': { type: 'string', default: 'info' },
    priority: { type: 'string', default: '-10' },
    rounds: { type: 'string', default: '1' },
    database: { type: 'string' },
  },
});

const MODE = args.coordination
  ? 'coordination'
  : args.memory
    ? 'memory'
    : args.catalog
      ? 'catalog'
      : args.console
        ? 'console'
        : args.csharp
          ? 'csharp'
          : args.python
            ? 'python'
            : args.auth
              ? 'auth'
              : args.sdk
                ? 'sdk'
                : args['schema-check']
                  ? 'schema-check'
                  : args['subgraph-servers']
                    ? 'subgraph-servers'
                    : args.profile
                      ? 'profile'
                      : args.secrets
                        ? 'secrets'
                        : args.fanout
                          ? 'fanout'
                          : 'gateway';
const CONNECTIONS = Number(args.connections);
const WARMUP = Number(args.warmup);
const DURATION = Number(args.duration);
/** Rounds over the whole target list (interleaved, so slow drifts hit every target alike); the median is kept. */
const ROUNDS = args.profile ? 1 : Math.max(1, Number(args.rounds));
/**
 * The bench's processes run at a higher scheduling priority (nice -10 by default, when allowed) so that other work on
 * a shared machine disturbs the measurement less; every bench process gets the same priority. --priority 0 to skip.
 */
const PRIORITY = Number(args.priority);
const priorityRaised = PRIORITY !== 0 && trySetPriority(0, PRIORITY);

/** Above this share of the machine's CPU used by processes outside the bench, a result is flagged as contended. */
const CONTENTION_LIMIT_PCT = 5;

const stamp = new Date().toISOString().replace(/[:.]/g, '-');
const RESULTS_DIR = join(REPO_ROOT, 'bench/results');
const RUN_DIR = join(RESULTS_DIR, 'runs', `${stamp}-${MODE}`);
mkdirSync(RUN_DIR, { recursive: true });

const started = Date.now();
const selfCpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const machine = machineInfo();
const log = (msg: string) =>
  console.log(`[bench ${((Date.now() - started) / 1000).toFixed(1).padStart(5)}s] ${msg}`);
const children: Child[] = [];
const cpuProf = (name: string) => cpuProfileFlags(RUN_DIR, name);

// ---- the subgraphs' database ------------------------------------------------------------------------------------
/**
 * PostgreSQL by default where a server can be had (DATABASE_URL, or a private cluster from scripts/pg-cluster.sh
 * when Debian's binaries are installed): the subgraphs' statements then run in PostgreSQL's own processes, as in
 * production, instead of in the subgraphs' event loop as with the embedded PGlite (WASM), which makes the subgraphs,
 * not the gateways, the bottleneck. `--database pglite` measures the embedded default.
 */
const DATABASE = args.database ?? defaultDatabaseKind();
if (DATABASE !== 'pglite' && DATABASE !== 'postgres')
  throw new Error('--database must be pglite or postgres');
const database = benchDatabase(DATABASE, REPO_ROOT, log);
const databaseEnv = () => database.env();

async function cleanup() {
  await Promise.all(children.map((c) => c.stop(20_000).catch(() => undefined)));
  await database.close();
}
process.once('SIGINT', () => {
  void cleanup().finally(() => process.exit(130));
});

// ---- targets ---------------------------------------------------------------------------------------------------

interface Target {
  name: string;
  label: string;
  query: string;
  /** Starts the target's process and returns it with its URL; absent for targets served by the subgraphs process. */
  start?: (profile: boolean) => Promise<{ child: Child; url: string }>;
  url?: string;
  /** Compare its data with the other targets of the same group. */
  group: string;
  /**
   * distinct: each load connection sends its own token (same user), so nothing can be shared across connections —
   * the realistic case. shared: one token for all, the best case for in-flight request deduplication.
   */
  callers: 'distinct' | 'shared';
}

// NODE_ENV=production for every process alike (graphql-js skips its development-only instanceof checks).
const env = (extra: Record<string, string>) => ({
  NODE_ENV: 'production',
  LOG_LEVEL: args['log-level']!,
  ...extra,
});

function gatewayTargets(sg: SubgraphsReady, sdlFile: string): Target[] {
  const subgraphEnv = Object.fromEntries(
    Object.entries(sg.subgraphUrls).map(([n, u]) => [`SUBGRAPH_${n.toUpperCase()}_URL`, u]),
  );
  /** A target in its own process: entry script, its argv/env for a port, the GraphQL path it serves. */
  const processTarget =
    (
      name: string,
      entry: string,
      argv: (port: number) => string[],
      extraEnv: (port: number) => Record<string, string>,
      path: string,
    ) =>
    async (profile: boolean) => {
      const port = await freePort();
      const child = spawnChild({
        name,
        entry: join(BENCH_SRC, entry),
        args: argv(port),
        env: env(extraEnv(port)),
        logDir: RUN_DIR,
        nodeFlags: profile ? cpuProf(name) : [],
        ipc: true,
        priority: PRIORITY,
      });
      children.push(child);
      return { child, url: `http://127.0.0.1:${port}${path}` };
    };
  const oursEnv = (port: number) => ({
    ...subgraphEnv,
    GATEWAY_PORT: String(port),
    HOST: '127.0.0.1',
    TOKEN_ISSUER: sg.tokenIssuer,
    JWKS_URL: sg.jwksUrl,
    DATA_DIR: 'memory://',
  });
  const sdlArgs = (port: number) => ['--sdl', sdlFile, '--port', String(port)];
  const none = () => ({});
  const gw = { query: GATEWAY_QUERY, group: 'gateway' };
  return [
    {
      name: 'direct',
      label: 'subgraph direct (coordination)',
      query: DIRECT_QUERY,
      url: sg.subgraphUrls['coordination'],
      group: 'direct',
      callers: 'distinct',
    },
    {
      name: 'ours',
      label: 'ours (standalone.ts)',
      ...gw,
      callers: 'distinct',
      start: processTarget('ours', 'targets/ours.ts', () => [], oursEnv, '/graphql'),
    },
    {
      name: 'ours-shared',
      label: 'ours, one shared token',
      ...gw,
      callers: 'shared',
      start: processTarget('ours-shared', 'targets/ours.ts', () => [], oursEnv, '/graphql'),
    },
    {
      name: 'ours-nodedupe',
      label: 'ours, in-flight dedup off',
      ...gw,
      callers: 'shared',
      start: processTarget('ours-nodedupe', 'targets/ours.ts', () => ['--no-dedupe'], oursEnv, '/graphql'),
    },
    {
      name: 'stock',
      label: 'stock @apollo/gateway',
      ...gw,
      callers: 'distinct',
      start: processTarget('stock', 'targets/apollo-stock.ts', sdlArgs, none, '/'),
    },
    {
      name: 'stock-keepalive',
      label: 'stock + keep-alive agent',
      ...gw,
      callers: 'distinct',
      start: processTarget(
        'stock-keepalive',
        'targets/apollo-stock.ts',
        (p) => [...sdlArgs(p), '--keepalive'],
        none,
        '/',
      ),
    },
    {
      name: 'hive',
      label: 'Hive gateway-runtime',
      ...gw,
      callers: 'distinct',
      start: processTarget('hive', 'targets/hive.ts', sdlArgs, none, '/graphql'),
    },
    {
      name: 'hive-shared',
      label: 'Hive, one shared token',
      ...gw,
      callers: 'shared',
      start: processTarget('hive-shared', 'targets/hive.ts', sdlArgs, none, '/graphql'),
    },
    {
      name: 'hive-nodedupe',
      label: 'Hive, in-flight dedup off',
      ...gw,
      callers: 'shared',
      start: processTarget(
        'hive-nodedupe',
        'targets/hive.ts',
        (p) => [...sdlArgs(p), '--no-dedupe'],
        none,
        '/graphql',
      ),
    },
  ];
}

/** What `npm run bench` measures unless --targets says otherwise. */
const DEFAULT_TARGETS = ['direct', 'ours', 'ours-shared', 'stock', 'stock-keepalive', 'hive', 'hive-shared'];

// ---- measuring one target -----------------------------------------------------------------------------------------

interface Measured {
  result: TargetResult;
  window: { fromUs: number; toUs: number } | null;
  child: Child | null;
  data: string | null;
}

async function measure(
  target: Target,
  load: Child,
  subgraphs: Child,
  tokens: string[],
  profile: boolean,
): Promise<Measured> {
  const headers = { authorization: `Bearer ${tokens[0]}` };
  const body = JSON.stringify({ query: target.query });
  const result: TargetResult = {
    name: target.name,
    label: target.label,
    url: target.url ?? '',
    valid: true,
    invalidReasons: [],
    startupMs: null,
    load: null,
    cpuMs: { target: null, subgraphs: null, loadGenerator: null },
    cpuPerRequestUs: { target: null, subgraphs: null },
    responseBytes: null,
    foreignCpuPct: null,
    dbPerRequest: null,
    warnings: [],
  };
  let child: Child | null = null;
  let window: Measured['window'] = null;
  let data: string | null = null;
  try {
    const t0 = Date.now();
    if (target.start) {
      const started = await target.start(profile);
      child = started.child;
      result.url = started.url;
    }
    let alive = true;
    void child?.exited.then(() => (alive = false));
    const first = await waitForGraphQL(result.url, body, headers, 60_000, () => alive);
    result.startupMs = target.start ? Date.now() - t0 : null;
    const second = await waitForGraphQL(result.url, body, headers, 10_000, () => alive);
    data = canonical(first.json?.data);
    result.responseBytes = Buffer.byteLength(first.text);
    // Exact body check when the target answers byte-for-byte the same every time; else "data and no errors".
    const expectBody = first.text === second.text ? first.text : undefined;
    log(
      `${target.name}: ready in ${result.startupMs ?? 0} ms at ${result.url} (${result.responseBytes} B answer${expectBody ? ', deterministic' : ''}); ${WARMUP}s warm-up + ${DURATION}s measured, ${CONNECTIONS} connections`,
    );

    const job: LoadJob = {
      url: result.url,
      body,
      headers,
      connections: CONNECTIONS,
      warmupSeconds: WARMUP,
      durationSeconds: DURATION,
      expectBody,
      ...(target.callers === 'distinct' ? { tokens } : {}),
    };
    let cpuStart: (number | null)[] = [];
    let fromUs = 0;
    const sample = () => [
      child?.cpuMs() ?? null,
      subgraphs.cpuMs(),
      load.cpuMs(),
      machineBusyMs(),
      selfCpuMs(),
    ];
    const onMessage = (m: { type?: string; at?: number }) => {
      if (m.type === 'measure-start') {
        fromUs = m.at!;
        cpuStart = sample();
      } else if (m.type === 'measure-end') {
        window = { fromUs, toUs: m.at! };
        const end = sample();
        const d = end.map((v, i) =>
          v !== null && cpuStart[i] !== null && cpuStart[i] !== undefined ? v - cpuStart[i]! : null,
        );
        result.cpuMs.target = d[0] ?? null;
        result.cpuMs.subgraphs = d[1] ?? null;
        // Everything else the machine did meanwhile: other people's processes compete for the same 2 cores.
        if (d[3] !== null && d[3] !== undefined) {
          const ours = (d[0] ?? 0) + (d[1] ?? 0) + (d[2] ?? 0) + (d[4] ?? 0);
          const capacity = ((m.at! - fromUs) / 1000) * machine.cpus;
          result.foreignCpuPct = Math.max(0, Math.round(((d[3] - ours) / capacity) * 1000) / 10);
        }
      }
    };
    const dbCounts = () => subgraphs.send({ type: 'db-counts' });
    const dbAnswer = () =>
      subgraphs.message<{ transactions: number; statements: number; bySql: Record<string, number> }>(
        (m) => (m as { type?: string }).type === 'db-counts',
        10_000,
      );
    let db0 = dbAnswer();
    dbCounts();
    const dbStart = await db0;
    load.proc.on('message', onMessage);
    load.send({ type: 'run', job });
    const answer = await load.message<{ type: string; result?: LoadResult; error?: string }>(
      (m) => (m as { type?: string }).type === 'result' || (m as { type?: string }).type === 'failed',
      (WARMUP + DURATION) * 1000 + 60_000,
    );
    load.proc.off('message', onMessage);
    if (answer.type === 'failed') throw new Error(`load generator failed: ${answer.error}`);
    const r = answer.result!;
    result.load = r;
    // Let the requests still in flight when autocannon stopped finish, then divide by everything that was sent.
    let dbEnd = dbStart;
    for (let i = 0; i < 20; i++) {
      db0 = dbAnswer();
      dbCounts();
      const now = await db0;
      if (i > 0 && now.statements === dbEnd.statements) break;
      dbEnd = now;
      await sleep(250);
    }
    const all = r.sent + r.warmup.sent;
    if (all > 0) {
      result.dbPerRequest = {
        transactions: Math.round(((dbEnd.transactions - dbStart.transactions) / all) * 100) / 100,
        statements: Math.round(((dbEnd.statements - dbStart.statements) / all) * 100) / 100,
        // Which statements (BEGIN/COMMIT not included): per request, most frequent first.
        bySql: Object.fromEntries(
          Object.entries(dbEnd.bySql)
            .map(
              ([sql, n]) => [sql, Math.round(((n - (dbStart.bySql[sql] ?? 0)) / all) * 100) / 100] as const,
            )
            .filter(([, n]) => n > 0)
            .sort((a, b) => b[1] - a[1])
            .slice(0, 12),
        ),
      };
    }
    result.cpuMs.loadGenerator = Math.round(r.loadGeneratorCpuMs);
    if (r.requests > 0) {
      if (result.cpuMs.target !== null)
        result.cpuPerRequestUs.target = Math.round((result.cpuMs.target * 1000) / r.requests);
      if (result.cpuMs.subgraphs !== null)
        result.cpuPerRequestUs.subgraphs = Math.round((result.cpuMs.subgraphs * 1000) / r.requests);
    }
    const problems: [number, string][] = [
      [r.non2xx, 'non-2xx responses'],
      [r.errors, 'connection errors'],
      [r.timeouts, 'timeouts'],
      [r.mismatches, 'responses with errors or unexpected bodies'],
    ];
    for (const [n, what] of problems) if (n > 0) result.invalidReasons.push(`${n} ${what}`);
    if (result.foreignCpuPct !== null && result.foreignCpuPct > CONTENTION_LIMIT_PCT) {
      result.warnings.push(
        `other processes used ${result.foreignCpuPct}% of the machine's CPU during the window`,
      );
    }
    if (r.requests === 0) result.invalidReasons.push('no responses');
    if (r.sampleMismatch) log(`${target.name}: sample of an unexpected body: ${r.sampleMismatch}`);
    const w = r.warmup;
    if (w.non2xx + w.errors + w.timeouts + w.mismatches > 0) {
      log(`${target.name}: warm-up had problems (not counted): ${JSON.stringify(w)}`);
    }
  } catch (err) {
    result.error = (err as Error).message;
    result.invalidReasons.push(`failed: ${(err as Error).message.split('\n')[0]}`);
  }
  result.valid = result.invalidReasons.length === 0;
  const l = result.load;
  log(
    `${target.name}: ${l ? `${Math.round(l.requestsPerSecond)} req/s, p50 ${l.latencyMs.p50} ms, p99 ${l.latencyMs.p99} ms` : 'no numbers'}${result.valid ? '' : ` — INVALID (${result.invalidReasons.join('; ')})`}`,
  );
  return { result, window, child, data };
}

// ---- federation conformance of the subgraph-server variants --------------------------------------------------

interface FederationProbe {
  /** What `_service { sdl }` answers: the Federation 2 SDL (with @link), something else, or an error. */
  serviceSdl: string;
  /** `_entities` for a Room and a Message: same answer as the runtime server? */
  entities: string;
}

async function probeFederation(
  servers: { name: string; url: string | null }[],
  token: string,
): Promise<Record<string, FederationProbe>> {
  // As the gateway asks: subgraphs answer _service and _entities only with the gateway secret.
  const headers = { authorization: `Bearer ${token}`, [GATEWAY_SECRET_HEADER]: BENCH_GATEWAY_SECRET };
  const out: Record<string, FederationProbe> = {};
  const coordinationSdl = readFileSync(join(REPO_ROOT, 'schemas/coordination.graphql'), 'utf8');
  const ids = await postGraphQL(
    servers[0]!.url!,
    '{ rooms(first: 1) { edges { node { id messages(first: 1) { edges { node { id } } } } } } }',
    undefined,
    headers,
  );
  const room = (
    ids.json?.data as {
      rooms: { edges: { node: { id: string; messages: { edges: { node: { id: string } }[] } } }[] };
    }
  ).rooms.edges[0]!.node;
  const entitiesQuery =
    'query($r: [_Any!]!) { _entities(representations: $r) { __typename ... on Room { id name createdBy { id } } ... on Message { id seq body room { name } author { id } } } }';
  const reps = {
    r: [
      { __typename: 'Room', id: room.id },
      { __typename: 'Message', id: room.messages.edges[0]!.node.id },
    ],
  };
  let reference: string | null = null;
  for (const s of servers) {
    const probe: FederationProbe = { serviceSdl: '', entities: '' };
    try {
      const r = await postGraphQL(s.url!, '{ _service { sdl } }', undefined, headers);
      const sdl = (r.json?.data as { _service?: { sdl?: string } } | undefined)?._service?.sdl;
      if (r.json?.errors?.length || typeof sdl !== 'string')
        probe.serviceSdl = `error: ${r.json?.errors?.[0]?.message ?? r.text.slice(0, 200)}`;
      else if (sdl === coordinationSdl)
        probe.serviceSdl =
          'echoes schemas/coordination.graphql verbatim (not derived from the schema it serves)';
      else if (/@link\(url: "https:\/\/specs\.apollo\.dev\/federation\/v2/.test(sdl))
        probe.serviceSdl = 'Federation 2, printed from the served schema (@link federation/v2.x)';
      else probe.serviceSdl = `not Federation 2: ${sdl.slice(0, 120).replace(/\s+/g, ' ')}...`;
    } catch (err) {
      probe.serviceSdl = `error: ${(err as Error).message}`;
    }
    try {
      const r = await postGraphQL(s.url!, entitiesQuery, reps, headers);
      const data = canonical(r.json?.data);
      if (r.json?.errors?.length) probe.entities = `error: ${r.json.errors[0]!.message}`;
      else if (reference === null) {
        reference = data;
        probe.entities = 'ok (reference)';
      } else probe.entities = data === reference ? 'ok (same as runtime)' : `differs: ${data.slice(0, 200)}`;
    } catch (err) {
      probe.entities = `error: ${(err as Error).message}`;
    }
    out[s.name] = probe;
  }
  return out;
}

/** The round with the median requests/s; invalid if any round was, with every round's numbers attached. */
function medianRound(rs: TargetResult[]): TargetResult {
  if (rs.length === 1) return rs[0]!;
  const sorted = [...rs].sort((a, b) => (a.load?.requestsPerSecond ?? 0) - (b.load?.requestsPerSecond ?? 0));
  const median = sorted[Math.floor((sorted.length - 1) / 2)]!;
  const reasons = [...new Set(rs.flatMap((r, i) => r.invalidReasons.map((x) => `round ${i + 1}: ${x}`)))];
  return {
    ...median,
    valid: reasons.length === 0,
    invalidReasons: reasons,
    warnings: rs.flatMap((r, i) => r.warnings.map((w) => `round ${i + 1}: ${w}`)),
    rounds: rs.map((r) => ({
      requestsPerSecond: r.load ? Math.round(r.load.requestsPerSecond) : null,
      p50: r.load?.latencyMs.p50 ?? null,
      p99: r.load?.latencyMs.p99 ?? null,
      targetCpuUsPerRequest: r.cpuPerRequestUs.target,
      subgraphsCpuUsPerRequest: r.cpuPerRequestUs.subgraphs,
      foreignCpuPct: r.foreignCpuPct,
      valid: r.valid,
    })),
  };
}

// ---- main ------------------------------------------------------------------------------------------------------

async function startSubgraphs(
  profile: boolean,
  extraEnv: Record<string, string> = {},
): Promise<{ child: Child; ready: SubgraphsReady }> {
  const ports = await Promise.all([freePort(), freePort(), freePort(), freePort(), freePort()]);
  const child = spawnChild({
    name: 'subgraphs',
    entry: join(BENCH_SRC, 'procs/subgraphs.ts'),
    env: env({
      ...(await databaseEnv()),
      HOST: '127.0.0.1',
      IDENTITY_PORT: String(ports[0]),
      MEMORY_PORT: String(ports[1]),
      COORDINATION_PORT: String(ports[2]),
      CATALOG_PORT: String(ports[3]),
      GATEWAY_PORT: String(ports[4]),
      BENCH_TOKENS: String(CONNECTIONS),
      ...extraEnv,
    }),
    logDir: RUN_DIR,
    nodeFlags: profile ? cpuProf('subgraphs') : [],
    ipc: true,
    priority: PRIORITY,
  });
  children.push(child);
  const ready = await child.message<SubgraphsReady>(
    (m) => (m as { type?: string }).type === 'ready',
    180_000,
  );
  return { child, ready };
}

/** The composed supergraph with each subgraph's routing URL pointed at the bench's subgraph process. */
function writeSupergraph(urls: Record<string, string>): string {
  let sdl = readFileSync(join(REPO_ROOT, 'schemas/supergraph.graphql'), 'utf8');
  for (const [name, url] of Object.entries(urls)) {
    sdl = sdl.replace(new RegExp(`(@join__graph\\(name: "${name}", url: ")[^"]*(")`), `$1${url}$2`);
  }
  const file = join(RUN_DIR, 'supergraph.graphql');
  writeFileSync(file, sdl);
  return file;
}

/**
 * --sdk (generation time for every target, SDK overhead per call over plain fetch) and --schema-check
 * (a full check on the real schema, cold and warm) run their standalone scripts in child processes (a cold
 * start each) and keep the JSON they print.
 */
function runScripts(scripts: Record<string, string[]>): void {
  const out: Record<string, unknown> = { bench: MODE, machine, at: new Date().toISOString() };
  for (const [name, script] of Object.entries(scripts)) {
    const argv = [...script, ...forwarded];
    log(`${name}: ${argv.join(' ')}`);
    // --conditions: the SDK packages resolve to their TypeScript sources (sdk-templates/typescript/README.md).
    const stdout = execFileSync(
      process.execPath,
      ['--expose-gc', '--conditions=@agentgraph/source', '--import', 'tsx', ...argv],
      {
        cwd: REPO_ROOT,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    out[name] = JSON.parse(stdout.slice(stdout.indexOf('{')));
    console.log(JSON.stringify(out[name], null, 2));
  }
  const files = writeResults(RESULTS_DIR, stamp, MODE, out);
  log(`results: ${files.join(', ')}`);
}

async function main() {
  log(
    `mode ${MODE}; ${machine.cpus} CPUs (${machine.cpuModel}), Node ${machine.node}; results in ${RESULTS_DIR}`,
  );
  if (MODE === 'sdk') {
    runScripts({
      codegen: [join(BENCH_SRC, 'codegen-bench.ts'), '--runs', '6'],
      sdkOverhead: [join(BENCH_SRC, 'sdk-overhead.ts'), '--calls', '5000'],
    });
    return;
  }
  if (MODE === 'coordination') {
    runScripts({ coordination: [join(BENCH_SRC, 'coordination-bench.ts')] });
    return;
  }
  if (MODE === 'fanout') {
    runScripts({ fanout: [join(BENCH_SRC, 'fanout-bench.ts')] });
    return;
  }
  if (MODE === 'memory') {
    runScripts({ memory: [join(BENCH_SRC, 'memory-bench.ts')] });
    return;
  }
  if (MODE === 'secrets') {
    runScripts({ secrets: [join(BENCH_SRC, 'secrets-bench.ts')] });
    return;
  }
  if (MODE === 'catalog') {
    runScripts({ catalog: [join(BENCH_SRC, 'catalog-bench.ts')] });
    return;
  }
  if (MODE === 'console') {
    runScripts({ console: [join(BENCH_SRC, 'console-bench.ts'), '--runs', '10'] });
    return;
  }
  if (MODE === 'csharp') {
    runScripts({ csharp: [join(BENCH_SRC, 'csharp-bench.ts')] });
    return;
  }
  if (MODE === 'python') {
    runScripts({ python: [join(BENCH_SRC, 'python-bench.ts')] });
    return;
  }
  if (MODE === 'schema-check') {
    runScripts({ schemaCheck: [join(BENCH_SRC, 'schema-check-bench.ts')] });
    return;
  }
  if (MODE === 'auth') {
    // The auth bench has its own processes and report: see src/auth/run-auth.ts.
    await runAuthBench({
      database: DATABASE as 'pglite' | 'postgres',
      databaseEnv,
      children,
      runDir: RUN_DIR,
      resultsDir: RESULTS_DIR,
      stamp,
      priority: PRIORITY,
      priorityRaised,
      logLevel: args['log-level']!,
      machine,
      log,
      selfCpuMs,
      options: {
        connections: args.connections!,
        warmup: args.warmup!,
        duration: args.duration!,
        tokenConcurrency: args['token-concurrency']!,
        tokenPool: args['token-pool']!,
        rounds: args.rounds!,
        rate: args.rate!,
      },
    });
    console.log(`total ${((Date.now() - started) / 1000).toFixed(0)} s`);
    return;
  }
  const profile = MODE === 'profile';
  const { child: subgraphs, ready } = await startSubgraphs(
    profile,
    MODE === 'subgraph-servers' ? { BENCH_SUBGRAPH_SERVERS: '1' } : {},
  );
  log(
    `subgraphs up and seeded (${ready.seed.rooms} rooms x ${ready.seed.messagesPerRoom} messages): ${Object.values(ready.subgraphUrls).join(' ')}`,
  );
  const sdlFile = writeSupergraph(ready.subgraphUrls);

  let targets: Target[];
  let federation: Record<string, FederationProbe> | undefined;
  if (MODE === 'subgraph-servers') {
    const served = (ready.servers ?? []).filter((s) => s.url);
    targets = [
      ...served.map((s) => ({
        name: s.name,
        label: `${s.name}: nested query (DB)`,
        callers: 'distinct' as const,
        query: DIRECT_QUERY,
        url: s.url!,
        group: 'nested',
      })),
      ...served.map((s) => ({
        name: `${s.name}:trivial`,
        label: `${s.name}: { __typename }`,
        callers: 'distinct' as const,
        query: TRIVIAL_QUERY,
        url: s.url!,
        group: 'trivial',
      })),
    ];
    for (const s of ready.servers ?? []) if (s.error) log(`${s.name}: not served — ${s.error}`);
    federation = await probeFederation(served, ready.token);
    for (const [name, f] of Object.entries(federation)) log(`${name}: federation probe ${JSON.stringify(f)}`);
  } else {
    const all = gatewayTargets(ready, sdlFile);
    const wanted = args.targets?.split(',') ?? (profile ? ['ours'] : DEFAULT_TARGETS);
    targets = all.filter((t) => wanted.includes(t.name));
  }

  const load = spawnChild({
    name: 'load',
    entry: join(BENCH_SRC, 'procs/load.ts'),
    env: env({}),
    logDir: RUN_DIR,
    ipc: true,
    priority: PRIORITY,
  });
  children.push(load);
  await load.message((m) => (m as { type?: string }).type === 'ready', 60_000);

  const rounds: TargetResult[][] = targets.map(() => []);
  const windows = new Map<string, { fromUs: number; toUs: number }>();
  const reference = new Map<string, { name: string; data: string }>();
  for (let round = 0; round < ROUNDS; round++) {
    if (ROUNDS > 1) log(`round ${round + 1} of ${ROUNDS}`);
    for (const [i, target] of targets.entries()) {
      const m = await measure(target, load, subgraphs, ready.tokens, profile);
      // Same data from every target of a group (every gateway must give the same answer).
      if (m.data) {
        const ref = reference.get(target.group);
        if (!ref) reference.set(target.group, { name: target.name, data: m.data });
        else if (ref.data !== m.data) {
          m.result.valid = false;
          m.result.invalidReasons.push(`data differs from ${ref.name}'s`);
        }
      }
      if (m.window) windows.set(target.name, m.window);
      rounds[i]!.push(m.result);
      if (m.child) await m.child.stop(20_000);
      await sleep(500);
    }
  }
  const results = rounds.map((rs) => medianRound(rs));
  await load.stop();
  await subgraphs.stop(30_000);

  // Ratios: ours over stock (the issue's target is ≥ 1.5×), over stock+keep-alive, over Hive.
  const rps = (name: string) => {
    const r = results.find((x) => x.name === name);
    return r?.valid && r.load ? r.load.requestsPerSecond : null;
  };
  const ratio = (a: string, b: string) => {
    const x = rps(a);
    const y = rps(b);
    return x !== null && y !== null ? Math.round((x / y) * 100) / 100 : null;
  };
  const cpuRatio = (a: string, b: string) => {
    const x = results.find((r) => r.name === a);
    const y = results.find((r) => r.name === b);
    const cx = x?.valid ? x.cpuPerRequestUs.target : null;
    const cy = y?.valid ? y.cpuPerRequestUs.target : null;
    return cx && cy ? Math.round((cx / cy) * 100) / 100 : null;
  };
  const ratios =
    MODE === 'gateway'
      ? {
          // Distinct callers (one token per connection): the issue's target, ours ≥ 1.5× stock.
          oursOverStock: ratio('ours', 'stock'),
          oursOverStockKeepalive: ratio('ours', 'stock-keepalive'),
          oursOverHive: ratio('ours', 'hive'),
          hiveOverStock: ratio('hive', 'stock'),
          oursOverDirect: ratio('ours', 'direct'),
          // One shared token: the best case for in-flight deduplication (ours and Hive share identical fetches).
          oursSharedOverStock: ratio('ours-shared', 'stock'),
          oursSharedOverHiveShared: ratio('ours-shared', 'hive-shared'),
          // Gateway CPU per request (from /proc, whole process incl. GC threads), distinct callers: how much less
          // CPU ours spends per request, whichever process bounds the throughput. >1 = ours is cheaper.
          cpuStockOverOurs: cpuRatio('stock', 'ours'),
          cpuStockKeepaliveOverOurs: cpuRatio('stock-keepalive', 'ours'),
          cpuHiveOverOurs: cpuRatio('hive', 'ours'),
          target: 1.5,
          meetsTarget: ratio('ours', 'stock') === null ? null : ratio('ours', 'stock')! >= 1.5,
        }
      : MODE === 'subgraph-servers'
        ? {
            mercuriusOverRuntime: ratio('mercurius', 'runtime'),
            batchedPrototypeOverRuntime: ratio('runtime-batched', 'runtime'),
            mercuriusJitOverRuntime: ratio('mercurius-jit', 'runtime'),
            mercuriusFederationOverRuntime: ratio('mercurius-federation', 'runtime'),
            trivialMercuriusOverRuntime: ratio('mercurius:trivial', 'runtime:trivial'),
            trivialMercuriusJitOverRuntime: ratio('mercurius-jit:trivial', 'runtime:trivial'),
          }
        : undefined;

  // Profiles: each profiled target's own profile, and the subgraphs' profile cut to that target's window.
  let profiles: Record<string, ProfileSummary> | undefined;
  if (profile) {
    profiles = {};
    for (const r of results) {
      const w = windows.get(r.name);
      if (!w) continue;
      if (r.name !== 'direct') {
        try {
          profiles[r.name] = summarizeProfile(mainThreadProfile(RUN_DIR, r.name), w);
          console.log(formatProfile(`${r.label} (gateway process)`, profiles[r.name]!));
        } catch (err) {
          log(`no profile for ${r.name}: ${(err as Error).message}`);
        }
      }
      try {
        profiles[`subgraphs@${r.name}`] = summarizeProfile(mainThreadProfile(RUN_DIR, 'subgraphs'), w);
        console.log(
          formatProfile(`subgraphs process while loading ${r.name}`, profiles[`subgraphs@${r.name}`]!),
        );
      } catch (err) {
        log(`no subgraphs profile: ${(err as Error).message}`);
      }
    }
  }

  const output = {
    bench: MODE,
    startedAt: new Date(started).toISOString(),
    finishedAt: new Date().toISOString(),
    machine,
    parameters: {
      connections: CONNECTIONS,
      pipelining: 1,
      warmupSeconds: WARMUP,
      durationSeconds: DURATION,
      rounds: ROUNDS,
      database: DATABASE,
      query: MODE === 'subgraph-servers' ? DIRECT_QUERY : GATEWAY_QUERY,
      directQuery: DIRECT_QUERY,
      seed: ready.seed,
      logLevel: args['log-level'],
      priority: priorityRaised ? PRIORITY : 'unchanged (not allowed or --priority 0)',
      profiled: profile,
      note: profile ? 'numbers taken under the CPU profiler: not comparable with a plain run' : undefined,
    },
    targets: results,
    ratios,
    subgraphServers: MODE === 'subgraph-servers' ? ready.servers?.map(({ close: _c, ...s }) => s) : undefined,
    federation,
    profiles,
    runDir: RUN_DIR,
  };
  const files = writeResults(RESULTS_DIR, stamp, MODE, output);

  console.log(
    `\n${MODE === 'subgraph-servers' ? 'Coordination subgraph servers' : 'Gateway benchmark'}: ${CONNECTIONS} connections, ${WARMUP}s warm-up, ${DURATION}s measured, ${machine.cpus} CPUs shared by load generator, target and subgraphs${profile ? ' — UNDER THE PROFILER' : ''}`,
  );
  console.log(table(results));
  if (ratios) console.log('\nratios:', JSON.stringify(ratios));
  if (MODE === 'subgraph-servers') {
    for (const s of ready.servers ?? []) if (s.error) console.log(`${s.name}: not served — ${s.error}`);
    console.log('\nfederation probes (what a gateway sees):');
    for (const [name, f] of Object.entries(federation ?? {}))
      console.log(`  ${name.padEnd(22)} ${JSON.stringify(f)}`);
  }
  console.log(`\nwritten: ${files.join(', ')} (logs and profiles: ${RUN_DIR})`);
  console.log(`total ${((Date.now() - started) / 1000).toFixed(0)} s`);
}

main().then(
  async () => {
    await cleanup();
    process.exit(0);
  },
  async (err) => {
    console.error(err);
    await cleanup();
    process.exit(1);
  },
);

/**
 * `npm run bench -- --auth`: what token verification costs the gateway per request, and how many requests
 * identity's token endpoint answers per second. See bench/README.md, section "Auth".
 *
 * Processes (each its own Node process, tsx loader, like the gateway bench):
 *   identity   subgraphs/identity/src/main.ts, AGENTGRAPH_MODE=production, TOKEN_ISSUER = its own URL (PostgreSQL;
 *              on PGlite identity runs inside `services`, development mode, because PGlite is single-process)
 *   services   memory, coordination, catalog (./procs/services.ts), and the bench's hand on the database
 *   gateway    gateway/src/standalone.ts (through ../targets/ours.ts), with the revocation list on PostgreSQL
 *   load       ./procs/load.ts (autocannon for the gateway, closed-loop workers for the token endpoint)
 *   micro      ./procs/micro.ts (createTokenVerifier in-process), run while everything else is idle
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { z } from 'zod';
import { waitForGraphQL } from '../lib/http.js';
import { BENCH_SRC, freePort, REPO_ROOT, sleep, spawnChild, type Child } from '../lib/proc.js';
import { writeResults } from '../lib/report.js';
import { findPostmaster } from './cpu.js';
import { devicePublicJwk, enrolDevices, type EnrolledDevice } from './enrol.js';
import { measurer, medianRound, warmUp, type Procs } from './measure.js';
import { revokedTokenRefused, rpc, waitForHttp } from './preflight.js';
import type { GatewayJob, TokenEndpointJob } from './procs/load.js';
import type { MicroJob, MicroResult } from './procs/micro.js';
import type { ServicesReady } from './procs/services.js';
import {
  authTable,
  microLines,
  overheadLines,
  verificationOverhead,
  type AuthRunName,
  type AuthRunResult,
} from './report.js';
import type { TokenWorkload } from './token-requests.js';

/** createTokenVerifier's cache of verified tokens (runtime/src/auth.ts): a pool larger than this is never cached. */
export const VERIFIER_CACHE_ENTRIES = 10_000;
/** The public query every gateway run sends: answered by identity, with or without a token. */
export const AUTH_BENCH_QUERY = '{ capabilities { schemaVersion } }';
/** Live revocations (of unrelated token ids) every verifier holds while measured: the check does real lookups. */
export const SEEDED_REVOCATIONS = 1_000;
/** `aud` of the API's access tokens (TOKEN_AUDIENCE, set explicitly for every process). */
const AUDIENCE = 'agentgraph';
/** Warm-up of each measured run (after the warm-up pass over all runs): settles the connections. */
const RUN_WARMUP_SECONDS = 1;

const Options = z.object({
  connections: z.coerce.number().int().positive(),
  warmup: z.coerce.number().min(0),
  duration: z.coerce.number().positive(),
  tokenConcurrency: z.coerce.number().int().positive().max(256),
  tokenPool: z.coerce.number().int().min(100).max(100_000),
  rounds: z.coerce.number().int().positive().max(20),
  rate: z.coerce.number().positive().max(100_000),
});
export type AuthBenchOptions = z.input<typeof Options>;

export interface AuthBenchContext {
  database: 'pglite' | 'postgres';
  /** Provisions the bench database (a new PostgreSQL database, or in-memory PGlite) and returns its environment. */
  databaseEnv(): Promise<Record<string, string>>;
  /** Every child started here is pushed so the caller's cleanup stops it. */
  children: Child[];
  runDir: string;
  resultsDir: string;
  stamp: string;
  priority: number;
  priorityRaised: boolean;
  logLevel: string;
  machine: { cpus: number } & Record<string, unknown>;
  log(msg: string): void;
  selfCpuMs(): number;
  options: AuthBenchOptions;
}

export async function runAuthBench(ctx: AuthBenchContext): Promise<void> {
  const parsed = Options.safeParse(ctx.options);
  if (!parsed.success) {
    const i = parsed.error.issues[0]!;
    throw new Error(`--auth: option ${String(i.path[0])}: ${i.message}`);
  }
  const opts = parsed.data;
  const { log } = ctx;
  const started = Date.now();
  const postgres = ctx.database === 'postgres';
  const env = (extra: Record<string, string>) => ({
    NODE_ENV: 'production',
    LOG_LEVEL: ctx.logLevel,
    ...extra,
  });
  const spawn = (
    name: string,
    entry: string,
    extra: Record<string, string>,
    ipc = true,
    args: string[] = [],
  ) => {
    const child = spawnChild({
      name,
      entry,
      args,
      env: env(extra),
      logDir: ctx.runDir,
      ipc,
      priority: ctx.priority,
    });
    ctx.children.push(child);
    return child;
  };

  // ---- the services ------------------------------------------------------------------------------------------
  const dbEnv = await ctx.databaseEnv();
  const [identityPort, memoryPort, coordinationPort, catalogPort, gatewayPort] = await Promise.all(
    Array.from({ length: 5 }, () => freePort()),
  );
  const issuer = `http://127.0.0.1:${identityPort}`;
  const common: Record<string, string> = {
    ...dbEnv,
    AGENTGRAPH_MODE: postgres ? 'production' : 'development',
    HOST: '127.0.0.1',
    IDENTITY_PORT: String(identityPort),
    MEMORY_PORT: String(memoryPort),
    COORDINATION_PORT: String(coordinationPort),
    CATALOG_PORT: String(catalogPort),
    GATEWAY_PORT: String(gatewayPort),
    TOKEN_ISSUER: issuer,
    TOKEN_AUDIENCE: AUDIENCE,
    JWKS_URL: `${issuer}/.well-known/jwks.json`,
    SUBGRAPH_IDENTITY_URL: `${issuer}/graphql`,
    COOKIE_SECRET: randomBytes(32).toString('base64url'),
    GATEWAY_SECRET: randomBytes(32).toString('base64url'),
    CURSOR_SECRET: dbEnv['CURSOR_SECRET'] ?? randomBytes(32).toString('base64url'),
    // Enrolment polls once after 1 s instead of 5: the bench's setup, not a measured number.
    DEVICE_POLL_INTERVAL_SECONDS: '1',
  };
  const postmaster = postgres ? findPostmaster(dbEnv['DATABASE_URL']) : null;
  if (postgres && postmaster === null)
    log('PostgreSQL server not found among local processes: its CPU is not reported separately');

  let identity: Child;
  let services: Child;
  if (postgres) {
    identity = spawn('identity', join(REPO_ROOT, 'subgraphs/identity/src/main.ts'), common, false);
    await waitForHttp(`${issuer}/.well-known/oauth-authorization-server`, identity, 90_000);
    services = spawn('services', join(BENCH_SRC, 'auth/procs/services.ts'), common);
  } else {
    services = spawn('services', join(BENCH_SRC, 'auth/procs/services.ts'), {
      ...common,
      BENCH_SERVE_IDENTITY: '1',
    });
    identity = services;
  }
  const ready = await services.message<ServicesReady>(
    (m) => (m as { type?: string }).type === 'ready',
    180_000,
  );
  log(
    `identity at ${issuer} (${postgres ? 'own process, production mode' : 'in the services process, PGlite'})`,
  );
  const ask = rpc(services);

  // ---- setup: a member, enrolled desktops, live revocations, the token pool -------------------------------------
  await ask({ type: 'member' });
  const deviceCount = opts.tokenConcurrency + 1;
  const devices: EnrolledDevice[] = await enrolDevices(issuer, deviceCount, async (userCode) => {
    const a = await ask({ type: 'approve', userCode });
    return { deviceId: String(a['deviceId']) };
  });
  log(`enrolled ${devices.length} desktops with openid-client (device flow)`);
  const [gatewayDevice, ...chainDevices] = devices as [EnrolledDevice, ...EnrolledDevice[]];
  await ask({ type: 'revocations', count: SEEDED_REVOCATIONS });
  const minted = await ask({ type: 'mint', template: gatewayDevice.accessToken, count: opts.tokenPool });
  const pool = minted['tokens'] as string[];
  log(
    `minted a pool of ${pool.length} distinct tokens (copies of a device token, own jti each; verifier cache holds ` +
      `${VERIFIER_CACHE_ENTRIES})`,
  );
  if (pool.length <= VERIFIER_CACHE_ENTRIES)
    log(
      `--token-pool ${pool.length} ≤ ${VERIFIER_CACHE_ENTRIES}: after one pass the pool run measures cache hits`,
    );

  // ---- gateway --------------------------------------------------------------------------------------------------
  const subgraphEnv = Object.fromEntries(
    Object.entries(ready.subgraphUrls).map(([n, u]) => [`SUBGRAPH_${n.toUpperCase()}_URL`, u]),
  );
  // --no-dedupe: without it, requests carrying the same token (or none) share in-flight subgraph fetches and skip
  // identity, while distinct tokens cannot; the three runs would not do the same work behind the gateway.
  const gateway = spawn('gateway', join(BENCH_SRC, 'targets/ours.ts'), { ...common, ...subgraphEnv }, true, [
    '--no-dedupe',
  ]);
  const gatewayUrl = `http://127.0.0.1:${gatewayPort}/graphql`;
  const body = JSON.stringify({ query: AUTH_BENCH_QUERY });
  let alive = true;
  void gateway.exited.then(() => (alive = false));
  const anon = await waitForGraphQL(gatewayUrl, body, {}, 90_000, () => alive);
  await waitForHttp(`http://127.0.0.1:${gatewayPort}/readyz`, gateway, 30_000);
  const preflight: Record<string, unknown> = {};
  const expect: Partial<Record<'none' | 'one' | 'pool', string>> = {};
  for (const [mode, token] of [
    ['none', undefined],
    ['one', gatewayDevice.accessToken],
    ['pool', pool[0]],
  ] as const) {
    const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
    const a = await waitForGraphQL(gatewayUrl, body, headers, 10_000);
    const b = await waitForGraphQL(gatewayUrl, body, headers, 10_000);
    if (a.text !== b.text) throw new Error(`gateway answers differ between two identical requests (${mode})`);
    if (a.text !== anon.text)
      throw new Error(`gateway answers differently with a token (${mode}): ${a.text}`);
    expect[mode] = a.text;
  }
  preflight['answer'] = anon.text;
  preflight['revokedTokenRefused'] = {
    ...(await revokedTokenRefused(ask, gatewayUrl, body, gatewayDevice.accessToken)),
    checkedFirstBy: postgres
      ? "the gateway's revocation list (PostgreSQL LISTEN), then identity's"
      : 'identity only: a gateway process has no revocation list without PostgreSQL',
  };
  log(`gateway up at ${gatewayUrl}; a revoked token is ${JSON.stringify(preflight['revokedTokenRefused'])}`);

  // ---- micro-benchmark (everything else idle) ---------------------------------------------------------------------
  const micro = spawn('micro', join(BENCH_SRC, 'auth/procs/micro.ts'), {});
  await micro.message((m) => (m as { type?: string }).type === 'ready', 60_000);
  const microJob: MicroJob = {
    issuer,
    audience: AUDIENCE,
    jwksUrl: common['JWKS_URL']!,
    tokens: pool.slice(0, Math.min(pool.length, 4_201)),
    revocations: SEEDED_REVOCATIONS,
    hitIterations: 20_000,
    hitRounds: 15,
    rounds: 5,
  };
  micro.send({ type: 'run', job: microJob });
  const microAnswer = await micro.message<{ type: string; result?: MicroResult; error?: string }>(
    (m) => ['result', 'failed'].includes((m as { type?: string }).type ?? ''),
    120_000,
  );
  await micro.stop();
  const microResult = microAnswer.result ?? null;
  console.log(microLines(microResult, microAnswer.error));

  // ---- the measured runs -----------------------------------------------------------------------------------------
  const load = spawn('load', join(BENCH_SRC, 'auth/procs/load.ts'), {});
  await load.message((m) => (m as { type?: string }).type === 'ready', 60_000);
  const procs: Procs = { gateway, identity, services, load };
  const measure = measurer(ctx, procs, postmaster, postgres);
  const rateSeconds = fixedRateSeconds(opts.duration);
  const gatewayJob = (authorization: GatewayJob['authorization'], rate?: number): GatewayJob => ({
    kind: 'gateway',
    url: gatewayUrl,
    body,
    connections: opts.connections,
    authorization,
    tokens: authorization === 'one' ? [gatewayDevice.accessToken] : authorization === 'pool' ? pool : [],
    expectBody: expect[authorization]!,
    warmupSeconds: RUN_WARMUP_SECONDS,
    durationSeconds: rate === undefined ? opts.duration : rateSeconds,
    ...(rate === undefined ? {} : { rate }),
  });
  const poolLabel = `${pool.length} tokens${pool.length > VERIFIER_CACHE_ENTRIES ? ' (cold)' : ' (CACHED after 1 pass)'}`;
  const at = `${opts.rate} req/s`;
  // [name, label, authorization, fixed rate (requests/s) or undefined for full speed]
  const gatewayRuns: [AuthRunName, string, GatewayJob['authorization'], number | undefined][] = [
    ['gateway-no-token-rate', `(a) gateway, no token, ${at}`, 'none', opts.rate],
    ['gateway-one-token-rate', `(b) gateway, one token (cached), ${at}`, 'one', opts.rate],
    ['gateway-token-pool-rate', `(c) gateway, ${poolLabel}, ${at}`, 'pool', opts.rate],
    ['gateway-no-token', '(a) gateway, no token, full speed', 'none', undefined],
    ['gateway-one-token', '(b) gateway, one token (cached), full speed', 'one', undefined],
    ['gateway-token-pool', `(c) gateway, ${poolLabel}, full speed`, 'pool', undefined],
  ];
  const deviceJwk = await devicePublicJwk();
  const tokenJob = (workload: TokenWorkload): TokenEndpointJob => ({
    kind: 'token-endpoint',
    origin: issuer,
    workload,
    audience: AUDIENCE,
    seeds:
      workload === 'refresh'
        ? chainDevices.map((d) => ({ refreshToken: d.refreshToken }))
        : workload === 'exchange'
          ? [{ subjectToken: gatewayDevice.accessToken }]
          : [{ deviceJwk }],
    concurrency: opts.tokenConcurrency,
    warmupSeconds: RUN_WARMUP_SECONDS,
    durationSeconds: opts.duration,
  });
  const tokenRuns: [AuthRunName, string, TokenWorkload][] = [
    ['token-refresh', '(i) refresh_token grant, rotation', 'refresh'],
    ['token-exchange', '(ii) token exchange (RFC 8693)', 'exchange'],
    ['device-authorization', '(iii) device authorization', 'device-authorization'],
  ];
  // First a warm-up pass over every run (discarded): the first run measured after the processes start would otherwise
  // also pay for their JIT compilation and the other runs would not. Each measured run then warms up 1 s more.
  if (opts.warmup > 0) {
    const tokenWarmup = Math.min(opts.warmup, 2);
    log(
      `warm-up pass: every run once, ${opts.warmup}s (gateway) or ${tokenWarmup}s (token endpoint), discarded`,
    );
    // Token endpoint first, so that the gateway runs, measured first, come right after their own warm-up.
    for (const [name, , workload] of tokenRuns)
      await warmUp(
        load,
        name,
        { ...tokenJob(workload), warmupSeconds: 0, durationSeconds: tokenWarmup },
        log,
      );
    for (const [name, , authorization, rate] of gatewayRuns)
      if (rate === undefined)
        await warmUp(
          load,
          name,
          { ...gatewayJob(authorization), warmupSeconds: 0, durationSeconds: opts.warmup },
          log,
        );
  }
  // Rounds (--rounds): the whole list again, interleaved, so a slow drift or a burst of other work hits every run
  // alike; each run keeps its median round (by requests/s), with every round's numbers attached.
  const rounds = new Map<AuthRunName, AuthRunResult[]>();
  const keep = (r: AuthRunResult) => rounds.set(r.name, [...(rounds.get(r.name) ?? []), r]);
  for (let round = 1; round <= opts.rounds; round++) {
    if (opts.rounds > 1) log(`round ${round} of ${opts.rounds}`);
    for (const [name, label, authorization, rate] of gatewayRuns) {
      const job = gatewayJob(authorization, rate);
      log(
        `${label}: ${RUN_WARMUP_SECONDS}s warm-up + ${job.durationSeconds}s, ${opts.connections} connections`,
      );
      keep(await measure(name, label, job));
      await sleep(500);
    }
    for (const [name, label, workload] of tokenRuns) {
      log(`${label}: ${RUN_WARMUP_SECONDS}s warm-up + ${opts.duration}s, ${opts.tokenConcurrency} workers`);
      keep(await measure(name, label, tokenJob(workload)));
      await sleep(500);
    }
  }
  const results = [...rounds.values()].map(medianRound);

  await load.stop();
  await gateway.stop(20_000);
  await services.stop(30_000);
  if (identity !== services) await identity.stop(20_000);

  // ---- report ----------------------------------------------------------------------------------------------------
  const overhead = verificationOverhead(results);
  const output = {
    bench: 'auth',
    startedAt: new Date(started).toISOString(),
    finishedAt: new Date().toISOString(),
    machine: ctx.machine,
    parameters: {
      database: ctx.database,
      connections: opts.connections,
      warmupPassSeconds: { gateway: opts.warmup, tokenEndpoint: Math.min(opts.warmup, 2) },
      warmupSecondsPerRun: RUN_WARMUP_SECONDS,
      durationSeconds: opts.duration,
      fixedRate: { requestsPerSecond: opts.rate, durationSeconds: rateSeconds },
      tokenEndpointWorkers: opts.tokenConcurrency,
      tokenPool: pool.length,
      tokenPoolIsCold: pool.length > VERIFIER_CACHE_ENTRIES,
      rounds: opts.rounds,
      verifierCacheEntries: VERIFIER_CACHE_ENTRIES,
      seededRevocations: SEEDED_REVOCATIONS,
      query: AUTH_BENCH_QUERY,
      identityMode: postgres ? 'production, own process' : 'development, in the services process (PGlite)',
      gatewayRevocationList: postgres,
      logLevel: ctx.logLevel,
      priority: ctx.priorityRaised ? ctx.priority : 'unchanged (not allowed or --priority 0)',
    },
    preflight,
    micro: microResult,
    microError: microAnswer.error,
    runs: results,
    verificationOverhead: overhead,
    runDir: ctx.runDir,
  };
  const files = writeResults(ctx.resultsDir, ctx.stamp, 'auth', output);
  console.log(
    `\nAuth benchmark (${ctx.database}): gateway ${opts.connections} connections, token endpoint ` +
      `${opts.tokenConcurrency} workers, ${opts.duration}s measured, ${ctx.machine.cpus} CPUs shared by everything`,
  );
  console.log(authTable(results));
  const poolIsCold = pool.length > VERIFIER_CACHE_ENTRIES;
  console.log(
    `\n${overheadLines(overhead, poolIsCold, opts.rate)}\n${microLines(microResult, microAnswer.error)}`,
  );
  console.log(`\nwritten: ${files.join(', ')} (logs: ${ctx.runDir})`);
}

/** Length of the fixed-rate gateway runs: half the full-speed ones (CPU per request needs fewer samples), ≥ 3 s. */
export function fixedRateSeconds(duration: number): number {
  return Math.max(3, Math.round(duration / 2));
}

/**
 * The production shape (Dockerfile, compose.yaml, README "Running in production") without Docker.
 *
 * Static (every run): the image and compose commands name files that exist, the Dockerfile is multi-stage, runs as a
 * non-root user with NODE_ENV=production and a /healthz check, every compose service's variables are ones
 * runtime/src/config.ts reads, each service's environment loads as a production configuration, and no service but
 * the migrations job and the operators' tools holds the owner's login.
 *
 * As processes (on PostgreSQL: the suite's PostgreSQL pass, or DATABASE_URL): the README's secrets block writes the
 * .env, then every compose service runs with its own command and environment, only hosts and ports moved to loopback
 * and the database to a fresh one on the test server: the migrate job first (exit 0), then identity, memory, two
 * coordination replicas, catalog and two gateways, as child processes with NODE_ENV=production and nothing else in
 * their environment. Then: the admin CLI bootstraps a tenant and prints the owner's token, a cross-subgraph query, a
 * stream on one coordination replica receiving what was posted through the other, and a device enrolled by the OAuth
 * device grant receiving, on its stream through one replica, an intent created through the other (signed with the
 * key both replicas publish). Every process stops cleanly on SIGTERM.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '@agentgraph/runtime';
import { createRemoteJWKSet, exportJWK, generateKeyPair, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { provisionTestDatabase, type TestDatabase } from '../src/database.js';
import { freePort } from '../src/ports.js';
import { subscribe, type Subscription } from '../src/sse.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/**
 * Where the processes run: this checkout, or PRODUCTION_SHAPE_APP_DIR, the image's /app unpacked (`docker export`,
 * or the Dockerfile's COPY steps replayed), to check that the image holds every file the services read.
 */
const APP = process.env['PRODUCTION_SHAPE_APP_DIR'] ?? ROOT;
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
const onPostgres = Boolean(process.env['DATABASE_URL']);

interface ComposeService {
  image?: string;
  build?: string;
  command?: string[];
  entrypoint?: string[];
  environment?: Record<string, string | number | boolean>;
  depends_on?: Record<string, { condition: string }>;
  profiles?: string[];
  healthcheck?: { test: string[] };
  ports?: string[];
}

const compose = parseYaml(read('compose.yaml'), { merge: true }) as {
  services: Record<string, ComposeService>;
};
const dockerfile = read('Dockerfile');
/** The services built from this repository's image (all but PostgreSQL). */
const ours = Object.entries(compose.services).filter(([, s]) => s.build === '.');
/** The long-running services (not the one-shot job, not the operators' tools). */
const running = ours.filter(([name, s]) => name !== 'migrate' && !s.profiles);

/** Compose's variable interpolation: ${NAME}, ${NAME:-default}, ${NAME-default}, ${NAME:?message}, $$. */
function interpolate(value: string, vars: Record<string, string>): string {
  return value.replace(
    /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?)([-?])([^}]*))?\}/g,
    (whole, name: string | undefined, colon: string, op: string, arg: string) => {
      if (whole === '$$') return '$';
      const v = vars[name!];
      const unset = v === undefined || (colon === ':' && v === '');
      if (!unset) return v;
      if (op === '-') return arg;
      if (op === '?') throw new Error(`compose.yaml needs ${name}: ${arg}`);
      return '';
    },
  );
}

function environmentOf(service: ComposeService, vars: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(service.environment ?? {}).map(([k, v]) => [k, interpolate(String(v), vars)]),
  );
}

/** The `node --import tsx <file>` a service runs (its entrypoint, else its command, else the image's CMD). */
function scriptOf(service: ComposeService): string[] {
  return service.entrypoint ?? service.command ?? dockerCmd();
}

function dockerCmd(): string[] {
  const cmd = /^CMD (\[.*\])$/m.exec(dockerfile);
  return JSON.parse(cmd![1]!) as string[];
}

/** The variables runtime/src/config.ts reads (the keys of its EnvSchema). */
function configVariables(): Set<string> {
  const source = read('runtime/src/config.ts');
  const schema = source.slice(source.indexOf('const EnvSchema = z.object({'), source.indexOf('\n});'));
  return new Set([...schema.matchAll(/^ {2}([A-Z][A-Z0-9_]*):/gm)].map((m) => m[1]!));
}

/** The .env the README's secrets block writes (run as written, in a temporary folder). */
function generateSecrets(): Record<string, string> {
  const readme = read('README.md');
  const marker = readme.indexOf('production-shape.test.ts runs the next block');
  expect(marker).toBeGreaterThan(0);
  const block = /```sh\n([\s\S]*?)```/.exec(readme.slice(marker))![1]!;
  const dir = mkdtempSync(join(tmpdir(), 'agentgraph-env-'));
  try {
    const run = spawnSync('bash', ['-euo', 'pipefail', '-c', block], { cwd: dir, encoding: 'utf8' });
    expect(run.status, run.stderr).toBe(0);
    const env = readFileSync(join(dir, '.env'), 'utf8');
    return Object.fromEntries(
      env
        .split('\n')
        .filter((l) => l.includes('='))
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('the production shape, read', () => {
  it('names files that exist in every image and compose command and health check', () => {
    const scripts = [dockerCmd(), ...ours.map(([, s]) => scriptOf(s))];
    for (const cmd of scripts) {
      expect(cmd.slice(0, 3)).toEqual(['node', '--import', 'tsx']);
      expect(existsSync(join(ROOT, cmd[3]!)), cmd[3]).toBe(true);
    }
    const checks = [
      JSON.parse(/^HEALTHCHECK .*CMD (\[.*\])$/m.exec(dockerfile)![1]!) as string[],
      ...running.map(([, s]) => s.healthcheck!.test.slice(1)),
    ];
    for (const check of checks) {
      expect(check[0]).toBe('node');
      expect(existsSync(join(ROOT, check[1]!)), check[1]).toBe(true);
    }
    // What the Dockerfile copies into the image exists.
    for (const m of dockerfile.matchAll(/^COPY (?!--from)(.+) \S+$/gm)) {
      for (const path of m[1]!.split(' ')) expect(existsSync(join(ROOT, path)), path).toBe(true);
    }
  });

  it('builds in stages and runs as a non-root user, in production mode, with a /healthz check', () => {
    const stages = dockerfile.split(/^FROM /m).slice(1);
    expect(stages.length).toBeGreaterThanOrEqual(2);
    expect(dockerfile).toMatch(/^ARG NODE_IMAGE=node:24-/m);
    expect(stages[0]).toMatch(/npm ci --omit=dev/);
    const final = stages.at(-1)!;
    const user = /^USER (\S+)$/m.exec(final)?.[1];
    expect(user).toBeDefined();
    expect(['root', '0']).not.toContain(user);
    expect(final).toMatch(/NODE_ENV=production/);
    expect(read('scripts/healthcheck.mjs')).toContain('/healthz');
  });

  it('sets only variables runtime/src/config.ts reads (and NODE_ENV)', () => {
    const known = configVariables();
    expect(known.has('DATABASE_URL') && known.has('MIGRATE')).toBe(true);
    for (const [name, s] of ours) {
      const unknown = Object.keys(s.environment ?? {}).filter((k) => !known.has(k) && k !== 'NODE_ENV');
      expect(unknown, name).toEqual([]);
    }
  });

  it("loads each service's environment as a production configuration; only the job and the tools hold the owner's login", () => {
    const vars = generateSecrets();
    for (const [name, s] of ours) {
      const env = environmentOf(s, vars);
      const config = loadConfig(env);
      expect(config.mode, name).toBe('production');
      expect(env['NODE_ENV'], name).toBe('production');
      if (running.some(([n]) => n === name)) {
        expect(env['DATABASE_URL'], name).toBeUndefined();
        expect(config.migrate, name).toBe(false);
        expect(s.depends_on?.['migrate']?.condition, name).toBe('service_completed_successfully');
        // Its own login, as its own role.
        const service = /^DATABASE_([A-Z]+)_URL$/.exec(
          Object.keys(env).find((k) => /^DATABASE_[A-Z]+_URL$/.test(k))!,
        )![1]!;
        expect(new URL(env[`DATABASE_${service}_URL`]!).username).toBe(
          `agentgraph_app_${service.toLowerCase()}`,
        );
      } else {
        expect(new URL(env['DATABASE_URL']!).username, name).toBe('agentgraph');
      }
    }
    expect(compose.services['migrate']!.depends_on?.['postgres']?.condition).toBe('service_healthy');
    // Two coordination replicas, each behind its own gateway.
    const coordinationOf = (gateway: string) =>
      new URL(String(compose.services[gateway]!.environment!['SUBGRAPH_COORDINATION_URL'])).hostname;
    expect([coordinationOf('gateway-1'), coordinationOf('gateway-2')]).toEqual([
      'coordination-1',
      'coordination-2',
    ]);
  });
});

/** The port a service's command listens on inside its container, and the variable that sets it. */
const PORT_OF: Record<string, [string, number]> = {
  'subgraphs/identity/src/main.ts': ['IDENTITY_PORT', 4101],
  'subgraphs/memory/src/main.ts': ['MEMORY_PORT', 4102],
  'subgraphs/coordination/src/main.ts': ['COORDINATION_PORT', 4103],
  'subgraphs/catalog/src/main.ts': ['CATALOG_PORT', 4104],
  'gateway/src/standalone.ts': ['GATEWAY_PORT', 4000],
};

interface Proc {
  name: string;
  child: ChildProcess;
  output: string[];
  exited: Promise<number | null>;
}

function withTimeout<T>(what: string, promise: Promise<T>, ms = 30_000): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms);
    }),
  ]);
}

describe.runIf(onPostgres)('the production shape, run as processes', () => {
  let testDb: TestDatabase;
  let vars: Record<string, string>;
  const ports = new Map<string, number>();
  const procs: Proc[] = [];
  const url = (service: string, path = '') => `http://127.0.0.1:${ports.get(service)}${path}`;

  /**
   * A service's environment as compose gives it, moved onto this machine: service hosts to loopback ports, the
   * database to the test server's fresh database (the owner `agentgraph` to the test server's owner), HOST to
   * loopback, and the service's port variable to its loopback port. Nothing of this process's environment but PATH.
   */
  function envFor(name: string, service: ComposeService): Record<string, string> {
    const env = environmentOf(service, vars);
    const owner = new URL(testDb.env['DATABASE_URL']!);
    const postgresUser = String(compose.services['postgres']!.environment!['POSTGRES_USER']);
    for (const [k, v] of Object.entries(env)) {
      if (!/^(postgres|https?):\/\//.test(v)) continue;
      const u = new URL(v);
      if (u.protocol === 'postgres:' && u.hostname === 'postgres') {
        u.host = owner.host;
        u.pathname = owner.pathname;
        if (decodeURIComponent(u.username) === postgresUser) {
          u.username = owner.username;
          u.password = owner.password;
        }
        env[k] = u.toString();
      } else if (ports.has(u.hostname)) {
        env[k] = `http://127.0.0.1:${ports.get(u.hostname)}${u.pathname}`;
      }
    }
    if (env['HOST'] === '0.0.0.0') env['HOST'] = '127.0.0.1';
    const listens = PORT_OF[scriptOf(service)[3]!];
    if (listens) env[listens[0]] = String(ports.get(name));
    return { ...env, PATH: process.env['PATH']! };
  }

  function start(name: string, args: string[] = [], stdin?: string): Proc {
    const service = compose.services[name]!;
    const [node, ...rest] = [...scriptOf(service), ...args];
    expect(node).toBe('node');
    const child = spawn(process.execPath, rest, {
      cwd: APP,
      env: envFor(name, service),
      stdio: [stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    if (stdin !== undefined) child.stdin!.end(stdin);
    const output: string[] = [];
    child.stdout!.on('data', (d: Buffer) => output.push(d.toString()));
    child.stderr!.on('data', (d: Buffer) => output.push(d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const proc = { name, child, output, exited };
    procs.push(proc);
    return proc;
  }

  /**
   * Waits for a service's /readyz to answer 200; fails at once if the process ends first. The bound only keeps a
   * broken start from hanging the run: seven processes loading TypeScript through tsx on two busy cores take minutes.
   */
  async function ready(p: Proc): Promise<void> {
    let exited = false;
    void p.exited.then(() => (exited = true));
    const deadline = Date.now() + 300_000;
    for (;;) {
      if (exited) throw new Error(`${p.name} exited before it was ready:\n${p.output.join('')}`);
      const res = await fetch(url(p.name, '/readyz')).catch(() => null);
      if (res?.status === 200) return;
      if (Date.now() > deadline) throw new Error(`${p.name} not ready after 300 s:\n${p.output.join('')}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async function gql(gateway: string, query: string, variables: Record<string, unknown>, token: string) {
    const res = await fetch(url(gateway, '/graphql'), {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query, variables }),
    });
    const body = (await res.json()) as { data?: any; errors?: unknown[] };
    expect(body.errors, JSON.stringify(body.errors)).toBeUndefined();
    return body.data;
  }

  let owner: { tenantId: string; userId: string; accessToken: string };

  beforeAll(async () => {
    testDb = await provisionTestDatabase();
    vars = generateSecrets();
    for (const [name] of running) ports.set(name, await freePort());
    // The public origins (README: the TLS terminator's names) are the loopback ports here.
    vars['PUBLIC_IDENTITY_ORIGIN'] = url('identity');
    vars['PUBLIC_COORDINATION_ORIGIN'] = url('coordination-1');

    const migrate = start('migrate');
    expect(await migrate.exited, migrate.output.join('')).toBe(0);
    expect(migrate.output.join('')).toContain('"msg":"migrations applied"');

    const started = running.map(([name]) => start(name));
    // The operator bootstraps the first tenant while the services start (it needs only the migrated database).
    const bootstrap = start(
      'admin',
      ['bootstrap', '--tenant', 'Acme', '--email', 'ops@acme.example', '--name', 'Ops', '--password-stdin'],
      'a long enough production password\n',
    );
    await Promise.all(started.map(ready));
    expect(await bootstrap.exited, bootstrap.output.join('')).toBe(0);
    const line = bootstrap.output
      .join('')
      .split('\n')
      .find((l) => l.startsWith('{"tenantId"'));
    owner = JSON.parse(line!) as typeof owner;
  }, 450_000);

  afterAll(async () => {
    for (const p of procs)
      if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    await Promise.all(procs.map((p) => p.exited));
    await testDb?.drop();
  });

  it("passes every service's compose health check", async () => {
    const checks = running.map(([name, s]) => {
      const [, script, port] = s.healthcheck!.test.slice(1);
      // The container port, as compose.yaml names it, is this service's loopback port here.
      expect(Number(port), name).toBe(PORT_OF[scriptOf(s)[3]!]![1]);
      const check = spawn(process.execPath, [script!, String(ports.get(name))], { cwd: APP });
      const stderr: Buffer[] = [];
      check.stderr.on('data', (d: Buffer) => stderr.push(d));
      return new Promise<[string, number | null, string]>((resolve) =>
        check.once('exit', (code) => resolve([name, code, Buffer.concat(stderr).toString()])),
      );
    });
    // Nothing listening: the check fails.
    const idle = spawnSync(process.execPath, ['scripts/healthcheck.mjs', String(await freePort())], {
      cwd: APP,
    });
    expect(idle.status).toBe(1);
    for (const [name, code, stderr] of await Promise.all(checks)) expect(code, `${name}: ${stderr}`).toBe(0);
  });

  it('answers a query across subgraphs with the token the admin CLI printed', async () => {
    const room = await gql(
      'gateway-1',
      'mutation R($k: ID!) { createRoom(input: { name: "ops" }, idempotencyKey: $k) { room { id } } }',
      { k: randomUUID() },
      owner.accessToken,
    );
    const roomId = room.createRoom.room.id as string;
    const data = await gql(
      'gateway-2',
      `query Q($id: ID!) { viewer { tenant { name } role } room(id: $id) { name createdBy { displayName email } } }`,
      { id: roomId },
      owner.accessToken,
    );
    expect(data).toEqual({
      viewer: { tenant: { name: 'Acme' }, role: 'OWNER' },
      room: { name: 'ops', createdBy: { displayName: 'Ops', email: 'ops@acme.example' } },
    });
  });

  it('streams through one coordination replica a message posted through the other', async () => {
    const room = await gql(
      'gateway-1',
      'mutation R($k: ID!) { createRoom(input: { name: "live" }, idempotencyKey: $k) { room { id } } }',
      { k: randomUUID() },
      owner.accessToken,
    );
    const roomId = room.createRoom.room.id as string;
    // Live only (no afterSeq): what arrives was posted after the stream started, on the other replica.
    const s = subscribe(
      url('gateway-2', '/graphql/stream'),
      owner.accessToken,
      'subscription S($r: ID!) { roomMessages(roomId: $r) { id seq } }',
      { r: roomId },
    );
    try {
      const posted = new Set<string>();
      const event = s.next();
      let got: Awaited<typeof event> | undefined;
      void event.then((e) => (got = e));
      // Post until the stream has started and carried one (each post is a new message).
      for (let i = 0; i < 50 && !got; i++) {
        const m = await gql(
          'gateway-1',
          'mutation P($r: ID!, $k: ID!) { postMessage(roomId: $r, input: { body: "hello" }, idempotencyKey: $k) { message { id } } }',
          { r: roomId, k: randomUUID() },
          owner.accessToken,
        );
        posted.add(m.postMessage.message.id as string);
        await Promise.race([event, new Promise((r) => setTimeout(r, 300))]);
      }
      const e = await withTimeout('roomMessages', event);
      expect(e.errors).toBeUndefined();
      expect(posted.has((e.data as any).roomMessages.id as string)).toBe(true);
    } finally {
      s.dispose();
    }
  });

  it("delivers an intent created through one replica to the device's stream on the other", async () => {
    // The desktop asks identity (its public origin) for a device code, with its key.
    const { publicKey } = await generateKeyPair('ES256', { extractable: true });
    const asked = await fetch(url('identity', '/oauth/device_authorization'), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        client_id: 'agentgraph-desktop',
        scope: 'openid offline_access api:read api:write',
        device_name: 'Build box',
        device_platform: 'linux',
        device_jwk: JSON.stringify(await exportJWK(publicKey)),
      }),
    });
    expect(asked.status).toBe(200);
    const code = (await asked.json()) as { user_code: string; device_code: string; interval: number };
    // The owner approves it through the gateway.
    const approved = await gql(
      'gateway-1',
      'mutation A($c: String!, $k: ID!) { approveDeviceAuthorization(userCode: $c, idempotencyKey: $k) { device { id } } }',
      { c: code.user_code, k: randomUUID() },
      owner.accessToken,
    );
    const deviceId = approved.approveDeviceAuthorization.device.id as string;
    // The device polls, as RFC 8628 says (every `interval` seconds), and gets its own token.
    let deviceToken: string | undefined;
    for (let wait = code.interval; !deviceToken;) {
      await new Promise((r) => setTimeout(r, wait * 1000));
      const res = await fetch(url('identity', '/oauth/token'), {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
          device_code: code.device_code,
          client_id: 'agentgraph-desktop',
        }),
      });
      const body = (await res.json()) as { access_token?: string; error?: string; interval?: number };
      if (body.error === 'slow_down') wait += 5;
      else if (body.error !== 'authorization_pending') {
        expect(body.error).toBeUndefined();
        deviceToken = body.access_token;
      }
    }
    await gql(
      'gateway-2',
      'mutation E($k: ID!) { setRemoteActionsEnabled(enabled: true, idempotencyKey: $k) { device { id } } }',
      { k: randomUUID() },
      deviceToken,
    );

    const stream: Subscription = subscribe(
      url('gateway-2', '/graphql/stream'),
      deviceToken,
      'subscription D { deviceIntents(afterSeq: 0) { id seq jws } }',
    );
    try {
      const created = await gql(
        'gateway-1',
        'mutation C($i: CreateIntentInput!, $k: ID!) { createIntent(input: $i, idempotencyKey: $k) { intent { id seq } } }',
        { i: { deviceId, action: 'open-app', expiresInSeconds: 600 }, k: randomUUID() },
        owner.accessToken,
      );
      const event = await withTimeout('deviceIntents', stream.next());
      expect(event.errors).toBeUndefined();
      const intent = (event.data as any).deviceIntents as { id: string; seq: number; jws: string };
      expect({ id: intent.id, seq: intent.seq }).toEqual(created.createIntent.intent);
      // Signed with the key both replicas publish, by the public intent issuer, for this device.
      const { payload } = await jwtVerify(
        intent.jws,
        createRemoteJWKSet(new URL(url('coordination-2', '/.well-known/intent-jwks.json'))),
        { issuer: vars['PUBLIC_COORDINATION_ORIGIN'], audience: deviceId, typ: 'intent+jwt' },
      );
      expect(payload).toMatchObject({ jti: intent.id, action: 'open-app', seq: intent.seq });
    } finally {
      stream.dispose();
    }
  });

  it('stops every service cleanly on SIGTERM', async () => {
    const live = procs.filter((p) => p.child.exitCode === null);
    expect(live.map((p) => p.name).sort()).toEqual(running.map(([n]) => n).sort());
    // Gateways first, as an orchestrator drains the edge before what is behind it.
    for (const group of [live.filter((p) => p.name.startsWith('gateway')), live]) {
      for (const p of group) if (p.child.exitCode === null) p.child.kill('SIGTERM');
      for (const p of group) expect(await p.exited, `${p.name}:\n${p.output.join('')}`).toBe(0);
    }
  });
});

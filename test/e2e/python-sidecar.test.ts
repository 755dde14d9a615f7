/**
 * The Python sidecar end to end: a real Python process (Debian's /usr/bin/python3 running
 * sdks/python/samples/sidecar_agent.py, the generated SDK) gets its token from the real C# broker
 * (sdk-templates/csharp/tools/AgentGraph.Host.E2eTool, enrolled by the device flow against the real platform) and
 * - writes memory records (putMemory in a workspace) and posts messages (postMessage) through the gateway;
 * - has a record or message holding a secret or an SSN refused before any request leaves the process: a fault proxy
 *   with no faults stands between the sidecar and the gateway and counts every request;
 * - cannot use its token at identity (an RFC 8693 exchange with it is refused, as are identity's GraphQL mutations)
 *   nor with another audience (PyJWT's audience check, and a resource server of another audience, refuse it);
 * - never writes the token to its logs (stderr) or to disk (its HOME and working directory stay empty).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AppError, createTokenVerifier } from '@agentgraph/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFaultProxy, type FaultProxy } from '../fault-proxy/src/index.js';
import { startTestPlatform, type TestPlatform, type TestUser } from '../src/platform.js';
import { buildDotnetProject, DOTNET_ENV } from '../src/dotnet-build.js';
import { PYTHON, PYTHON_SDK_ENV } from './fixtures/python-sdk.js';

const PROJECT = fileURLToPath(
  new URL('../../sdk-templates/csharp/tools/AgentGraph.Host.E2eTool/', import.meta.url),
);
const DLL = join(PROJECT, 'bin/Release/net10.0/AgentGraph.Host.E2eTool.dll');
const SIDECAR = fileURLToPath(new URL('../../sdks/python/samples/sidecar_agent.py', import.meta.url));
const JWT_SHAPE = /eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\./;

type Line = Record<string, any>;

let p: TestPlatform;
let owner: TestUser;
let issuer: string;
let proxy: FaultProxy;
const dir = mkdtempSync(join(tmpdir(), 'python-sidecar-'));
const storeDir = join(dir, 'data', 'agentgraph');
const socketPath = join(dir, 'run', 'broker.sock');
const sidecarHome = join(dir, 'sidecar-home');
const children: ChildProcess[] = [];

/** A child whose stdout is JSON lines; `next()` resolves with the next line, or rejects once the child exited. */
function lines(child: ChildProcess, stderr: () => string = () => '') {
  const queue: Line[] = [];
  const waiting: Array<{ resolve: (l: Line) => void; reject: (e: Error) => void }> = [];
  let exitCode: number | null | undefined;
  const all: Line[] = [];
  let buffer = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    buffer += chunk.toString('utf8');
    const parts = buffer.split('\n');
    buffer = parts.pop()!;
    for (const part of parts) {
      const l = JSON.parse(part) as Line;
      all.push(l);
      const w = waiting.shift();
      if (w) w.resolve(l);
      else queue.push(l);
    }
  });
  const gone = (code: number | null) =>
    new Error(`the process exited (${code}) before answering: ${stderr()}`);
  const exited = new Promise<number | null>((resolve) =>
    child.on('exit', (code) => {
      exitCode = code;
      for (const w of waiting.splice(0)) w.reject(gone(code));
      resolve(code);
    }),
  );
  const next = () =>
    new Promise<Line>((resolve, reject) => {
      const l = queue.shift();
      if (l) resolve(l);
      else if (exitCode !== undefined) reject(gone(exitCode));
      else waiting.push({ resolve, reject });
    });
  return { child, all, next, exited };
}

function tool(args: string[]) {
  const child = spawn('dotnet', [DLL, ...args], { env: DOTNET_ENV, stdio: ['pipe', 'pipe', 'inherit'] });
  children.push(child);
  return lines(child);
}

beforeAll(async () => {
  await buildDotnetProject(PROJECT);
  p = await startTestPlatform({ DEVICE_POLL_INTERVAL_SECONDS: '1' });
  owner = await p.tokenFor({ tenant: 'python-sidecar' });
  issuer = p.platform.config.tokenIssuer;
  proxy = await startFaultProxy({
    upstream: p.gatewayUrl,
    seed: 1,
    faults: { dropRequest: 0, dropResponse: 0, unavailable: 0, rateLimit: 0 },
  });
}, 300_000);
afterAll(async () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  if (p?.errorLogs.length) console.error(p.errorLogs.join('\n'));
  await proxy?.close();
  await p?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The device flow of the C# host, approved by the owner through identity's GraphQL (as csharp-host.test.ts). */
async function enrol(): Promise<string> {
  const run = tool(['enrol', issuer, storeDir]);
  const code = await run.next();
  const approved = await p.gql(
    'mutation A($c: String!, $k: ID!) { approveDeviceAuthorization(userCode: $c, idempotencyKey: $k) { device { id } } }',
    { c: code['userCode'], k: randomUUID() },
    owner.token,
  );
  expect(approved.errors).toBeUndefined();
  expect(await run.exited).toBe(0);
  return approved.data.approveDeviceAuthorization.device.id as string;
}

describe('Python sidecar with tokens from the C# broker', () => {
  let broker: ReturnType<typeof tool>;
  let sidecar: ReturnType<typeof lines>;
  let stderr = '';
  let workspaceId: string;
  let roomId: string;
  let deviceId: string;
  const ask = async (cmd: Line): Promise<Line> => {
    sidecar.child.stdin!.write(JSON.stringify(cmd) + '\n');
    return sidecar.next();
  };

  beforeAll(async () => {
    const started = Date.now();
    deviceId = await enrol();
    broker = tool(['broker', issuer, storeDir, socketPath, realpathSync(PYTHON)]);
    expect(await broker.next()).toMatchObject({ listening: socketPath });
    const ws = await p.gql(
      'mutation W($k: ID!) { createWorkspace(input: { name: "sidecar notes" }, idempotencyKey: $k) { workspace { id } } }',
      { k: randomUUID() },
      owner.token,
    );
    workspaceId = ws.data.createWorkspace.workspace.id as string;
    const room = await p.gql(
      'mutation R($k: ID!) { createRoom(input: { name: "sidecar" }, idempotencyKey: $k) { room { id } } }',
      { k: randomUUID() },
      owner.token,
    );
    roomId = room.data.createRoom.room.id as string;
    mkdirSync(sidecarHome, { mode: 0o700 });
    const child = spawn(PYTHON, [SIDECAR, `${proxy.url}/graphql`], {
      cwd: sidecarHome,
      env: {
        PATH: process.env['PATH'] ?? '/usr/bin:/bin',
        HOME: sidecarHome,
        TMPDIR: sidecarHome,
        ...PYTHON_SDK_ENV,
        AGENTGRAPH_BROKER_SOCKET: socketPath,
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    children.push(child);
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    sidecar = lines(child, () => stderr);
    console.log(JSON.stringify({ setupMs: Date.now() - started }));
  }, 120_000);
  afterAll(async () => {
    if (sidecar) {
      sidecar.child.stdin!.end();
      expect(await sidecar.exited).toBe(0);
    }
    if (broker) {
      broker.child.stdin!.end();
      expect(await broker.exited).toBe(0);
    }
  });

  it('writes memory records and posts messages through the gateway as the host’s user', async () => {
    const before = proxy.stats().requests;
    const ids = [randomUUID(), randomUUID(), randomUUID()];
    for (const [i, id] of ids.entries()) {
      expect(
        await ask({ do: 'put', workspaceId, id, content: `observation ${i}: the build is green` }),
      ).toEqual({ ok: true, id, version: 1, author: owner.userId });
    }
    const posted: Line[] = [];
    for (const i of [1, 2, 3])
      posted.push(await ask({ do: 'post', roomId, body: `status ${i}: tests pass` }));
    expect(posted.map((m) => [m['ok'], m['seq'], m['author']])).toEqual([
      [true, 1, owner.userId],
      [true, 2, owner.userId],
      [true, 3, owner.userId],
    ]);
    expect(proxy.stats().requests - before).toBe(6);
    // One broker request served all six calls; the broker served the python3 process (same uid, allowed exe).
    expect(await ask({ do: 'stats' })).toEqual({ brokerRequests: 1 });
    const decisions = broker.all.filter((l) => l['decision']).map((l) => l['decision']);
    expect(decisions).toEqual([
      expect.objectContaining({ pid: sidecar.child.pid, allowed: true, executable: realpathSync(PYTHON) }),
    ]);

    // Read back by the owner: the records and the messages are there.
    const read = await p.gql(
      'query M($id: ID!, $r: ID!) { memoryRecord(id: $id) { content version workspace { id } } room(id: $r) { messages(first: 10) { edges { node { body seq } } } } }',
      { id: ids[2], r: roomId },
      owner.token,
    );
    expect(read.errors).toBeUndefined();
    expect(read.data.memoryRecord).toEqual({
      content: 'observation 2: the build is green',
      version: 1,
      workspace: { id: workspaceId },
    });
    expect(read.data.room.messages.edges.map((e: Line) => e['node'])).toEqual([
      { body: 'status 1: tests pass', seq: 1 },
      { body: 'status 2: tests pass', seq: 2 },
      { body: 'status 3: tests pass', seq: 3 },
    ]);
  }, 60_000);

  it('refuses a record or message holding a secret or an SSN before any request leaves the process', async () => {
    const before = proxy.stats();
    const cases: Array<[Line, string, string]> = [
      [
        { do: 'put', workspaceId, id: randomUUID(), content: 'patient SSN 078-05-1120' },
        'input.content',
        'ssn',
      ],
      [
        { do: 'put', workspaceId, id: randomUUID(), content: 'key AKIAIOSFODNN7EXAMPLE for s3' },
        'input.content',
        'api-key',
      ],
      [
        { do: 'put', workspaceId, id: randomUUID(), content: '-----BEGIN RSA PRIVATE KEY-----\nMIIE' },
        'input.content',
        'pem-private-key',
      ],
      [{ do: 'post', roomId, body: 'her SSN is 219-09-9999' }, 'input.body', 'ssn'],
      [{ do: 'post', roomId, body: 'use postgres://svc:s3cret@db/app' }, 'input.body', 'url-password'],
    ];
    for (const [cmd, path, reason] of cases) {
      expect(await ask(cmd)).toEqual({ refused: 'PRIVACY_REFUSED', refusals: [[path, reason]], attempts: 0 });
    }
    // Not one request reached the proxy in front of the gateway.
    expect(proxy.stats().requests).toBe(before.requests);
    expect(proxy.stats().forwarded).toBe(before.forwarded);
    const absent = await p.gql(
      'query M($id: ID!) { memoryRecord(id: $id) { id } }',
      { id: cases[0]![0]['id'] },
      owner.token,
    );
    expect(absent.data).toEqual({ memoryRecord: null });
  }, 30_000);

  it('cannot use its token at identity’s token endpoint or its GraphQL mutations', async () => {
    expect(await ask({ do: 'exchange', issuer })).toMatchObject({
      status: 400,
      error: 'invalid_grant',
      issued: false,
    });
    // identity's GraphQL, straight at the subgraph and through the gateway: a device-management mutation.
    const mutation = {
      query:
        'mutation N($id: ID!, $k: ID!) { renameDevice(id: $id, name: "taken over", idempotencyKey: $k) { device { id name } } }',
      variables: { id: deviceId, k: randomUUID() },
    };
    for (const url of [`${p.subgraphs.identity}/graphql`, `${p.gatewayUrl}/graphql`]) {
      const r = await ask({ do: 'http', url, body: mutation });
      expect(r['body']?.['data']?.['renameDevice'] ?? null).toBeNull();
      expect(r['body']['errors'][0]['extensions']['code']).toBe('FORBIDDEN');
      expect(r['body']['errors'][0]['message']).toContain('token exchange');
    }
    // The same mutation with the owner's own token goes through: the refusal is about the exchanged token.
    const own = await p.gql(mutation.query, { id: deviceId, k: randomUUID() }, owner.token);
    expect(own.errors).toBeUndefined();
    expect(own.data.renameDevice.device).toEqual({ id: deviceId, name: 'taken over' });
  }, 30_000);

  it('is refused by another audience: PyJWT’s check and a resource server of another audience', async () => {
    expect(await ask({ do: 'audience', issuer, audience: p.platform.config.tokenAudience })).toEqual({
      valid: true,
    });
    expect(await ask({ do: 'audience', issuer, audience: 'urn:another:service' })).toEqual({
      valid: false,
      error: 'InvalidAudienceError',
    });
    // A resource server on loopback that verifies tokens the way every service does, for one audience each.
    const verifiers = {
      '/ours': createTokenVerifier({
        issuer,
        audience: p.platform.config.tokenAudience,
        keys: `${issuer}/.well-known/jwks.json`,
      }),
      '/other': createTokenVerifier({
        issuer,
        audience: 'urn:another:service',
        keys: `${issuer}/.well-known/jwks.json`,
      }),
    } as const;
    const server: Server = createServer((req, res) => {
      const verify = verifiers[req.url as keyof typeof verifiers];
      verify(req.headers.authorization).then(
        (auth) => res.writeHead(200).end(JSON.stringify({ sub: auth?.principalId, actor: auth?.actor })),
        (err: unknown) =>
          res.writeHead(401).end(JSON.stringify({ code: err instanceof AppError ? err.code : 'ERROR' })),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      expect(await ask({ do: 'http', url: `${base}/ours`, body: {} })).toEqual({
        status: 200,
        body: { sub: owner.userId, actor: 'agentgraph-desktop' },
      });
      expect(await ask({ do: 'http', url: `${base}/other`, body: {} })).toEqual({
        status: 401,
        body: { code: 'UNAUTHENTICATED' },
      });
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }, 30_000);

  it('kept the token out of its logs and off its disk', async () => {
    const events = stderr
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Line);
    expect(events.filter((e) => e['event'] === 'broker-token').map((e) => e['outcome'])).toEqual(['issued']);
    expect(events.filter((e) => e['event'] === 'call').length).toBeGreaterThanOrEqual(6);
    expect(stderr).not.toMatch(JWT_SHAPE);
    expect(readdirSync(sidecarHome)).toEqual([]);
  });
});

/**
 * The desktop host (sdk-templates/csharp/src/AgentGraph.Host) end to end against the real platform, driven
 * through its console tool (sdk-templates/csharp/tools/AgentGraph.Host.E2eTool, one JSON line per event):
 * - the device flow (RFC 8628, 1 s interval): the tool shows the user code, the owner looks it up and approves it
 *   through identity's GraphQL (`deviceAuthorization`, `approveDeviceAuthorization`), the tool stores key, device id
 *   and tokens in a 0600 file in a 0700 directory;
 * - signed intent reports: the device's C# ES256 reports walk an intent LOCALLY_APPROVED → EXECUTING → COMPLETED
 *   through the generated SDK's ReportIntentStateAsync;
 * - intents over the device stream: the host's SubscriptionClient (deviceIntents, resumed after a seq) receives an
 *   intent the owner created, IntentVerifier checks it against coordination's intent JWKS (aud = device id, typ,
 *   times, SQLite replay cache), the host walks it DELIVERED → COMPLETED with signed reports, and refuses the same JWS
 *   again, a tampered copy, a copy signed by another key, and (restarted) the server's redelivery of it;
 * - the token broker on a Unix socket: this Node process (an allowed executable, same uid) gets an RFC 8693 token
 *   (act.sub, ≤ 5 min, no refresh token) that the gateway accepts and that no other audience accepts; a request for
 *   another audience is refused by identity; a client running `dotnet` (not allowed) is refused, and a client of
 *   another user (setpriv to nobody) cannot reach the socket, nor pass the SO_PEERCRED check when the modes are opened.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRemoteJWKSet, decodeJwt, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestPlatform, type TestPlatform, type TestUser } from '../src/platform.js';
import { buildDotnetProject, DOTNET_ENV } from '../src/dotnet-build.js';

const PROJECT = fileURLToPath(
  new URL('../../sdk-templates/csharp/tools/AgentGraph.Host.E2eTool/', import.meta.url),
);
const DLL = join(PROJECT, 'bin/Release/net10.0/AgentGraph.Host.E2eTool.dll');

let p: TestPlatform;
let owner: TestUser;
let issuer: string;
const dir = mkdtempSync(join(tmpdir(), 'csharp-host-'));
const storeDir = join(dir, 'data', 'agentgraph');
const socketPath = join(dir, 'run', 'broker.sock');
const children: ChildProcess[] = [];

beforeAll(async () => {
  await buildDotnetProject(PROJECT);
  p = await startTestPlatform({ DEVICE_POLL_INTERVAL_SECONDS: '1' });
  owner = await p.tokenFor({ tenant: 'csharp-host' });
  issuer = p.platform.config.tokenIssuer;
}, 300_000);
afterAll(async () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  if (p?.errorLogs.length) console.error(p.errorLogs.join('\n'));
  await p?.close();
  rmSync(dir, { recursive: true, force: true });
});

type Line = Record<string, any>;

/** Runs the tool; its stdout as JSON lines, each line also handed to `onLine` as it arrives. */
function tool(args: string[], onLine: (l: Line) => void = () => undefined) {
  const child = spawn('dotnet', [DLL, ...args], { env: DOTNET_ENV, stdio: ['pipe', 'pipe', 'inherit'] });
  children.push(child);
  const lines: Line[] = [];
  let buffer = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    buffer += chunk.toString('utf8');
    const parts = buffer.split('\n');
    buffer = parts.pop()!;
    for (const part of parts) {
      const l = JSON.parse(part) as Line;
      lines.push(l);
      onLine(l);
    }
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, lines, exited };
}

/** One request line to the broker socket from this Node process; the one answer line. */
function ask(request: object): Promise<Line> {
  return new Promise((resolve, reject) => {
    const socket = createConnection(socketPath);
    let text = '';
    socket.on('error', reject);
    socket.on('data', (d) => (text += d.toString('utf8')));
    socket.on('end', () => {
      try {
        resolve(JSON.parse(text) as Line);
      } catch (e) {
        reject(e as Error);
      }
    });
    socket.write(JSON.stringify(request) + '\n');
  });
}

describe('C# desktop host against the platform', () => {
  let deviceId: string;

  it('enrols by the device flow: user code shown, approved through GraphQL, credentials stored 0600', async () => {
    let shown!: (l: Line) => void;
    const codes = new Promise<Line>((resolve) => (shown = resolve));
    const run = tool(['enrol', issuer, storeDir], (l) => {
      if (l['userCode']) shown(l);
    });
    const code = await codes;
    expect(code['verificationUriComplete']).toBe(`${issuer}/device?user_code=${code['userCode']}`);
    expect(code['interval']).toBe(1);

    // What the approving member sees: the name and the key the C# host generated (RFC 7638 thumbprint).
    const view = await p.gql(
      'query V($c: String!) { deviceAuthorization(userCode: $c) { userCode clientId deviceName platform scopes keyThumbprint } }',
      { c: code['userCode'] },
      owner.token,
    );
    expect(view.errors).toBeUndefined();
    expect(view.data.deviceAuthorization).toEqual({
      userCode: code['userCode'],
      clientId: 'agentgraph-desktop',
      deviceName: 'C# host e2e',
      platform: 'linux',
      scopes: ['openid', 'offline_access', 'api:read', 'api:write'],
      keyThumbprint: code['thumbprint'],
    });
    // Poll at least once while pending (the tool reports each answer), then approve.
    await expect.poll(() => run.lines.some((l) => l['poll']), { timeout: 10_000, interval: 20 }).toBe(true);
    const approved = await p.gql(
      'mutation A($c: String!, $k: ID!) { approveDeviceAuthorization(userCode: $c, idempotencyKey: $k) { device { id status keyThumbprint } } }',
      { c: code['userCode'], k: randomUUID() },
      owner.token,
    );
    expect(approved.errors).toBeUndefined();
    deviceId = approved.data.approveDeviceAuthorization.device.id as string;
    expect(approved.data.approveDeviceAuthorization.device).toMatchObject({
      status: 'ENROLLED',
      keyThumbprint: code['thumbprint'],
    });

    expect(await run.exited).toBe(0);
    const polls = run.lines.filter((l) => l['poll']).map((l) => l['poll'] as string);
    expect(polls.at(-1)).toBe('tokens');
    expect(polls.slice(0, -1).every((a) => a === 'authorization_pending')).toBe(true);
    expect(run.lines.at(-1)).toEqual({ enrolled: deviceId, hasRefreshToken: true });

    const file = join(storeDir, 'credentials.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(storeDir).mode & 0o777).toBe(0o700);
    const stored = JSON.parse(readFileSync(file, 'utf8')) as {
      version: number;
      credentials: { deviceId: string; deviceKey: Record<string, string>; tokens: Record<string, string> };
    };
    expect(stored.version).toBe(1);
    expect(stored.credentials.deviceId).toBe(deviceId);
    expect(Object.keys(stored.credentials.deviceKey).sort()).toEqual(['d', 'x', 'y']);
    expect(decodeJwt(stored.credentials.tokens['accessToken']!)).toMatchObject({
      did: deviceId,
      tid: owner.tenantId,
      sub: owner.userId,
      client_id: 'agentgraph-desktop',
    });
    expect(stored.credentials.tokens['refreshToken']).toBeTruthy();
  }, 60_000);

  it('walks an intent LOCALLY_APPROVED → EXECUTING → COMPLETED with reports signed by the C# device key', async () => {
    const gateway = `${p.gatewayUrl}/graphql`;
    const enable = tool(['report', issuer, gateway, storeDir, 'enable']);
    expect(await enable.exited).toBe(0);
    const created = await p.gql(
      'mutation C($i: CreateIntentInput!, $k: ID!) { createIntent(input: $i, idempotencyKey: $k) { intent { id state } } }',
      {
        i: { deviceId, action: 'open-app', params: '{"app":"notes"}', expiresInSeconds: 600 },
        k: randomUUID(),
      },
      owner.token,
    );
    expect(created.errors).toBeUndefined();
    const intentId = created.data.createIntent.intent.id as string;
    const intentIssuer = new URL(p.subgraphs.coordination).origin;
    const states = ['DELIVERED', 'LOCALLY_APPROVED', 'EXECUTING', 'COMPLETED'];
    const run = tool(['report', issuer, gateway, storeDir, intentId, intentIssuer, ...states]);
    expect(await run.exited).toBe(0);
    expect(run.lines).toEqual(states.map((s) => ({ reported: s, state: s })));
    const read = await p.gql(
      'query I($id: ID!) { intent(id: $id) { state } }',
      { id: intentId },
      owner.token,
    );
    expect(read.data?.intent).toEqual({ state: 'COMPLETED' });
  }, 60_000);

  it('receives an intent over the device stream, verifies it, walks it with signed reports; refuses replays and forgeries', async () => {
    const gateway = `${p.gatewayUrl}/graphql`;
    const intentIssuer = new URL(p.subgraphs.coordination).origin;
    // The previous test's intent is seq 1: the host resumes after it, so the new intent reaches it live or, if the
    // stream opens after the creation, from the backlog (either way over the stream, never twice).
    const run = tool(['intents', issuer, gateway, storeDir, intentIssuer, '1', '1']);
    const created = await p.gql(
      'mutation C($i: CreateIntentInput!, $k: ID!) { createIntent(input: $i, idempotencyKey: $k) { intent { id seq } } }',
      {
        i: { deviceId, action: 'open-file', params: '{"path":"notes.md"}', expiresInSeconds: 600 },
        k: randomUUID(),
      },
      owner.token,
    );
    expect(created.errors).toBeUndefined();
    const intent = created.data.createIntent.intent as { id: string; seq: number };
    expect(intent.seq).toBe(2);
    expect(await run.exited).toBe(0);
    expect(run.lines).toEqual([
      { received: 2, intent: intent.id, action: 'open-file', verified: true, refused: null },
      ...['DELIVERED', 'LOCALLY_APPROVED', 'EXECUTING', 'COMPLETED'].map((s) => ({ reported: s, state: s })),
      { attempt: 'replayed', refused: 'REPLAYED' },
      { attempt: 'tampered', refused: 'FORGED_SIGNATURE' },
      { attempt: 'otherKey', refused: 'FORGED_SIGNATURE' },
    ]);
    const history = await p.gql(
      'query I($id: ID!) { intent(id: $id) { state history { edges { node { state actor } } } } }',
      { id: intent.id },
      owner.token,
    );
    expect(history.errors).toBeUndefined();
    expect(history.data.intent.state).toBe('COMPLETED');
    expect(
      (history.data.intent.history.edges as { node: { state: string; actor: string } }[]).map((e) => e.node),
    ).toEqual([
      { state: 'QUEUED', actor: owner.userId },
      ...['DELIVERED', 'LOCALLY_APPROVED', 'EXECUTING', 'COMPLETED'].map((state) => ({
        state,
        actor: `device:${deviceId}`,
      })),
    ]);

    // A restarted host that resumes from before the intent gets it again from the server: its SQLite replay cache
    // (in the store directory) refuses it, and nothing is reported.
    const again = tool(['intents', issuer, gateway, storeDir, intentIssuer, '1', '1']);
    expect(await again.exited).toBe(0);
    expect(again.lines).toEqual([
      { received: 2, intent: intent.id, action: 'open-file', verified: false, refused: 'REPLAYED' },
    ]);
  }, 60_000);

  describe('the token broker', () => {
    let broker: ReturnType<typeof tool>;
    beforeAll(async () => {
      const node = realpathSync(process.execPath);
      let ready!: () => void;
      const listening = new Promise<void>((resolve) => (ready = resolve));
      broker = tool(['broker', issuer, storeDir, socketPath, node], (l) => {
        if (l['listening']) ready();
      });
      await listening;
    }, 30_000);
    afterAll(async () => {
      broker?.child.stdin!.end();
      expect(await broker.exited).toBe(0);
    });

    it('serves this Node process (same uid, allowed executable) a short-lived exchanged token only', async () => {
      expect(statSync(socketPath).mode & 0o777).toBe(0o600);
      expect(statSync(join(dir, 'run')).mode & 0o777).toBe(0o700);
      const answer = await ask({ scope: 'api:read' });
      expect(Object.keys(answer).sort()).toEqual(['access_token', 'expires_in']);
      const claims = decodeJwt(answer['access_token'] as string);
      expect(claims).toMatchObject({
        sub: owner.userId,
        tid: owner.tenantId,
        did: deviceId,
        scope: 'api:read',
        client_id: 'agentgraph-desktop',
        act: { sub: 'agentgraph-desktop' },
      });
      expect(claims.exp! - claims.iat!).toBeLessThanOrEqual(300);
      expect(answer['expires_in']).toBe(claims.exp! - claims.iat!);
      await expect
        .poll(() => broker.lines.find((l) => l['decision'])?.['decision'], { timeout: 5000, interval: 10 })
        .toMatchObject({ pid: process.pid, uid: process.getuid!(), allowed: true });

      // The gateway accepts it for reads; identity's keys verify it for our audience and for no other.
      const me = await p.gql('query { viewer { user { id } } }', {}, answer['access_token'] as string);
      expect(me.errors).toBeUndefined();
      expect(me.data.viewer.user.id).toBe(owner.userId);
      const jwks = createRemoteJWKSet(new URL(`${issuer}/.well-known/jwks.json`));
      const token = answer['access_token'] as string;
      await expect(
        jwtVerify(token, jwks, { issuer, audience: p.platform.config.tokenAudience }),
      ).resolves.toBeTruthy();
      await expect(jwtVerify(token, jwks, { issuer, audience: 'urn:another:service' })).rejects.toMatchObject(
        {
          code: 'ERR_JWT_CLAIM_VALIDATION_FAILED',
          claim: 'aud',
        },
      );
    }, 30_000);

    it('passes identity’s refusal of another audience and of a broader scope', async () => {
      expect(await ask({ audience: 'urn:another:service' })).toMatchObject({ error: 'invalid_target' });
      expect(await ask({ scope: 'api:read api:admin' })).toMatchObject({ error: 'invalid_scope' });
      expect(await ask({ refresh_token: true })).toMatchObject({ error: 'invalid_request' });
    }, 30_000);

    it('refuses a client whose executable is not allowed (dotnet)', async () => {
      const run = tool(['ask', socketPath, '{"scope":"api:read"}']);
      expect(await run.exited).toBe(0);
      const answer = run.lines[0]!['answer'] as Line;
      expect(answer['error']).toBe('access_denied');
      expect(answer['error_description']).toMatch(/^refused: \/.*dotnet is not an allowed executable$/);
      expect(answer['access_token']).toBeUndefined();
      await expect
        .poll(() => broker.lines.filter((l) => l['decision']).at(-1)!['decision'], {
          timeout: 5000,
          interval: 10,
        })
        .toMatchObject({ pid: run.child.pid, allowed: false });
    }, 30_000);

    it('is unreachable for another user (0700 directory); opened up, SO_PEERCRED still refuses that uid', async () => {
      const asNobody = (script: string) =>
        execFileSync(
          'setpriv',
          ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, '-e', script],
          { encoding: 'utf8' },
        ).trim();
      const request = `const s = require('net').createConnection(${JSON.stringify(socketPath)});
        let t = ''; s.on('data', (d) => (t += d)); s.on('end', () => { console.log(t); process.exit(0); });
        s.on('error', (e) => { console.log(JSON.stringify({ connectError: e.code })); process.exit(0); });
        s.write('{"scope":"api:read"}\\n');`;
      // The test's own temporary directory is 0700 too: open it, so the broker's directory is the only barrier.
      chmodSync(dir, 0o711);
      // As set up: the 0700 directory keeps another user (nobody, running the allowed node) from the socket.
      expect(JSON.parse(asNobody(request))).toEqual({ connectError: 'EACCES' });

      // With the file modes opened (as a misconfiguration would), the peer check still refuses the other uid.
      chmodSync(join(dir, 'run'), 0o711);
      chmodSync(socketPath, 0o666);
      try {
        const answer = JSON.parse(asNobody(request)) as Line;
        expect(answer).toEqual({
          error: 'access_denied',
          error_description: `refused: the peer runs as uid 65534, not as this user (${process.getuid!()})`,
        });
      } finally {
        chmodSync(join(dir, 'run'), 0o700);
        chmodSync(socketPath, 0o600);
        chmodSync(dir, 0o700);
      }
      // The broker logged its decision before answering; its stdout is read once the event loop runs again.
      await expect
        .poll(() => broker.lines.filter((l) => l['decision']).at(-1)!['decision'], {
          timeout: 5000,
          interval: 10,
        })
        .toMatchObject({ uid: 65534, allowed: false });
    }, 30_000);
  });
});

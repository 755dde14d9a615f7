/**
 * Each SDK's subscription client, used exactly as its README shows (the README quotes these very files:
 * sdks/typescript/examples/subscribe.ts, sdks/python/samples/room_subscriber.py, sdks/csharp/samples/RoomSubscriber),
 * against the real platform (gateway /graphql/stream → coordination, PGlite or PostgreSQL) through the fault proxy.
 * The client is built with a token provider and nothing else: the subscription takes the client's provider (before
 * issue 20 item 4 it sent no token and the stream was refused UNAUTHENTICATED). Every stream is cut right after its
 * first event, so each message arrives over a new connection, and the token provider must be asked again on every
 * reconnect. The last message is posted while the subscriber is live.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { followRoom } from '../../sdks/typescript/examples/subscribe.js';
import { AgentGraph } from '../../sdks/typescript/src/index.js';
import { startFaultProxy, type FaultProxy } from '../fault-proxy/src/index.js';
import { buildDotnetProject, DOTNET_ENV } from '../src/dotnet-build.js';
import { startTestPlatform, type TestPlatform, type TestUser } from '../src/platform.js';
import { PYTHON, PYTHON_SDK_ENV } from './fixtures/python-sdk.js';

const PYTHON_SAMPLE = fileURLToPath(new URL('../../sdks/python/samples/room_subscriber.py', import.meta.url));
const PYTHON_ENV = { ...process.env, ...PYTHON_SDK_ENV };
const CSHARP_PROJECT = fileURLToPath(new URL('../../sdks/csharp/samples/RoomSubscriber/', import.meta.url));
const CSHARP_DLL = join(CSHARP_PROJECT, 'bin/Release/net10.0/RoomSubscriber.dll');
const COUNT = 3;

let p: TestPlatform;
let proxy: FaultProxy;
let user: TestUser;
const dir = mkdtempSync(join(tmpdir(), 'sdk-subscriptions-'));
const tokenFile = join(dir, 'token');
const children: ChildProcess[] = [];

beforeAll(async () => {
  await buildDotnetProject(CSHARP_PROJECT);
  p = await startTestPlatform();
  user = await p.tokenFor({ tenant: 'sdk-subscriptions-auth' });
  writeFileSync(tokenFile, user.token, { mode: 0o600 });
  // Queries and mutations on /graphql pass; every stream is cut after its first event.
  proxy = await startFaultProxy({
    upstream: p.gatewayUrl,
    seed: 20,
    rules: [{ name: 'queries', match: { path: '/graphql' }, action: { type: 'pass' } }],
  });
  proxy.setFaults({ cutStream: { probability: 1, afterEvents: 1 } });
}, 300_000);
afterAll(async () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  await proxy?.close();
  if (p?.errorLogs.length) console.error(p.errorLogs.join('\n'));
  await p?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function createRoom(): Promise<string> {
  const r = await p.gql(
    'mutation R($n: String!, $k: ID!) { createRoom(input: { name: $n }, idempotencyKey: $k) { room { id } } }',
    { n: 'sdk-subscriptions', k: randomUUID() },
    user.token,
  );
  expect(r.errors).toBeUndefined();
  return r.data.createRoom.room.id as string;
}

async function post(room: string, body: string): Promise<number> {
  const r = await p.gql(
    'mutation P($r: ID!, $b: String!, $k: ID!) { postMessage(roomId: $r, input: { body: $b }, idempotencyKey: $k) { message { seq } } }',
    { r: room, b: body, k: randomUUID() },
    user.token,
  );
  expect(r.errors).toBeUndefined();
  return r.data.postMessage.message.seq as number;
}

interface Line {
  seq: number;
  body: string;
  tokenReads: number;
}

/** Runs a subscriber process; resolves with its JSON lines when it exits 0 (each line also goes to `onLine`). */
function runSubscriber(command: string, args: string[], env: NodeJS.ProcessEnv, onLine: (l: Line) => void) {
  return new Promise<Line[]>((resolve, reject) => {
    const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    const lines: Line[] = [];
    let out = '';
    let err = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      const parts = out.split('\n');
      out = parts.pop()!;
      for (const part of parts.filter((x) => x.trim())) {
        const line = JSON.parse(part) as Line;
        lines.push(line);
        onLine(line);
      }
    });
    child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve(lines) : reject(new Error(`${command} exited ${code}: ${err.slice(-4000)}`)),
    );
  });
}

/** A room with COUNT - 1 messages; the last one is posted once the subscriber has delivered the others. */
async function scenario(follow: (room: string, onLine: (l: Line) => void) => Promise<Line[]>) {
  const room = await createRoom();
  const bodies = new Map<number, string>();
  for (let n = 1; n < COUNT; n++) {
    const body = `message ${n} ${randomUUID()}`;
    bodies.set(await post(room, body), body);
  }
  const cutBefore = proxy.stats().streamsCut;
  let posting: Promise<void> | undefined;
  const lines = await follow(room, (l) => {
    if (l.seq === COUNT - 1) {
      const body = `live ${randomUUID()}`;
      posting = post(room, body).then((seq) => void bodies.set(seq, body));
    }
  });
  await posting;
  expect(lines.map((l) => l.seq)).toEqual([1, 2, 3]);
  expect(lines.map((l) => l.body)).toEqual([1, 2, 3].map((n) => bodies.get(n)));
  // One connection per message (each cut after its event), and the token provider was asked on each of them.
  expect(proxy.stats().streamsCut - cutBefore).toBeGreaterThanOrEqual(COUNT - 1);
  for (const l of lines) expect(l.tokenReads).toBeGreaterThanOrEqual(l.seq);
  return lines;
}

describe('SDK subscriptions with only the client token provider, reconnecting after every event', () => {
  it('TypeScript: createSubscriptions(sdk.client), as the README example', async () => {
    let reads = 0;
    const sdk = new AgentGraph({
      baseUrl: `${proxy.url}/graphql`,
      tokenProvider: {
        getToken: async () => {
          reads += 1;
          return user.token;
        },
        refresh: async () => user.token,
      },
      privacyPolicy: { allow: ['PUBLIC', 'INTERNAL', 'PERSONAL'] },
      retry: { baseDelayMs: 20 },
    });
    await scenario(async (room, onLine) => {
      const lines: Line[] = [];
      const bodies = await followRoom(sdk, room, COUNT, (seq, body) => {
        const line = { seq, body, tokenReads: reads }; // how often the token was asked for so far
        lines.push(line);
        onLine(line);
      });
      expect(bodies).toEqual(lines.map((l) => l.body));
      return lines;
    });
  }, 120_000);

  it('Python: api.client.subscriptions(), as samples/room_subscriber.py', async () => {
    await scenario((room, onLine) =>
      runSubscriber(
        PYTHON,
        [PYTHON_SAMPLE, `${proxy.url}/graphql`, room, String(COUNT), tokenFile],
        PYTHON_ENV,
        onLine,
      ),
    );
  }, 120_000);

  it('C#: sdk.OnRoomMessageAsync (typed, resumed by afterSeq), as samples/RoomSubscriber', async () => {
    await scenario((room, onLine) =>
      runSubscriber(
        'dotnet',
        [CSHARP_DLL, `${proxy.url}/graphql`, room, String(COUNT), tokenFile],
        DOTNET_ENV,
        onLine,
      ),
    );
  }, 120_000);
});

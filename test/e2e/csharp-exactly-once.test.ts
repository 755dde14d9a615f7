/**
 * Issue 9's exactly-once run, end to end, for the C# SDK: the generated SDK with its durable outbox
 * (sdks/csharp/samples/OutboxPoster, Microsoft.Data.Sqlite) posts 2,000 messages to 10 rooms through the
 * fault-injecting proxy (the TypeScript run's mix: 10 % of requests dropped, 10 % of responses dropped after the
 * server committed, 5 % answered 503 with Retry-After) into the real platform; the client process is killed (SIGKILL)
 * mid-run and started again on the same outbox file. The server holds each message exactly once, and every room's
 * messages are in enqueue order. The .NET projects are built once (Release) for this file, then the dll is run.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { withTenant } from '@agentgraph/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFaultProxy, type FaultProxy } from '../fault-proxy/src/index.js';
import { startTestPlatform, type TestPlatform, type TestUser } from '../src/platform.js';

const ROOMS = 10;
const PER_ROOM = 200;
const TOTAL = ROOMS * PER_ROOM;
const PROJECT = fileURLToPath(new URL('../../sdks/csharp/samples/OutboxPoster/', import.meta.url));
const DLL = join(PROJECT, 'bin/Release/net10.0/OutboxPoster.dll');
const DOTNET_ENV = { ...process.env, DOTNET_CLI_TELEMETRY_OPTOUT: '1', DOTNET_NOLOGO: '1' };

let p: TestPlatform;
let user: TestUser;
let proxy: FaultProxy;
const dir = mkdtempSync(join(tmpdir(), 'csharp-exactly-once-'));

beforeAll(async () => {
  execFileSync(
    'dotnet',
    ['build', PROJECT, '-c', 'Release', '--nologo', '-v', 'q', '-m:1', '--disable-build-servers'],
    {
      env: DOTNET_ENV,
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  p = await startTestPlatform();
  user = await p.tokenFor({ tenant: 'csharp-exactly-once' });
  proxy = await startFaultProxy({
    upstream: p.gatewayUrl,
    seed: 9,
    faults: { dropRequest: 0.1, dropResponse: 0.1, unavailable: 0.05, retryAfterSeconds: 1 },
  });
}, 300_000);
afterAll(async () => {
  await proxy?.close();
  await p?.close();
  rmSync(dir, { recursive: true, force: true });
});

interface Run {
  child: ChildProcess;
  sent: () => number;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; last: string }>;
}

function poster(rooms: string[], mode: 'enqueue' | 'resume'): Run {
  const child = spawn(
    'dotnet',
    [DLL, `${proxy.url}/graphql`, join(dir, 'outbox.db'), rooms.join(','), String(PER_ROOM), mode],
    { stdio: ['pipe', 'pipe', 'inherit'], env: DOTNET_ENV },
  );
  child.stdin!.end(user.token);
  let sent = 0;
  let last = '';
  let buffer = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    buffer += chunk.toString('utf8');
    const lines = buffer.split('\n');
    buffer = lines.pop()!;
    for (const line of lines) {
      last = line;
      const m = JSON.parse(line) as { sent?: number };
      if (m.sent) sent = m.sent;
    }
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; last: string }>(
    (resolve) => child.on('exit', (code, signal) => resolve({ code, signal, last })),
  );
  return { child, sent: () => sent, exited };
}

describe('C# SDK: exactly once over a bad network, across a client crash', () => {
  it(`delivers ${TOTAL} messages exactly once, in order per room`, async () => {
    const rooms: string[] = [];
    for (let r = 0; r < ROOMS; r++) {
      const created = await p.gql(
        'mutation R($n: String!, $k: ID!) { createRoom(input: { name: $n }, idempotencyKey: $k) { room { id } } }',
        { n: `room ${r}`, k: randomUUID() },
        user.token,
      );
      rooms.push(created.data.createRoom.room.id as string);
    }

    // First client process: enqueue all, send, and be killed a third of the way through.
    const first = poster(rooms, 'enqueue');
    await expect
      .poll(() => first.sent(), { timeout: 120_000, interval: 50 })
      .toBeGreaterThanOrEqual(TOTAL / 3);
    first.child.kill('SIGKILL');
    const killed = await first.exited;
    expect(killed.signal).toBe('SIGKILL');
    const sentBeforeKill = first.sent();
    expect(sentBeforeKill).toBeLessThan(TOTAL);

    // Second process, same outbox file: entries caught in SENDING go back to QUEUED with their original keys.
    const second = poster(rooms, 'resume');
    const done = await second.exited;
    expect(done.code).toBe(0);
    const summary = JSON.parse(done.last) as {
      done: boolean;
      dead: number;
      counters: Record<string, number>;
    };
    expect(summary).toMatchObject({ done: true, dead: 0 });

    const auth = { tenantId: user.tenantId, principalId: user.userId, role: 'OWNER' as const, scopes: [] };
    const rows = await withTenant(p.platform.db, auth, (tx) =>
      tx.query<{ room_id: string; seq: number; body: string }>(
        'SELECT room_id, seq, body FROM coordination.messages ORDER BY room_id, seq',
      ),
    );
    expect(rows.rows).toHaveLength(TOTAL);
    for (const room of rooms) {
      const bodies = rows.rows.filter((r) => r.room_id === room).map((r) => r.body);
      expect(bodies).toEqual(Array.from({ length: PER_ROOM }, (_, i) => `${room}#${i}`));
    }
    const stats = proxy.stats();
    expect(stats.droppedRequests).toBeGreaterThan(0);
    expect(stats.droppedResponses).toBeGreaterThan(0);
    expect(stats.unavailable).toBeGreaterThan(0);
    console.log(
      JSON.stringify({
        sdk: 'csharp',
        messages: TOTAL,
        sentBeforeKill,
        proxy: stats,
        secondRunCounters: summary.counters,
      }),
    );
  }, 600_000);
});

/**
 * Issue 5's exactly-once run, end to end: the generated TypeScript SDK with its durable outbox, in its own process,
 * posts 2,000 messages to 10 rooms through the fault-injecting proxy (10 % of requests dropped, 10 % of responses
 * dropped after the server committed, 5 % answered 503 with Retry-After) into the real platform; the client process is
 * killed (SIGKILL) mid-run and started again on the same outbox file. The server holds each message exactly once, and
 * every room's messages are in the order they were enqueued.
 */
import { spawn, type ChildProcess } from 'node:child_process';
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
const POSTER = fileURLToPath(new URL('./fixtures/outbox-poster.ts', import.meta.url));

let p: TestPlatform;
let user: TestUser;
let proxy: FaultProxy;
const dir = mkdtempSync(join(tmpdir(), 'sdk-exactly-once-'));

beforeAll(async () => {
  p = await startTestPlatform({
    // 2,000 posts through faults, not a rate-limit test (test/e2e/rate-limits.test.ts is that).
    RATE_LIMIT_POST_PRINCIPAL: 'off',
    RATE_LIMIT_POST_TENANT: 'off',
  });
  user = await p.tokenFor({ tenant: 'exactly-once' });
  proxy = await startFaultProxy({
    upstream: p.gatewayUrl,
    seed: 5,
    faults: { dropRequest: 0.1, dropResponse: 0.1, unavailable: 0.05, retryAfterSeconds: 1 },
  });
});
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
    process.execPath,
    [
      '--import',
      'tsx',
      POSTER,
      `${proxy.url}/graphql`,
      join(dir, 'outbox.db'),
      rooms.join(','),
      String(PER_ROOM),
      mode,
    ],
    { stdio: ['pipe', 'pipe', 'inherit'] },
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

describe('exactly once over a bad network, across a client crash', () => {
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
        messages: TOTAL,
        sentBeforeKill,
        proxy: stats,
        secondRunCounters: summary.counters,
      }),
    );
  }, 600_000);
});

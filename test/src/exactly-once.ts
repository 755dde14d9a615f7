/**
 * The exactly-once run every SDK must pass (docs/architecture.md#sdks): a client process with its durable outbox posts
 * ROOMS × PER_ROOM messages through the seeded fault-injecting proxy (10 % of requests dropped, 10 % of responses
 * dropped after the server committed, 5 % answered 503 with Retry-After) into the real platform; it is killed
 * (SIGKILL) a third of the way through and started again on the same outbox file. The server must hold each message
 * exactly once, every room's messages in enqueue order. The poster program is the SDK's own (TypeScript fixture,
 * C# sample, Python script); they share one command line:
 *   <poster> <graphql url> <outbox file> <room ids, comma-separated> <messages per room> <enqueue|resume>
 * with the access token on stdin, JSON lines `{"sent": n}` on stdout and a last line
 * `{"done": true, "dead": 0, "counters": {...}}`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { withTenant } from '@agentgraph/runtime';
import { expect } from 'vitest';
import { startFaultProxy, type FaultProxy } from '../fault-proxy/src/index.js';
import { startTestPlatform, type TestPlatform, type TestUser } from './platform.js';

export const ROOMS = 10;
export const PER_ROOM = 200;
export const TOTAL = ROOMS * PER_ROOM;

export interface PosterCommand {
  command: string;
  /** Arguments before the shared ones (e.g. `--import tsx fixture.ts`, or the dll). */
  prefix: string[];
  env?: NodeJS.ProcessEnv;
}

export interface ExactlyOnceBed {
  p: TestPlatform;
  user: TestUser;
  proxy: FaultProxy;
  /** Runs the scenario with this poster and checks the server; resolves with what the run reported. */
  run(poster: PosterCommand): Promise<Record<string, unknown>>;
  close(): Promise<void>;
}

interface Run {
  child: ChildProcess;
  sent: () => number;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; last: string }>;
}

export async function startExactlyOnceBed(tenant: string, seed: number): Promise<ExactlyOnceBed> {
  const p = await startTestPlatform({
    // 2,000 posts through faults, not a rate-limit test (test/e2e/emergency-stop.test.ts has that).
    RATE_LIMIT_POST_PRINCIPAL: 'off',
    RATE_LIMIT_POST_TENANT: 'off',
  });
  const user = await p.tokenFor({ tenant });
  const proxy = await startFaultProxy({
    upstream: p.gatewayUrl,
    seed,
    faults: { dropRequest: 0.1, dropResponse: 0.1, unavailable: 0.05, retryAfterSeconds: 1 },
  });
  const dir = mkdtempSync(join(tmpdir(), `exactly-once-${tenant}-`));

  const start = (poster: PosterCommand, rooms: string[], mode: 'enqueue' | 'resume'): Run => {
    const child = spawn(
      poster.command,
      [
        ...poster.prefix,
        `${proxy.url}/graphql`,
        join(dir, 'outbox.db'),
        rooms.join(','),
        String(PER_ROOM),
        mode,
      ],
      { stdio: ['pipe', 'pipe', 'inherit'], env: poster.env ?? process.env },
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
  };

  return {
    p,
    user,
    proxy,
    async run(poster) {
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
      const first = start(poster, rooms, 'enqueue');
      await expect
        .poll(() => first.sent(), { timeout: 120_000, interval: 50 })
        .toBeGreaterThanOrEqual(TOTAL / 3);
      first.child.kill('SIGKILL');
      const killed = await first.exited;
      expect(killed.signal).toBe('SIGKILL');
      const sentBeforeKill = first.sent();
      expect(sentBeforeKill).toBeLessThan(TOTAL);

      // Second process, same outbox file: entries caught in SENDING go back to QUEUED with their original keys.
      const second = start(poster, rooms, 'resume');
      const done = await second.exited;
      expect(done.code).toBe(0);
      const summary = JSON.parse(done.last) as {
        done: boolean;
        dead: number;
        counters: Record<string, number>;
      };
      expect(summary).toMatchObject({ done: true, dead: 0 });

      const auth = { tenantId: user.tenantId, principalId: user.userId, role: 'OWNER' as const, scopes: [] };
      const rows = await withTenant(p.platform.dbs.coordination, auth, (tx) =>
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
      return { messages: TOTAL, sentBeforeKill, proxy: stats, secondRunCounters: summary.counters };
    },
    async close() {
      await proxy.close();
      await p.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

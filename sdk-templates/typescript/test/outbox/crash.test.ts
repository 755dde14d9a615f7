import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach, expect, it } from 'vitest';
import { Outbox } from '../../src/outbox/index.js';
import { SqliteOutboxStore } from '../../src/outbox/index.node.js';

const dir = mkdtempSync(join(tmpdir(), 'outbox-crash-'));
afterEach(() => rmSync(dir, { recursive: true, force: true }));

it('a process killed (SIGKILL) mid-send: on restart the entries are resent with their original keys', async () => {
  const file = join(dir, 'outbox.db');
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', fileURLToPath(new URL('./crash-child.ts', import.meta.url)), file],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const exited = new Promise<NodeJS.Signals | null>((resolve) =>
    child.on('exit', (_code, signal) => resolve(signal)),
  );
  const sending: string[] = [];
  for await (const line of createInterface({ input: child.stdout })) {
    if (line.startsWith('SENDING ')) sending.push(line.slice('SENDING '.length));
    if (sending.length === 2) break;
  }
  child.kill('SIGKILL');
  expect(await exited).toBe('SIGKILL');
  expect(sending).toHaveLength(2);

  // The restarted process: the file opens (the dead process's lock is gone) and both heads are recovered.
  const resent: string[] = [];
  const outbox = await Outbox.open({
    store: SqliteOutboxStore.open(file),
    send: async (entry) => void resent.push(`${entry.room} ${entry.idempotencyKey}`),
  });
  expect(outbox.counters().recovered).toBe(2);
  const before = await outbox.list();
  expect(before.map((e) => [e.room, e.state, e.attempts])).toEqual([
    ['A', 'QUEUED', 1],
    ['A', 'QUEUED', 0],
    ['B', 'QUEUED', 1],
  ]);
  await outbox.drain();
  const keyOf = (room: string, i: number) =>
    `${room} ${before.filter((e) => e.room === room)[i]!.idempotencyKey}`;
  // The two heads go out again with the keys the dead process used, then A's second entry.
  expect(resent.slice(0, 2).sort()).toEqual(sending.sort());
  expect(resent).toEqual([keyOf('A', 0), keyOf('B', 0), keyOf('A', 1)]);
  expect((await outbox.list()).every((e) => e.state === 'SENT')).toBe(true);
  await outbox.close();
});

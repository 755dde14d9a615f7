import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { lockDataDir } from '../src/db/pglite.js';

describe('lockDataDir (one process per embedded data folder)', () => {
  const dirs: string[] = [];
  const fresh = () => {
    const d = mkdtempSync(join(tmpdir(), 'agentgraph-lock-'));
    dirs.push(d);
    return d;
  };
  afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

  it('refuses a folder locked by a live process and names it', () => {
    const dir = fresh();
    writeFileSync(join(dir, 'agentgraph.lock'), String(process.ppid));
    expect(() => lockDataDir(dir)).toThrow(`in use by process ${process.ppid}`);
  });

  it('takes over the lock of a process that is gone, and releases it', () => {
    const dir = fresh();
    writeFileSync(join(dir, 'agentgraph.lock'), '2147483646');
    const unlock = lockDataDir(dir);
    unlock();
    lockDataDir(dir)();
  });
});

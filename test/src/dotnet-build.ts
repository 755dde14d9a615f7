/**
 * Builds a .NET project (Release) for an end-to-end test, one build at a time across test files: vitest runs files
 * in parallel workers, and two `dotnet build`s of projects that share a referenced project (the generated SDK) would
 * write the same obj/ folders at once. The lock is a directory (mkdir is atomic) holding the owner's pid; a lock
 * whose owner is gone is taken over.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const DOTNET_ENV = { ...process.env, DOTNET_CLI_TELEMETRY_OPTOUT: '1', DOTNET_NOLOGO: '1' };
const LOCK = join(tmpdir(), 'agentgraph-dotnet-build.lock');

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function acquire(timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      mkdirSync(LOCK);
      writeFileSync(join(LOCK, 'pid'), String(process.pid));
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      let owner = NaN;
      try {
        owner = Number(readFileSync(join(LOCK, 'pid'), 'utf8'));
      } catch {
        /* being written, or being removed */
      }
      if (Number.isInteger(owner) && !alive(owner)) rmSync(LOCK, { recursive: true, force: true });
      else if (Date.now() > deadline)
        throw new Error(`waited ${timeoutMs} ms for ${LOCK} (another dotnet build)`);
      else await new Promise((r) => setTimeout(r, 250));
    }
  }
}

export async function buildDotnetProject(project: string, timeoutMs = 240_000): Promise<void> {
  await acquire(timeoutMs);
  try {
    execFileSync(
      'dotnet',
      ['build', project, '-c', 'Release', '--nologo', '-v', 'q', '-m:1', '--disable-build-servers'],
      { env: DOTNET_ENV, stdio: ['ignore', 'ignore', 'inherit'] },
    );
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
}

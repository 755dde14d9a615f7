/**
 * Migrated snapshots for in-memory PGlite databases (PGLITE_TEMPLATE_DIR): a new empty PGlite runs initdb (≈2 s) and
 * then every migration; the test suite opens hundreds. The first database for a given set of migrations is migrated
 * as usual and its data folder dumped to `<dir>/<key>.tar`; later ones start from a copy of it. The key hashes the app
 * role and every migration's namespace, version and checksum, so a changed or added migration never meets a stale
 * snapshot. Files are written to a temporary name and renamed, so parallel processes never read half a snapshot.
 * The caller still runs `migrate` on the copy: it finds everything applied and checks the checksums.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readMigrations, type MigrationSet } from './migrate.js';
import { openPglite, type PgliteHandle } from './pglite.js';

/** Snapshots older than this are deleted when a new one is written (a run that still wants one writes it again). */
const STALE_MS = 24 * 3600_000;

export function templateKey(sets: MigrationSet[], appRole: string): string {
  const hash = createHash('sha256').update(`role:${appRole}\n`);
  for (const m of sets.flatMap(readMigrations)) hash.update(`${m.namespace}/${m.version}:${m.checksum}\n`);
  return hash.digest('hex').slice(0, 32);
}

export interface TemplatedPglite {
  handle: PgliteHandle;
  /** Call once migrations ran on a handle that did not come from a snapshot: writes the snapshot. */
  save(): Promise<void>;
}

export async function openFromTemplate(
  dir: string,
  sets: MigrationSet[],
  appRole: string,
): Promise<TemplatedPglite> {
  const file = join(dir, `${templateKey(sets, appRole)}.tar`);
  let template: Uint8Array | undefined;
  try {
    template = readFileSync(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const handle = await openPglite(null, appRole, template);
  return {
    handle,
    async save() {
      if (template) return;
      const tar = await handle.dump();
      mkdirSync(dir, { recursive: true });
      const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
      writeFileSync(tmp, tar);
      renameSync(tmp, file);
      prune(dir, file);
    },
  };
}

function prune(dir: string, keep: string): void {
  const now = Date.now();
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (path === keep) continue;
    try {
      if (now - statSync(path).mtimeMs > STALE_MS) rmSync(path);
    } catch {
      // another process pruned it first
    }
  }
}

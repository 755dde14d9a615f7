#!/usr/bin/env node
/**
 * Builds the web console (vite build web → web/dist) when its sources or the TypeScript SDK changed since the last
 * build; `npm start` runs it first (prestart), so a fresh clone serves the console without a separate step.
 * `--force` builds anyway.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const stamp = join(root, 'web/dist/.built');
const sources = [
  'web/src',
  'web/index.html',
  'web/vite.config.ts',
  'web/public',
  'sdks/typescript/src',
  'sdk-templates/typescript/src',
];

function newest(path) {
  if (!existsSync(path)) return 0;
  const s = statSync(path);
  if (!s.isDirectory()) return s.mtimeMs;
  return Math.max(0, ...readdirSync(path).map((n) => newest(join(path, n))));
}

const force = process.argv.includes('--force');
const fresh = () =>
  (existsSync(stamp) ? statSync(stamp).mtimeMs : 0) > Math.max(...sources.map((s) => newest(join(root, s))));
if (!force && fresh()) process.exit(0);

// One build at a time (parallel test files each run `npm start`): a lock folder, taken over after 2 minutes.
const lock = join(root, 'web/.build-lock');
for (const deadline = Date.now() + 120_000; ;) {
  try {
    mkdirSync(lock);
    break;
  } catch {
    if (Date.now() > deadline) {
      rmSync(lock, { recursive: true, force: true });
      continue;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}
process.on('exit', () => rmSync(lock, { recursive: true, force: true }));
if (!force && fresh()) process.exit(0);

// Build beside the served folder and swap it in, so a running server or a parallel build never sees half a build.
const staging = join(root, `web/.dist-${process.pid}`);
const r = spawnSync(
  process.execPath,
  [join(root, 'node_modules/vite/bin/vite.js'), 'build', 'web', '--logLevel', 'warn', '--outDir', staging],
  { cwd: root, stdio: 'inherit' },
);
if (r.status !== 0) {
  rmSync(staging, { recursive: true, force: true });
  process.exit(r.status ?? 1);
}
writeFileSync(join(staging, '.built'), new Date().toISOString() + '\n');
const old = join(root, `web/.dist-old-${process.pid}`);
if (existsSync(join(root, 'web/dist'))) renameSync(join(root, 'web/dist'), old);
renameSync(staging, join(root, 'web/dist'));
rmSync(old, { recursive: true, force: true });

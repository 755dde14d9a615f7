/**
 * Writes a target's files into its folder: unchanged files are left alone (byte-stable output keeps `git status`
 * clean), and files the target no longer generates are deleted, so the folder is exactly the generator's output and
 * the target's hand-written folders (`Target.handWritten`, e.g. `samples/`), which are never touched.
 */
import { existsSync, rmdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { writeIfChanged } from '../write-if-changed.js';
import type { GeneratedFile } from './target.js';
import { listFiles } from './files.js';

/** Folders in an SDK folder the generator never owns (a package manager's, or build output: .NET, npm's dist). */
export const NOT_OURS: ReadonlySet<string> = new Set(['node_modules', 'bin', 'obj', '__pycache__', 'dist']);

export interface WriteReport {
  written: string[];
  deleted: string[];
  unchanged: number;
}

function removeEmptyDirs(dir: string): void {
  for (const name of readdirSync(dir, { withFileTypes: true })) {
    if (name.isDirectory() && !NOT_OURS.has(name.name)) removeEmptyDirs(join(dir, name.name));
  }
  if (readdirSync(dir).length === 0) rmdirSync(dir);
}

/** Whether `rel` (a path inside a target's folder) lies in one of its hand-written folders. */
export function isHandWritten(rel: string, handWritten: readonly string[] = []): boolean {
  return handWritten.some((folder) => rel.startsWith(folder));
}

export function writeTarget(
  outDir: string,
  files: readonly GeneratedFile[],
  handWritten: readonly string[] = [],
): WriteReport {
  const report: WriteReport = { written: [], deleted: [], unchanged: 0 };
  const keep = new Set(files.map((f) => f.path));
  if (existsSync(outDir)) {
    for (const rel of listFiles(outDir, NOT_OURS)) {
      if (keep.has(rel) || isHandWritten(rel, handWritten)) continue;
      rmSync(join(outDir, rel));
      report.deleted.push(rel);
    }
    removeEmptyDirs(outDir);
  }
  for (const file of files) {
    if (writeIfChanged(join(outDir, file.path), file.content)) report.written.push(file.path);
    else report.unchanged++;
  }
  return report;
}

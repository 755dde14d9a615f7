/**
 * Runs the analyzer (sandbox-main.mjs) in a child process under Node's permission model: read access to the
 * package file and the analyzer's own code only, no writes, no child processes, no workers, a V8 heap limit and a
 * wall-clock limit after which it is killed. Every way it can end is an outcome: findings, or a failure with the
 * reason (time limit, memory limit, crash, unreadable output), never an exception and never a hang.
 */
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AnalysisLimits, Finding } from './analyze.mjs';

export interface SandboxLimits extends AnalysisLimits {
  /** Wall-clock limit; the process is killed (SIGKILL) when it is reached. */
  timeoutMs: number;
  /** V8 old-space limit (--max-old-space-size). */
  maxHeapMb: number;
}

export const DEFAULT_SANDBOX_LIMITS: SandboxLimits = {
  maxEntries: 2000,
  maxEntryBytes: 16 * 1024 * 1024,
  maxTotalBytes: 64 * 1024 * 1024,
  maxRatio: 100,
  maxManifestBytes: 64 * 1024,
  timeoutMs: 30_000,
  maxHeapMb: 128,
};

export type SandboxOutcome =
  | { kind: 'analysed'; findings: Finding[]; files: number; bytes: number }
  | { kind: 'failed'; reason: string };

const ANALYZER_DIR = dirname(fileURLToPath(import.meta.url));
const ENTRY = `${ANALYZER_DIR}/sandbox-main.mjs`;
const require = createRequire(import.meta.url);
/** Directories of the packages the analyzer imports (read access for module loading, nothing else). */
const CODE_DIRS = [
  ANALYZER_DIR,
  dirname(require.resolve('zod/package.json')),
  dirname(require.resolve('yauzl/package.json')),
  dirname(createRequire(require.resolve('yauzl')).resolve('pend/package.json')),
];
const PERMISSION_FLAG =
  Number(process.versions.node.split('.')[0]) >= 22 ? '--permission' : '--experimental-permission';
const MAX_OUTPUT = 1024 * 1024;
const MAX_FINDINGS = 200;

/** The command line, exposed for the README's claims and the tests. */
export function sandboxArgs(packagePath: string, limits: SandboxLimits, expected: object): string[] {
  const { timeoutMs: _t, maxHeapMb, ...analysis } = limits;
  return [
    PERMISSION_FLAG,
    `--allow-fs-read=${packagePath}`,
    ...CODE_DIRS.map((d) => `--allow-fs-read=${d}/`),
    `--max-old-space-size=${maxHeapMb}`,
    '--disable-warning=ExperimentalWarning',
    '--no-addons',
    ENTRY,
    packagePath,
    JSON.stringify({ expected, limits: analysis }),
  ];
}

export function runSandbox(
  packagePath: string,
  expected: { plugin: string; version: string },
  limits: SandboxLimits,
): Promise<SandboxOutcome> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, sandboxArgs(packagePath, limits, expected), {
      stdio: ['ignore', 'pipe', 'pipe'],
      // Only what Node itself needs; nothing of ours (no DATABASE_URL, no secrets) reaches the analyzer.
      env: { PATH: process.env['PATH'] ?? '' },
      cwd: ANALYZER_DIR,
    });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      if (stdout.length < MAX_OUTPUT) stdout += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      if (stderr.length < 64 * 1024) stderr += d;
    });
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, limits.timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      resolve({ kind: 'failed', reason: `the analyzer could not start: ${err.message}` });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (timedOut) {
        resolve({
          kind: 'failed',
          reason: `the analyzer exceeded its time limit of ${limits.timeoutMs} ms and was killed`,
        });
        return;
      }
      if (/heap out of memory|Reached heap limit|Allocation failed/i.test(stderr)) {
        resolve({
          kind: 'failed',
          reason: `the analyzer ran out of memory (heap limit ${limits.maxHeapMb} MB)`,
        });
        return;
      }
      const line = stdout.split('\n').find((l) => l.startsWith('{'));
      type Output = { ok?: boolean; findings?: Finding[]; files?: number; bytes?: number; error?: string };
      let parsed: Output | null;
      try {
        parsed = line ? (JSON.parse(line) as Output) : null;
      } catch {
        parsed = null;
      }
      if (code === 0 && parsed?.ok && Array.isArray(parsed.findings)) {
        resolve({
          kind: 'analysed',
          findings: parsed.findings.slice(0, MAX_FINDINGS).map((f) => ({
            rule: String(f.rule).slice(0, 64),
            ...(f.path !== undefined ? { path: String(f.path).slice(0, 512) } : {}),
            message: String(f.message).slice(0, 1000),
          })),
          files: Number(parsed.files) || 0,
          bytes: Number(parsed.bytes) || 0,
        });
        return;
      }
      const why =
        parsed?.error ?? (stderr.trim().split('\n').slice(-3).join(' ').slice(0, 500) || 'no output');
      resolve({
        kind: 'failed',
        reason: `the analyzer crashed (${signal ? `signal ${signal}` : `exit code ${code}`}): ${why}`,
      });
    });
  });
}

/**
 * The check on the real repository: HEAD against HEAD~1 (git, not the working tree, which other work may be
 * changing) passes; a deliberately breaking change, a stale SDK file and a base given as a schema file, each in a
 * copy of HEAD (`git archive`), fail with a report naming the coordinate and the SDK methods.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSchemaCheck } from '../../src/schema-check/check.js';
import { renderMarkdown } from '../../src/schema-check/report.js';

const REPO = resolve(new URL('../../..', import.meta.url).pathname);
const dirs: string[] = [];

/** A copy of HEAD's files (no .git): the head side of a check, with the base read from REPO's git. */
function copyOfHead(): string {
  const dir = mkdtempSync(join(tmpdir(), 'schema-check-head-'));
  dirs.push(dir);
  const tar = execFileSync('git', ['archive', '--format=tar', 'HEAD'], {
    cwd: REPO,
    maxBuffer: 256 * 1024 * 1024,
  });
  execFileSync('tar', ['-x', '-C', dir], { input: tar });
  return dir;
}

afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('schema check on the real repository', () => {
  let head: string;
  beforeAll(() => {
    head = copyOfHead();
  });

  it('HEAD against HEAD~1 passes (nothing breaking, no violation, nothing stale)', async () => {
    const r = await runSchemaCheck({ root: head, base: { kind: 'git', ref: 'HEAD~1', cwd: REPO } });
    expect(r.violations).toEqual([]);
    expect(r.breaking).toEqual([]);
    expect(r.ok).toBe(true);
  });

  it('a removed field fails, naming the coordinate and the SDK methods that select it', async () => {
    const dir = copyOfHead();
    const file = join(dir, 'schemas/memory.graphql');
    const sdl = readFileSync(file, 'utf8');
    expect(sdl).toContain('  kind: String!\n');
    writeFileSync(file, sdl.replace('  kind: String!\n', ''));
    const r = await runSchemaCheck({ root: dir, base: { kind: 'git', ref: 'HEAD', cwd: REPO } });
    expect(r.ok).toBe(false);
    const f = r.breaking.find((x) => x.scope === 'api' && x.coordinate === 'MemoryRecord.kind');
    expect(f?.oldShape).toBe('MemoryRecord.kind: String!');
    expect(f?.newShape).toBeUndefined();
    const methods = f!.touches.map((t) => t.sdkMethod);
    expect(methods).toEqual(expect.arrayContaining(['memoryRecord', 'putMemory']));
    const md = renderMarkdown(r);
    expect(md).toMatch(/^# Schema check FAIL/);
    expect(md).toContain('**MemoryRecord.kind**');
    expect(md).toContain('`memoryRecord()`');
    // The committed API schema was not regenerated, so it is stale too.
    expect(r.violations.map((v) => `${v.rule} ${v.coordinate}`)).toContain('stale schemas/api.graphql');
  });

  it('a stale SDK fails: an edited generated file and a file the generator no longer makes', async () => {
    const dir = copyOfHead();
    appendFileSync(join(dir, 'sdks/typescript/src/client.ts'), '// edited by hand\n');
    writeFileSync(join(dir, 'sdks/typescript/src/leftover.ts'), 'export {};\n');
    const r = await runSchemaCheck({ root: dir, base: { kind: 'git', ref: 'HEAD', cwd: REPO } });
    expect(r.violations.map((v) => `${v.rule} ${v.coordinate}`).sort()).toEqual([
      'stale sdks/typescript/src/client.ts',
      'stale sdks/typescript/src/leftover.ts',
    ]);
    expect(r.ok).toBe(false);
  });

  it('the CLI with a schema file as base writes the Markdown and JSON reports and exits 1 on breaking', () => {
    const dir = copyOfHead();
    // The base API schema has a field the head lacks: for the head, that field was removed.
    const baseFile = join(dir, 'base-api.graphql');
    const api = readFileSync(join(dir, 'schemas/api.graphql'), 'utf8');
    writeFileSync(baseFile, api.replace(/type Query \{\n/, 'type Query {\n  legacyPing: Boolean\n'));
    const out = join(dir, '.schema-check/report.md');
    const run = spawnSync(
      process.execPath,
      [
        '--import',
        'tsx',
        join(REPO, 'codegen/src/schema-check/cli.ts'),
        '--root',
        dir,
        '--base',
        baseFile,
        '--out',
        out,
      ],
      { cwd: REPO, encoding: 'utf8' },
    );
    expect(run.stderr).toBe('');
    expect(run.status).toBe(1);
    expect(run.stdout).toContain('**Query.legacyPing**');
    expect(existsSync(out)).toBe(true);
    const json = JSON.parse(readFileSync(join(dir, '.schema-check/report.json'), 'utf8')) as {
      ok: boolean;
      breaking: Array<{ coordinate: string }>;
    };
    expect(json.ok).toBe(false);
    expect(json.breaking.map((b) => b.coordinate)).toContain('Query.legacyPing');
  });
});

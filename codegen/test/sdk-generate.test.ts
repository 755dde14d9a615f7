/**
 * The SDK generator's output: byte-identical across runs, written without touching unchanged files, stale files
 * removed, the committed output current, the TypeScript SDK type-checking on its own (real API and a fixture
 * schema with interfaces, unions and custom scalars), and every registered target writing its SDK.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listFiles } from '../src/sdk/files.js';
import { generateSdks, type GenerateResult, writeSdks } from '../src/sdk/generate.js';
import { MANIFEST_PATH } from '../src/sdk/manifest.js';
import { typescriptTarget } from '../src/sdk/typescript/index.js';
import { errorClassName as generatorClassName } from '../src/sdk/typescript/render-errors.js';
import { fixtureInputs, ROOT } from './sdk-fixture.js';

const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');

// Inside the repository (.tmp is git-ignored), so the generated SDK resolves @agentgraph/sdk-runtime (a workspace,
// to its sources under the @agentgraph/source condition of its tsconfig) and @types/node as it does in sdks/typescript.
let tmp: string;
let first: GenerateResult;
beforeAll(async () => {
  mkdirSync(join(ROOT, '.tmp'), { recursive: true });
  tmp = mkdtempSync(join(ROOT, '.tmp', 'codegen-test-'));
  first = await generateSdks(ROOT);
});
afterAll(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

function typecheck(project: string): void {
  try {
    execFileSync(process.execPath, [TSC, '-p', project, '--noEmit'], { encoding: 'utf8', stdio: 'pipe' });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string };
    throw new Error(`tsc -p ${project} failed:\n${e.stdout ?? ''}${e.stderr ?? ''}`);
  }
}

describe('SDK generation', () => {
  it('is deterministic: two runs write byte-identical trees, and a third write changes nothing', async () => {
    const second = await generateSdks(ROOT);
    writeSdks(first, join(tmp, 'a'));
    writeSdks(second, join(tmp, 'b'));
    const files = listFiles(join(tmp, 'a'));
    expect(files).toEqual(listFiles(join(tmp, 'b')));
    expect(files).toContain(MANIFEST_PATH);
    expect(files).toContain('sdks/typescript/src/client.ts');
    for (const f of files) {
      expect(readFileSync(join(tmp, 'b', f)).equals(readFileSync(join(tmp, 'a', f))), f).toBe(true);
    }
    const again = writeSdks(second, join(tmp, 'a'));
    expect(again.manifestChanged).toBe(false);
    expect(again.reports.map((r) => [r.target.name, r.report.written, r.report.deleted])).toEqual([
      ['typescript', [], []],
      ['csharp', [], []],
      ['python', [], []],
    ]);
  });

  it('removes files it no longer generates (leaving node_modules and dist alone)', () => {
    const out = join(tmp, 'stale');
    writeSdks(first, out);
    const sdk = join(out, 'sdks/typescript');
    writeFileSync(join(sdk, 'src/old-module.ts'), 'export {};\n');
    mkdirSync(join(sdk, 'src/gone'), { recursive: true });
    writeFileSync(join(sdk, 'src/gone/x.ts'), 'export {};\n');
    mkdirSync(join(sdk, 'node_modules/pkg'), { recursive: true });
    writeFileSync(join(sdk, 'node_modules/pkg/index.js'), '');
    mkdirSync(join(sdk, 'dist'), { recursive: true });
    writeFileSync(join(sdk, 'dist/index.js'), '');
    const { reports } = writeSdks(first, out);
    expect(reports[0]!.report.deleted).toEqual(['src/gone/x.ts', 'src/old-module.ts']);
    expect(existsSync(join(sdk, 'src/gone'))).toBe(false);
    expect(existsSync(join(sdk, 'node_modules/pkg/index.js'))).toBe(true);
    expect(existsSync(join(sdk, 'dist/index.js'))).toBe(true);
  });

  it('has no copy of the runtime: it depends on @agentgraph/sdk-runtime at exactly its own version, by name', () => {
    const ts = first.targets.find((t) => t.target.name === 'typescript')!;
    const paths = ts.files.map((f) => f.path);
    expect(paths.filter((p) => p.startsWith('src/runtime/'))).toEqual([]);
    const runtime = JSON.parse(readFileSync(join(ROOT, 'sdk-templates/typescript/package.json'), 'utf8'));
    const sdk = JSON.parse(ts.files.find((f) => f.path === 'package.json')!.content);
    expect(runtime.name).toBe('@agentgraph/sdk-runtime');
    expect(sdk.version).toBe(runtime.version);
    expect(sdk.dependencies).toEqual({ '@agentgraph/sdk-runtime': runtime.version });
    for (const f of ts.files.filter((f) => f.path.startsWith('src/'))) {
      for (const [, spec] of f.content.matchAll(/from '([^']+)'/g)) {
        expect(
          spec === '@agentgraph/sdk-runtime' || spec!.startsWith('./'),
          `${f.path} imports ${spec}`,
        ).toBe(true);
      }
    }
  });

  it('the committed sdks/typescript and schemas/operations.manifest.json are current (run npm run codegen)', () => {
    expect(readFileSync(join(ROOT, MANIFEST_PATH), 'utf8')).toBe(first.manifest);
    const ts = first.targets.find((t) => t.target.name === 'typescript')!;
    const committed = join(ROOT, ts.target.outDir);
    expect(listFiles(committed, new Set(['node_modules']))).toEqual(ts.files.map((f) => f.path));
    for (const f of ts.files) expect(readFileSync(join(committed, f.path), 'utf8'), f.path).toBe(f.content);
  });

  it('the TypeScript SDK type-checks on its own: npx tsc -p sdks/typescript --noEmit', () => {
    writeSdks(first, join(tmp, 'tsc'));
    typecheck(join(tmp, 'tsc/sdks/typescript'));
  });

  it('a schema with interfaces, unions, custom scalars and several connections generates a type-correct SDK', async () => {
    const fixture = await generateSdks(ROOT, {
      targets: [typescriptTarget],
      inputs: fixtureInputs({
        'things.graphql': `
          query Things($id: ID!, $withName: Boolean!) {
            f: folder(id: $id) { ...FolderBits name @include(if: $withName) items { __typename ... on Note { text } ... on File { size } } }
          }
          fragment FolderBits on Folder { id }
          query Both($id: ID!, $a: String, $b: String) {
            folder(id: $id) { notes(after: $a) { edges { node { id } } pageInfo { hasNextPage endCursor } } }
            notes(after: $b) { edges { node { text } } pageInfo { hasNextPage endCursor } }
          }`,
      }),
    });
    const files = fixture.targets[0]!.files;
    const client = files.find((f) => f.path === 'src/client.ts')!.content;
    expect(client).toContain('paginateBothFolderNotes(');
    expect(client).toContain('paginateBothNotes(');
    expect(client).toContain('things(variables: T.ThingsVariables');
    expect(files.some((f) => f.path.startsWith('examples/'))).toBe(false); // no viewer/postMessage here
    const types = files.find((f) => f.path === 'src/types.ts')!.content;
    expect(types).toContain('export type JSON = unknown;');
    expect(types).toMatch(
      /items: Array<\s*\|\s*\{\s*__typename: 'File';\s*size: number;\s*\}\s*\|\s*\{\s*__typename: 'Note';/,
    );
    writeSdks(fixture, join(tmp, 'fixture'));
    typecheck(join(tmp, 'fixture/sdks/typescript'));
  });

  it('registers csharp and python as targets', () => {
    const names = first.targets.map((t) => t.target.name);
    expect(names).toEqual(['typescript', 'csharp', 'python']);
    expect(first.targets[1]!.files.length).toBeGreaterThan(10);
    expect(existsSync(join(tmp, 'a/sdks/csharp/src/AgentGraph.Sdk/Generated/Errors.g.cs'))).toBe(true);
    expect(existsSync(join(tmp, 'a/sdks/python/agentgraph/operations.py'))).toBe(true);
    expect(existsSync(join(tmp, 'a/sdks/python/agentgraph/py.typed'))).toBe(true);
  });

  it('names error classes as the runtime does', async () => {
    const runtime = await import('../../sdk-templates/typescript/src/errors.js');
    for (const { code } of first.ir.errors)
      expect(generatorClassName(code)).toBe(runtime.errorClassName(code));
  });
});

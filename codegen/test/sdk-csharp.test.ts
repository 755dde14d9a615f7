/**
 * The C# target's output: one runtime source (the generated library references the runtime project in
 * sdk-templates/csharp and copies none of its files), build props that import the template's, and the committed
 * sdks/csharp current. Building and running it is `dotnet test` in sdks/csharp and test/e2e/csharp-*.test.ts.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { RUNTIME_PROJECT } from '../src/sdk/csharp/render-project.js';
import { csharpTarget } from '../src/sdk/csharp/index.js';
import { listFiles } from '../src/sdk/files.js';
import { isHandWritten } from '../src/sdk/write-target.js';
import { generateSdks, type GenerateResult } from '../src/sdk/generate.js';
import { ROOT } from './sdk-fixture.js';

const TEMPLATE_RUNTIME = join(ROOT, 'sdk-templates/csharp/src/AgentGraph.Sdk.Runtime');

let result: GenerateResult;
let files: Map<string, string>;
beforeAll(async () => {
  result = await generateSdks(ROOT, { targets: [csharpTarget] });
  files = new Map(result.targets[0]!.files.map((f) => [f.path, f.content]));
});

describe('C# SDK generation', () => {
  it('copies no runtime file: the library references the runtime project, which exists', () => {
    const runtimeFiles = listFiles(TEMPLATE_RUNTIME, new Set(['bin', 'obj'])).filter((f) =>
      f.endsWith('.cs'),
    );
    expect(runtimeFiles.length).toBeGreaterThan(20);
    const runtimeTexts = new Set(runtimeFiles.map((f) => readFileSync(join(TEMPLATE_RUNTIME, f), 'utf8')));
    for (const [path, content] of files) {
      expect(path.startsWith('src/AgentGraph.Sdk/Runtime/'), path).toBe(false);
      expect(runtimeTexts.has(content), `${path} is a copy of a runtime file`).toBe(false);
    }
    const project = files.get('src/AgentGraph.Sdk/AgentGraph.Sdk.csproj')!;
    expect(project).toContain(`<ProjectReference Include="${RUNTIME_PROJECT}" />`);
    const referenced = resolve(ROOT, 'sdks/csharp/src/AgentGraph.Sdk', RUNTIME_PROJECT);
    expect(referenced).toBe(join(TEMPLATE_RUNTIME, 'AgentGraph.Sdk.Runtime.csproj'));
    expect(existsSync(referenced)).toBe(true);
  });

  it('the build props import the template files, which exist', () => {
    for (const name of ['Directory.Build.props', 'Directory.Packages.props']) {
      const props = files.get(name)!;
      const imported = /<Import Project="\$\(MSBuildThisFileDirectory\)([^"]+)" \/>/.exec(props)?.[1];
      expect(imported, name).toBe(`../../sdk-templates/csharp/${name}`);
      expect(existsSync(resolve(ROOT, 'sdks/csharp', imported!)), name).toBe(true);
    }
  });

  it('the committed sdks/csharp is current (run npm run codegen)', () => {
    const committed = join(ROOT, 'sdks/csharp');
    const onDisk = listFiles(committed, new Set(['bin', 'obj'])).filter(
      (rel) => !isHandWritten(rel, csharpTarget.handWritten),
    );
    expect(onDisk).toEqual([...files.keys()]);
    // The samples are written by hand (never generated), and the solution builds each of them.
    expect([...files.keys()].filter((p) => p.startsWith('samples/'))).toEqual([]);
    const solution = files.get('AgentGraph.Sdk.slnx')!;
    for (const sample of ['OutboxPoster', 'Quickstart', 'RoomSubscriber']) {
      const project = `samples/${sample}/${sample}.csproj`;
      expect(existsSync(join(committed, project)), project).toBe(true);
      expect(solution).toContain(project);
    }
    for (const [path, content] of files)
      expect(readFileSync(join(committed, path), 'utf8'), path).toBe(content);
  });
});

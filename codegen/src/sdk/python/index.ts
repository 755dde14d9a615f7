/**
 * The Python target: sdks/python/ = the distribution `agentgraph`: generated errors, operations, types (dataclasses)
 * and the AgentGraph / AsyncAgentGraph classes, pyproject.toml, py.typed, a README and tests. `samples/` is written
 * by hand (programs that use the generated SDK; the README quotes them whole, the packaging test and the e2e tests run
 * them): the generator reads it and never writes or deletes it. The runtime is not copied: it is the distribution `agentgraph-runtime`
 * (sdk-templates/python), which the generated package imports as `agentgraph_runtime` and pins to the runtime's own
 * version (read from its pyproject.toml). Python files are not run through prettier; the renderers indent them
 * themselves.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { listFiles } from '../files.js';
import type { IR } from '../ir.js';
import type { GeneratedFile, Target, TargetContext } from '../target.js';
import { renderClient } from './render-client.js';
import { renderErrors } from './render-errors.js';
import { renderOperations } from './render-operations.js';
import {
  pyprojectVersion,
  renderConftest,
  renderInit,
  renderPyproject,
  renderTests,
} from './render-project.js';
import { renderReadme } from './render-readme.js';
import { renderTypes } from './render-types.js';

export const PYTHON_RUNTIME_PROJECT = 'sdk-templates/python/pyproject.toml';
export const PYTHON_SAMPLES = 'sdks/python/samples';
const SKIP = new Set(['__pycache__']);

export const pythonTarget: Target = {
  name: 'python',
  outDir: 'sdks/python',
  handWritten: ['samples/'],
  async generate(ir: IR, ctx: TargetContext): Promise<GeneratedFile[]> {
    const runtimeVersion = pyprojectVersion(readFileSync(join(ctx.root, PYTHON_RUNTIME_PROJECT), 'utf8'));
    const samplesDir = join(ctx.root, PYTHON_SAMPLES);
    const samples = listFiles(samplesDir, SKIP)
      .filter((rel) => rel.endsWith('.py'))
      .map((rel) => ({ name: rel, content: readFileSync(join(samplesDir, rel), 'utf8') }));
    const files: GeneratedFile[] = [
      { path: 'pyproject.toml', content: renderPyproject(runtimeVersion) },
      {
        path: 'README.md',
        content: await ctx.format(
          'README.md',
          renderReadme(ir, new Map(samples.map((f) => [f.name, f.content]))),
        ),
      },
      { path: 'agentgraph/__init__.py', content: renderInit() },
      { path: 'agentgraph/py.typed', content: '' },
      { path: 'agentgraph/errors.py', content: renderErrors(ir) },
      { path: 'agentgraph/operations.py', content: renderOperations(ir) },
      { path: 'agentgraph/types.py', content: renderTypes(ir) },
      { path: 'agentgraph/client.py', content: renderClient(ir) },
      { path: 'tests/conftest.py', content: renderConftest() },
      { path: 'tests/test_generated_sdk.py', content: renderTests(ir) },
    ];
    return files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  },
};

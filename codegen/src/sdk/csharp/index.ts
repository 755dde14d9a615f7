/**
 * The C# target: sdks/csharp/ = generated errors, operations, types, the client class (AgentGraphSdk) and its DI registration (AddAgentGraph), the library project
 * (net8.0;net10.0, NuGet-packable) that references the runtime project
 * (sdk-templates/csharp/src/AgentGraph.Sdk.Runtime: never copied, so each runtime line exists once; `dotnet pack`
 * turns the reference into a dependency on the AgentGraph.Sdk.Runtime package of the same version), build props that
 * import the template's, and a solution (.slnx) that also builds the samples. `samples/` is written by hand (programs
 * that use the generated SDK; the README quotes them, the e2e tests run them): the generator reads it and never writes
 * or deletes it. C# files are not run through prettier; the renderers indent them themselves.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { listFiles } from '../files.js';
import type { IR } from '../ir.js';
import type { GeneratedFile, Target, TargetContext } from '../target.js';
import { checkNames } from './names.js';
import { renderClient } from './render-client.js';
import { renderErrors } from './render-errors.js';
import { renderOperations } from './render-operations.js';
import { renderLibraryProject, renderPropsImport, renderReadme, renderSolution } from './render-project.js';
import { renderServices } from './render-services.js';
import { renderTests, renderTestProject } from './render-tests.js';
import { renderTypes } from './render-types.js';

const BUILD_OUTPUT = new Set(['bin', 'obj']);

/** The hand-written samples (sdks/csharp/samples): Program.cs of each, by sample name. */
export const CSHARP_SAMPLES = 'sdks/csharp/samples';

function sampleProgram(root: string, name: string): string | undefined {
  const dir = join(root, CSHARP_SAMPLES, name);
  return listFiles(dir, BUILD_OUTPUT).includes('Program.cs')
    ? readFileSync(join(dir, 'Program.cs'), 'utf8')
    : undefined;
}

export const csharpTarget: Target = {
  name: 'csharp',
  outDir: 'sdks/csharp',
  handWritten: ['samples/'],
  async generate(ir: IR, ctx: TargetContext): Promise<GeneratedFile[]> {
    checkNames(ir);
    const sample = (name: string) => sampleProgram(ctx.root, name);
    const readme = {
      quickstart: sample('Quickstart'),
      subscriber: sample('RoomSubscriber'),
      outbox: sample('OutboxPoster'),
    };
    const files: GeneratedFile[] = [
      { path: 'AgentGraph.Sdk.slnx', content: renderSolution() },
      { path: 'README.md', content: await ctx.format('README.md', renderReadme(ir, readme)) },
      { path: 'src/AgentGraph.Sdk/AgentGraph.Sdk.csproj', content: renderLibraryProject() },
      { path: 'src/AgentGraph.Sdk/Generated/Errors.g.cs', content: renderErrors(ir) },
      { path: 'src/AgentGraph.Sdk/Generated/Operations.g.cs', content: renderOperations(ir) },
      { path: 'src/AgentGraph.Sdk/Generated/Types.g.cs', content: renderTypes(ir) },
      { path: 'src/AgentGraph.Sdk/Generated/AgentGraphSdk.g.cs', content: renderClient(ir) },
      { path: 'src/AgentGraph.Sdk/Generated/ServiceCollectionExtensions.g.cs', content: renderServices() },
      { path: 'test/AgentGraph.Sdk.Tests/AgentGraph.Sdk.Tests.csproj', content: renderTestProject() },
      { path: 'test/AgentGraph.Sdk.Tests/GeneratedTests.cs', content: renderTests(ir) },
      { path: 'Directory.Build.props', content: renderPropsImport('Directory.Build.props') },
      { path: 'Directory.Packages.props', content: renderPropsImport('Directory.Packages.props') },
    ];
    return files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  },
};

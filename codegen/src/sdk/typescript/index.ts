/**
 * The TypeScript target: sdks/typescript/ (`@agentgraph/sdk`) = generated types, operations, errors, the AgentGraph
 * class, the entry point, README, examples, package.json and tsconfig files. The runtime is not copied: the SDK
 * depends on the runtime package (`@agentgraph/sdk-runtime`, sdk-templates/typescript) at the same version and
 * imports it by name, so each runtime line exists once in the repository.
 */
import type { IR } from '../ir.js';
import type { GeneratedFile, Target, TargetContext } from '../target.js';
import { examplesFor } from './examples-for.js';
import { checkNames, HEADER } from './names.js';
import { renderClient } from './render-client.js';
import { renderErrors } from './render-errors.js';
import { renderOperations } from './render-operations.js';
import { renderBuildTsconfig, renderPackageJson, renderTsconfig, RUNTIME_PACKAGE } from './render-package.js';
import { renderReadme } from './render-readme.js';
import { renderTypes } from './render-types.js';

/**
 * The one entry point. The runtime package picks its own entry by export condition: in Node it includes the
 * better-sqlite3 stores (outbox, inbox, replay cache), in a browser bundle it leaves them out.
 */
const INDEX = `${HEADER}
/** The AgentGraph SDK: the generated API on the runtime (${RUNTIME_PACKAGE}, re-exported whole). */
export * from '${RUNTIME_PACKAGE}';
export { AgentGraph, type AgentGraphOptions, type PageOptions } from './client.js';
export * from './errors.js';
export { operations, subscriptions, SCHEMA_VERSION, type OperationName, type SubscriptionName } from './operations.js';
export * from './types.js';
`;

export const typescriptTarget: Target = {
  name: 'typescript',
  outDir: 'sdks/typescript',
  async generate(ir: IR, ctx: TargetContext): Promise<GeneratedFile[]> {
    checkNames(ir);
    const generated: GeneratedFile[] = [
      { path: 'package.json', content: renderPackageJson(ctx.root) },
      { path: 'tsconfig.json', content: renderTsconfig() },
      { path: 'tsconfig.build.json', content: renderBuildTsconfig() },
      { path: 'README.md', content: renderReadme(ir) },
      ...examplesFor(ir).map((e) => ({ path: `examples/${e.file}`, content: e.source })),
      { path: 'src/types.ts', content: renderTypes(ir) },
      { path: 'src/operations.ts', content: renderOperations(ir) },
      { path: 'src/errors.ts', content: renderErrors(ir) },
      { path: 'src/client.ts', content: renderClient(ir) },
      { path: 'src/index.ts', content: INDEX },
    ];
    const formatted = await Promise.all(
      generated.map(async (f) => ({ path: f.path, content: await ctx.format(f.path, f.content) })),
    );
    return formatted.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  },
};

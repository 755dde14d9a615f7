/**
 * The TypeScript target: sdks/typescript/ = the runtime (sdk-templates/typescript/src, copied verbatim into
 * src/runtime/) + generated types, operations, errors, the AgentGraph class, entry points, README, examples,
 * package.json and tsconfig.json.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { listFiles } from '../files.js';
import type { IR } from '../ir.js';
import type { GeneratedFile, Target, TargetContext } from '../target.js';
import { examplesFor } from './examples-for.js';
import { checkNames, HEADER } from './names.js';
import { renderClient } from './render-client.js';
import { renderErrors } from './render-errors.js';
import { renderOperations } from './render-operations.js';
import { renderPackageJson, renderTsconfig } from './render-package.js';
import { renderReadme } from './render-readme.js';
import { renderTypes } from './render-types.js';

export const RUNTIME_TEMPLATE = 'sdk-templates/typescript/src';

function runtimeFiles(root: string): GeneratedFile[] {
  const dir = join(root, RUNTIME_TEMPLATE);
  return listFiles(dir).map((rel) => ({
    path: `src/runtime/${rel}`,
    content: readFileSync(join(dir, rel), 'utf8'),
  }));
}

const INDEX = `${HEADER}
/** The AgentGraph SDK (browser-safe): the generated API on the runtime. Node adds SQLite stores: index.node.ts. */
export * from './runtime/index.js';
export { AgentGraph, type AgentGraphOptions, type PageOptions } from './client.js';
export * from './errors.js';
export { operations, subscriptions, SCHEMA_VERSION, type OperationName, type SubscriptionName } from './operations.js';
export * from './types.js';
`;

const INDEX_NODE = `${HEADER}
/** The AgentGraph SDK on Node: everything in index.ts plus the better-sqlite3 stores (outbox, inbox, replay cache). */
export * from './index.js';
export * from './runtime/index.node.js';
`;

export const typescriptTarget: Target = {
  name: 'typescript',
  outDir: 'sdks/typescript',
  async generate(ir: IR, ctx: TargetContext): Promise<GeneratedFile[]> {
    checkNames(ir);
    const generated: GeneratedFile[] = [
      { path: 'package.json', content: renderPackageJson(ctx.root) },
      { path: 'tsconfig.json', content: renderTsconfig() },
      { path: 'README.md', content: renderReadme(ir) },
      ...examplesFor(ir).map((e) => ({ path: `examples/${e.file}`, content: e.source })),
      { path: 'src/types.ts', content: renderTypes(ir) },
      { path: 'src/operations.ts', content: renderOperations(ir) },
      { path: 'src/errors.ts', content: renderErrors(ir) },
      { path: 'src/client.ts', content: renderClient(ir) },
      { path: 'src/index.ts', content: INDEX },
      { path: 'src/index.node.ts', content: INDEX_NODE },
    ];
    const formatted = await Promise.all(
      generated.map(async (f) => ({ path: f.path, content: await ctx.format(f.path, f.content) })),
    );
    return [...formatted, ...runtimeFiles(ctx.root)].sort((a, b) =>
      a.path < b.path ? -1 : a.path > b.path ? 1 : 0,
    );
  },
};

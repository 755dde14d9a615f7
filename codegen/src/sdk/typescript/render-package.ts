/** package.json and tsconfig.json of sdks/typescript, with versions taken from the repository's package.json. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';

const RootPackage = z.object({
  version: z.string(),
  engines: z.object({ node: z.string() }).optional(),
  dependencies: z.record(z.string(), z.string()),
});

export function renderPackageJson(root: string): string {
  const pkg = RootPackage.parse(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')));
  const version = (name: string) => {
    const v = pkg.dependencies[name];
    if (!v) throw new Error(`package.json has no dependency ${name}, which the TypeScript SDK needs.`);
    return v;
  };
  return JSON.stringify({
    name: '@agentgraph/sdk',
    version: pkg.version,
    description:
      'The AgentGraph TypeScript SDK: typed operations, retries with idempotency keys, privacy gate, pagination, outbox.',
    type: 'module',
    exports: {
      '.': {
        browser: './src/index.ts',
        node: './src/index.node.ts',
        default: './src/index.ts',
      },
    },
    files: ['src', 'README.md'],
    sideEffects: false,
    engines: { node: pkg.engines?.node ?? '>=20' },
    dependencies: { jose: version('jose') },
    optionalDependencies: { 'better-sqlite3': version('better-sqlite3') },
  });
}

export function renderTsconfig(): string {
  return JSON.stringify({
    compilerOptions: {
      target: 'ES2022',
      module: 'NodeNext',
      moduleResolution: 'NodeNext',
      strict: true,
      noUncheckedIndexedAccess: true,
      noImplicitOverride: true,
      skipLibCheck: true,
      resolveJsonModule: true,
      isolatedModules: true,
      noEmit: true,
      types: ['node'],
    },
    include: ['src', 'examples'],
  });
}

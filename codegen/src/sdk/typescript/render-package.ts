/**
 * package.json and the tsconfig files of sdks/typescript (`@agentgraph/sdk`). Its version is the repository's; it
 * depends on the runtime package (sdk-templates/typescript, `@agentgraph/sdk-runtime`) at exactly the same version,
 * which generation checks. Inside the repository both packages resolve to their TypeScript sources through the
 * `@agentgraph/source` export condition (see sdk-templates/typescript/README.md, "Packages"); a packed tarball
 * carries the compiled `dist/` (ESM, .d.ts, source maps) that `npm run build` (prepack) writes.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';

/** The runtime package the SDK depends on and imports by name. */
export const RUNTIME_PACKAGE = '@agentgraph/sdk-runtime';
/** Where the runtime package lives in the repository. */
export const RUNTIME_DIR = 'sdk-templates/typescript';
/** The export condition under which the packages resolve to their sources inside the repository. */
export const SOURCE_CONDITION = '@agentgraph/source';

const RootPackage = z.object({
  version: z.string(),
  license: z.string(),
  engines: z.object({ node: z.string() }).optional(),
});

const RuntimePackage = z.object({ name: z.string(), version: z.string() });

function readJson(root: string, path: string): unknown {
  return JSON.parse(readFileSync(join(root, path), 'utf8'));
}

/** The runtime's version, which must be the repository's (the SDK pins it exactly). */
function runtimeVersion(root: string, version: string): string {
  const runtime = RuntimePackage.parse(readJson(root, `${RUNTIME_DIR}/package.json`));
  if (runtime.name !== RUNTIME_PACKAGE) {
    throw new Error(
      `${RUNTIME_DIR}/package.json is named ${runtime.name}; the SDK imports ${RUNTIME_PACKAGE}.`,
    );
  }
  if (runtime.version !== version) {
    throw new Error(
      `${RUNTIME_DIR}/package.json has version ${runtime.version} but package.json has ${version}: the SDK ` +
        `(${version}) depends on exactly its own version of ${RUNTIME_PACKAGE}. Set both to the same version.`,
    );
  }
  return runtime.version;
}

export function renderPackageJson(root: string): string {
  const pkg = RootPackage.parse(readJson(root, 'package.json'));
  return JSON.stringify({
    name: '@agentgraph/sdk',
    version: pkg.version,
    description:
      'The AgentGraph TypeScript SDK: typed operations, retries with idempotency keys, privacy gate, pagination, outbox.',
    license: pkg.license,
    type: 'module',
    exports: {
      '.': {
        [SOURCE_CONDITION]: './src/index.ts',
        types: './dist/index.d.ts',
        import: './dist/index.js',
      },
      './package.json': './package.json',
    },
    files: ['dist', 'src', 'examples', 'README.md'],
    sideEffects: false,
    engines: { node: pkg.engines?.node ?? '>=22.12' },
    scripts: { build: 'tsc -p tsconfig.build.json', prepack: 'npm run build' },
    dependencies: { [RUNTIME_PACKAGE]: runtimeVersion(root, pkg.version) },
  });
}

const COMPILER_OPTIONS = {
  target: 'ES2022',
  module: 'NodeNext',
  moduleResolution: 'NodeNext',
  lib: ['ES2023', 'DOM', 'DOM.Iterable'],
  strict: true,
  noUncheckedIndexedAccess: true,
  noImplicitOverride: true,
  skipLibCheck: true,
  isolatedModules: true,
};

/** Type-checks the sources and examples against the runtime's sources (npx tsc -p sdks/typescript). */
export function renderTsconfig(): string {
  return JSON.stringify({
    compilerOptions: {
      ...COMPILER_OPTIONS,
      customConditions: [SOURCE_CONDITION],
      noEmit: true,
      types: ['node'],
    },
    include: ['src', 'examples'],
  });
}

/**
 * The build (`npm run build`, run by prepack): src → dist, against the runtime's compiled declarations (no source
 * condition: the runtime is a dependency here, built first, not part of this program).
 */
export function renderBuildTsconfig(): string {
  return JSON.stringify({
    compilerOptions: {
      ...COMPILER_OPTIONS,
      rootDir: 'src',
      outDir: 'dist',
      declaration: true,
      declarationMap: true,
      sourceMap: true,
      types: [],
    },
    include: ['src'],
  });
}

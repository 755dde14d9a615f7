import { createRequire } from 'node:module';
import { defineConfig } from 'vitest/config';

const require = createRequire(import.meta.url);

export default defineConfig({
  resolve: {
    // graphql 16 ships CJS (`main`) and ESM (`module`). Node (and tsx) load `main`, and CJS dependencies such as
    // @apollo/subgraph always require it; Vite would otherwise pick `module` for our sources, giving two graphql
    // instances ("Cannot use GraphQLSchema from another module or realm"). Pin ours to the one Node loads.
    alias: [{ find: /^graphql$/, replacement: require.resolve('graphql') }],
  },
  test: {
    include: [
      'runtime/test/**/*.test.ts',
      'subgraphs/*/test/**/*.test.ts',
      'gateway/test/**/*.test.ts',
      'codegen/test/**/*.test.ts',
      'test/e2e/**/*.test.ts',
      'test/conformance/**/*.test.ts',
      'test/fault-proxy/**/*.test.ts',
      'sdk-templates/typescript/test/**/*.test.ts',
    ],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
  },
});

import { createRequire } from 'node:module';
import { defineConfig } from 'vitest/config';

const require = createRequire(import.meta.url);

/**
 * Test files that touch no database: `npm test` (scripts/test-all.mjs) runs them once, on the PGlite pass, and
 * leaves them out of the PostgreSQL pass (AGENTGRAPH_TEST_SCOPE=database). The C# exactly-once run is here too:
 * it tests the C# client (the TypeScript one runs on both databases), and costs a minute; so does the Python one.
 */
const DB_AGNOSTIC = [
  'codegen/test/sdk-generate.test.ts',
  'codegen/test/sdk-ir.test.ts',
  'codegen/test/schema-check/real-repo.test.ts',
  'codegen/test/schema-check/units.test.ts',
  'runtime/test/connection.test.ts',
  'runtime/test/errors.test.ts',
  'runtime/test/format-error.test.ts',
  'runtime/test/http-shutdown.test.ts',
  'runtime/test/input-text.test.ts',
  'runtime/test/key-encryption.test.ts',
  'runtime/test/limits.test.ts',
  'runtime/test/log.test.ts',
  'runtime/test/periodic.test.ts',
  'runtime/test/principals.test.ts',
  'runtime/test/pglite-template.test.ts',
  'runtime/test/roles.test.ts',
  'runtime/test/stream-guard.test.ts',
  'sdk-templates/typescript/test/*.test.ts',
  'sdk-templates/typescript/test/inbox/**',
  'sdk-templates/typescript/test/intents/**',
  'sdk-templates/typescript/test/outbox/**',
  'sdk-templates/typescript/test/subscriptions/sse-parser.test.ts',
  'subgraphs/catalog/test/manifest-schema.test.ts',
  'subgraphs/coordination/test/agent-message-states.test.ts',
  'subgraphs/coordination/test/intent-machine.test.ts',
  'subgraphs/identity/test/jwks-route.test.ts',
  'subgraphs/identity/test/passwords.test.ts',
  'subgraphs/memory/test/secrets.test.ts',
  'test/conformance/**',
  'test/fault-proxy/**',
  'test/lint/**',
  'test/e2e/csharp-exactly-once.test.ts',
  'test/e2e/python-exactly-once.test.ts',
  // The console's browser tests run `npm start` on its embedded PGlite whatever the scope.
  'test/e2e/console/**',
];

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
      'test/lint/**/*.test.ts',
      'sdk-templates/typescript/test/**/*.test.ts',
    ],
    exclude: [
      '**/node_modules/**',
      ...(process.env['AGENTGRAPH_TEST_SCOPE'] === 'database' ? DB_AGNOSTIC : []),
    ],
    // Two files at a time: most of the suite waits (HTTP round trips, Retry-After, child processes), so two workers
    // on a 2-core machine cut the wall time without starving the timing-bounded checks. .NET builds are serialised
    // across workers (test/src/dotnet-build.ts).
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
  },
});

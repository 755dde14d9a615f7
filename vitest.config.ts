import { createRequire } from 'node:module';
import { defaultServerConditions } from 'vite';
import { defineConfig } from 'vitest/config';

const require = createRequire(import.meta.url);

/**
 * The fast tier, `npm run test:unit` (AGENTGRAPH_TEST_SCOPE=unit): test files that open no database and start no
 * browser, platform, .NET or Python process: pure logic, stub servers on port 0, the code generator and the schema
 * check, the SDK runtime, the conformance vectors, lint rules. Under a minute on two cores. `npm test`
 * (scripts/test-all.mjs) runs them first, once, and leaves them out of its database passes
 * (AGENTGRAPH_TEST_SCOPE=integration, then database). A file here that provisions a test database fails
 * (test/src/database.ts). Each entry is a test file or a glob of test files.
 */
const UNIT = [
  'codegen/test/sdk-csharp.test.ts',
  'codegen/test/sdk-generate.test.ts',
  'codegen/test/sdk-ir.test.ts',
  'codegen/test/sdk-python.test.ts',
  'codegen/test/schema-check/*.test.ts',
  'gateway/test/config.test.ts',
  'gateway/test/console-upload.test.ts',
  'gateway/test/console.test.ts',
  'gateway/test/gateway.test.ts',
  'gateway/test/metrics.test.ts',
  'gateway/test/persisted.test.ts',
  'gateway/test/shutdown.test.ts',
  'gateway/test/stream-connections.test.ts',
  'gateway/test/stream-lifecycle.test.ts',
  'gateway/test/stream-single-connection.test.ts',
  'runtime/test/auth.test.ts',
  'runtime/test/config.test.ts',
  'runtime/test/connection.test.ts',
  'runtime/test/errors.test.ts',
  'runtime/test/format-error.test.ts',
  'runtime/test/http-shutdown.test.ts',
  'runtime/test/input-text.test.ts',
  'runtime/test/key-encryption.test.ts',
  'runtime/test/limits.test.ts',
  'runtime/test/log.test.ts',
  'runtime/test/metrics-dashboard.test.ts',
  'runtime/test/periodic.test.ts',
  'runtime/test/pglite-lock.test.ts',
  'runtime/test/principals.test.ts',
  'runtime/test/roles.test.ts',
  'runtime/test/stream-guard.test.ts',
  'runtime/test/subgraph-server-database.test.ts',
  'runtime/test/subgraph-server-stream.test.ts',
  'sdk-templates/typescript/test/*.test.ts',
  'sdk-templates/typescript/test/inbox/**/*.test.ts',
  'sdk-templates/typescript/test/intents/**/*.test.ts',
  'sdk-templates/typescript/test/outbox/**/*.test.ts',
  'sdk-templates/typescript/test/subscriptions/sse-parser.test.ts',
  'sdk-templates/typescript/test/subscriptions/subscriber.test.ts',
  'subgraphs/catalog/test/manifest-schema.test.ts',
  'subgraphs/coordination/test/agent-message-states.test.ts',
  'subgraphs/coordination/test/intent-machine.test.ts',
  'subgraphs/identity/test/jwks-route.test.ts',
  'subgraphs/identity/test/passwords.test.ts',
  'subgraphs/memory/test/flat-index.test.ts',
  'subgraphs/memory/test/secrets-corpus.test.ts',
  'subgraphs/memory/test/secrets.test.ts',
  'test/conformance/**/*.test.ts',
  'test/fault-proxy/**/*.test.ts',
  'test/lint/**/*.test.ts',
];

/**
 * Test files that touch no database: the fast tier, and the slower ones below, which `npm test` runs once, on the
 * PGlite pass, and leaves out of the PostgreSQL pass (AGENTGRAPH_TEST_SCOPE=database). The C# exactly-once run is
 * here: it tests the C# client (the TypeScript one runs on both databases), and costs a minute; so does the Python
 * one.
 */
const DB_AGNOSTIC = [
  ...UNIT,
  // Opens in-memory PGlite databases of its own (the snapshot mechanism is PGlite's alone).
  'runtime/test/pglite-template.test.ts',
  'test/e2e/csharp-exactly-once.test.ts',
  'test/e2e/python-exactly-once.test.ts',
  // The packages as their users install them (npm pack, dotnet pack): about the packaging, not the database.
  'codegen/test/sdk-typescript-package.test.ts',
  'test/e2e/csharp-package.test.ts',
  // The console's browser tests run `npm start` on its embedded PGlite whatever the scope.
  'test/e2e/console/**',
];

/** unit: the fast tier alone; integration: all but it; database: the files that touch a database; unset: all. */
const SCOPE = process.env['AGENTGRAPH_TEST_SCOPE'];
if (SCOPE && !['unit', 'integration', 'database'].includes(SCOPE)) {
  throw new Error(
    `AGENTGRAPH_TEST_SCOPE=${SCOPE}: expected unit, integration or database (or nothing: every file)`,
  );
}
const LEFT_OUT: Record<string, string[]> = { integration: UNIT, database: DB_AGNOSTIC };

/**
 * The SDK packages (`@agentgraph/sdk-runtime` in sdk-templates/typescript, `@agentgraph/sdk` in sdks/typescript) are
 * workspaces whose `exports` point at compiled `dist/` for their users and, under this condition, at their `src/*.ts`:
 * tests run the sources, no build step (tsconfig.json's customConditions says the same to tsc; tsx takes
 * `--conditions=@agentgraph/source`). sdk-templates/typescript/README.md, "Packages".
 */
const SOURCE_CONDITIONS = [
  '@agentgraph/source',
  // Vitest's own default for Node (Vite's server conditions without `module`, which would pick ESM builds that
  // Node itself never loads).
  ...defaultServerConditions.filter((condition) => condition !== 'module'),
];

export default defineConfig({
  ssr: { resolve: { conditions: SOURCE_CONDITIONS } },
  resolve: {
    // graphql 16 ships CJS (`main`) and ESM (`module`). Node (and tsx) load `main`, and CJS dependencies such as
    // @apollo/subgraph always require it; Vite would otherwise pick `module` for our sources, giving two graphql
    // instances ("Cannot use GraphQLSchema from another module or realm"). Pin ours to the one Node loads.
    alias: [{ find: /^graphql$/, replacement: require.resolve('graphql') }],
  },
  test: {
    include:
      SCOPE === 'unit'
        ? UNIT
        : [
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
    exclude: ['**/node_modules/**', ...(LEFT_OUT[SCOPE ?? ''] ?? [])],
    // Two files at a time: most of the suite waits (HTTP round trips, Retry-After, child processes), so two workers
    // on a 2-core machine cut the wall time without starving the timing-bounded checks. .NET builds are serialised
    // across workers (test/src/dotnet-build.ts).
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
  },
});

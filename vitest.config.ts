import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['runtime/test/**/*.test.ts', 'subgraphs/*/test/**/*.test.ts', 'gateway/test/**/*.test.ts', 'codegen/test/**/*.test.ts', 'test/e2e/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
  },
});

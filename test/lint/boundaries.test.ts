/**
 * The folder READMEs' "May import" lines are lint rules (eslint.config.js, "Module boundaries"): a forbidden import
 * fails `npm run lint` with a message quoting the README; an allowed one passes. Lints source text under real file
 * paths (the type-aware rules need a file the TypeScript project knows) with the repository's own configuration.
 */
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const eslint = new ESLint({ cwd: ROOT });

/** The `no-restricted-imports` messages for `code` linted as the file at `filePath` (relative to the root). */
async function boundaryErrors(filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return (result?.messages ?? []).filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
}

describe('module boundaries (eslint no-restricted-imports)', () => {
  it('fails a subgraph importing another subgraph, by package or by relative path', async () => {
    const errors = await boundaryErrors(
      'subgraphs/memory/src/index.ts',
      "export { identitySubgraph } from '@agentgraph/identity';\n" +
        "export { oauthServiceFor } from '../../identity/src/oauth/service.js';\n" +
        "export { catalogSubgraph } from '../../../subgraphs/catalog/src/index.js';\n",
    );
    expect(errors).toHaveLength(3);
    for (const message of errors) expect(message).toContain('subgraphs/memory/README.md says "May import:');
  });

  it('fails a subgraph importing the gateway, and the runtime importing a subgraph or the test harness', async () => {
    expect(
      await boundaryErrors(
        'subgraphs/identity/src/index.ts',
        "export * from '../../../gateway/src/index.js';\n",
      ),
    ).toEqual([expect.stringContaining('subgraphs/identity/README.md')]);
    const runtime = await boundaryErrors(
      'runtime/src/index.ts',
      "export { memorySubgraph } from '@agentgraph/memory';\nexport * from '../../test/src/database.js';\n",
    );
    expect(runtime).toEqual([
      expect.stringContaining('runtime/README.md says "May import: npm packages only.'),
      expect.stringContaining('runtime/README.md'),
    ]);
  });

  it('fails the gateway importing a subgraph outside its composition root', async () => {
    expect(
      await boundaryErrors(
        'gateway/src/gateway.ts',
        "export { identitySubgraph } from '@agentgraph/identity';\n",
      ),
    ).toEqual([expect.stringContaining('gateway/README.md')]);
  });

  it('passes what the READMEs allow', async () => {
    expect(
      await boundaryErrors(
        'subgraphs/memory/src/index.ts',
        "export { createLogger } from '@agentgraph/runtime';\nexport { z } from 'zod';\nexport * from './store.js';\n",
      ),
    ).toEqual([]);
    expect(
      await boundaryErrors(
        'gateway/src/platform.ts',
        "export { identitySubgraph } from '@agentgraph/identity';\n",
      ),
    ).toEqual([]);
    // A subgraph's tests may use the test harness.
    expect(
      await boundaryErrors(
        'subgraphs/memory/test/harness.ts',
        "export * from '../../../test/src/database.js';\n",
      ),
    ).toEqual([]);
  });
});

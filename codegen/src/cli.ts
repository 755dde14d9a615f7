/**
 * `npm run codegen`: compose, then generate everything derived from the schemas: resolver types for each
 * subgraph (and, as the SDK targets land, sdks/<lang>/). Deterministic: the same input writes the same bytes.
 */
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { readSupergraphConfig } from './compose.js';
import { ROOT, runCompose } from './compose-cli.js';
import { generateResolverTypes } from './resolver-types.js';
import { writeIfChanged } from './write-if-changed.js';

async function main(): Promise<number> {
  const { unexplained } = runCompose();
  if (unexplained) return 1;
  for (const sg of readSupergraphConfig(resolve(ROOT, 'supergraph.yaml'))) {
    const dir = resolve(ROOT, 'subgraphs', sg.name);
    const mapperFile = resolve(dir, 'codegen.json');
    const mappers = existsSync(mapperFile)
      ? (JSON.parse(readFileSync(mapperFile, 'utf8')) as { mappers?: Record<string, string> }).mappers
      : undefined;
    const out = resolve(dir, 'src/generated/resolvers.ts');
    const changed = writeIfChanged(out, await generateResolverTypes(sg.name, sg.sdl, mappers ?? {}));
    console.log(`${changed ? 'wrote' : 'unchanged'} subgraphs/${sg.name}/src/generated/resolvers.ts`);
  }
  return 0;
}

main().then(
  (code) => (process.exitCode = code),
  (err) => {
    console.error((err as Error).stack ?? err);
    process.exitCode = 1;
  },
);

/**
 * No stale generated files: the composed supergraph and API schema, the operations manifest and every
 * SDK folder must be byte-identical to what the generator makes now from the sources. Uses the generator's own
 * API (`generateSdks`) in memory and compares with the files on disk (what writing into a temporary folder and
 * diffing would show, without the writes).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateSdks } from '../sdk/generate.js';
import { listFiles } from '../sdk/files.js';
import type { SdkInputs } from '../sdk/inputs.js';
import { MANIFEST_PATH } from '../sdk/manifest.js';
import { isHandWritten, NOT_OURS } from '../sdk/write-target.js';
import type { Violation } from './rules.js';

const read = (path: string) => (existsSync(path) ? readFileSync(path, 'utf8') : undefined);

function compare(root: string, rel: string, expected: string, out: Violation[]) {
  const actual = read(join(root, rel));
  if (actual === undefined)
    out.push({ rule: 'stale', coordinate: rel, message: 'is missing: run npm run codegen' });
  else if (actual !== expected)
    out.push({
      rule: 'stale',
      coordinate: rel,
      message: 'differs from what the generator makes: run npm run codegen',
    });
}

export async function checkStaleness(
  root: string,
  expected: { supergraphFile: string; apiFile: string },
  inputs: SdkInputs,
): Promise<Violation[]> {
  const out: Violation[] = [];
  compare(root, 'schemas/supergraph.graphql', expected.supergraphFile, out);
  compare(root, 'schemas/api.graphql', expected.apiFile, out);
  let generated;
  try {
    generated = await generateSdks(root, { inputs });
  } catch (err) {
    out.push({
      rule: 'stale',
      coordinate: 'sdks',
      message: `the SDK generator fails: ${(err as Error).message}`,
    });
    return out;
  }
  compare(root, MANIFEST_PATH, generated.manifest, out);
  for (const { target, files } of generated.targets) {
    const dir = join(root, target.outDir);
    const want = new Map(files.map((f) => [f.path, f.content]));
    for (const [rel, content] of want) compare(root, `${target.outDir}/${rel}`, content, out);
    const onDisk = existsSync(dir) ? listFiles(dir, NOT_OURS) : []; // not build output (bin/, obj/)
    for (const rel of onDisk)
      if (!want.has(rel) && !isHandWritten(rel, target.handWritten))
        out.push({
          rule: 'stale',
          coordinate: `${target.outDir}/${rel}`,
          message: 'is no longer generated: run npm run codegen (it deletes it)',
        });
  }
  return out;
}

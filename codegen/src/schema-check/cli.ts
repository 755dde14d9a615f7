/**
 * `npm run schema:check -- [--base <git ref | API schema file>] [--out .schema-check/report.md]`: writes the
 * Markdown report (and report.json beside it), prints it, exits 1 on breaking changes or rule violations.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { runSchemaCheck } from './check.js';
import { renderJson, renderMarkdown } from './report.js';
import { baseSpec } from './sources.js';

export const ROOT = resolve(new URL('../../..', import.meta.url).pathname);

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      base: { type: 'string', default: 'HEAD' },
      out: { type: 'string', default: '.schema-check/report.md' },
      root: { type: 'string', default: ROOT },
    },
  });
  const root = resolve(values.root);
  const result = await runSchemaCheck({ root, base: baseSpec(values.base, root) });
  const md = renderMarkdown(result);
  const out = resolve(root, values.out);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, md);
  writeFileSync(join(dirname(out), 'report.json'), renderJson(result));
  process.stdout.write(md);
  return result.ok ? 0 : 1;
}

main().then(
  (code) => (process.exitCode = code),
  (err) => {
    console.error(`schema:check: ${(err as Error).message}`);
    process.exitCode = 2;
  },
);

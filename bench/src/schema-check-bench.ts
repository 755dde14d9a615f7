/**
 * Time of a full schema check on the real schema (target under 5 s warm):
 * `npx tsx bench/src/schema-check-bench.ts [--runs 5] [--base HEAD~1]` prints JSON.
 *
 * Each run is what `npm run schema:check` does, without writing the report: read the base from git, compose both
 * sides, diff the API and every subgraph, lint, validate the curated operations, regenerate the SDKs in memory and
 * compare them with the files. The first run is reported on its own ("cold": prettier and the generator's lazy
 * parts load then, `importMs` is the module loading before it); the others give the median and minimum ("warm").
 */
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';

const t0 = performance.now();
const { runSchemaCheck } = await import('../../codegen/src/schema-check/check.js');
const { baseSpec } = await import('../../codegen/src/schema-check/sources.js');
const { REPO_ROOT } = await import('./lib/proc.js');
const importMs = performance.now() - t0;

const { values } = parseArgs({
  options: { runs: { type: 'string', default: '5' }, base: { type: 'string', default: 'HEAD~1' } },
});
const runs = Number(values.runs);
if (!Number.isInteger(runs) || runs < 2)
  throw new Error('--runs must be an integer of at least 2 (one cold run).');

const times: number[] = [];
let last: Awaited<ReturnType<typeof runSchemaCheck>> | undefined;
for (let i = 0; i < runs; i++) {
  const start = performance.now();
  last = await runSchemaCheck({ root: REPO_ROOT, base: baseSpec(values.base, REPO_ROOT) });
  times.push(performance.now() - start);
}

const round = (ms: number) => Math.round(ms * 10) / 10;
const sorted = times.slice(1).sort((a, b) => a - b);
const mid = Math.floor(sorted.length / 2);
const median = sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
console.log(
  JSON.stringify(
    {
      bench: 'schema-check',
      base: values.base,
      runs,
      result: {
        ok: last!.ok,
        breaking: last!.breaking.length,
        dangerous: last!.dangerous.length,
        safe: last!.safe.length,
        violations: last!.violations.length,
      },
      importMs: round(importMs),
      cold: { totalMs: round(times[0]!) },
      warm: { total: { medianMs: round(median), minMs: round(sorted[0]!) } },
      targetWarmMs: 5000,
    },
    null,
    2,
  ),
);

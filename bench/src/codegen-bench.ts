/**
 * SDK generation time for every target: `npx tsx bench/src/codegen-bench.ts [--runs 5]` prints JSON.
 *
 * Each run reads the inputs, builds the IR and renders every registered target in memory (formatting included,
 * nothing written), as `npm run codegen` does after composition. The first run is reported on its own ("cold":
 * prettier and its plugins load then); the others give the median and minimum ("warm").
 */
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { generateSdks } from '../../codegen/src/sdk/generate.js';
import { REPO_ROOT } from './lib/proc.js';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '5' } } });
const runs = Number(values.runs);
if (!Number.isInteger(runs) || runs < 2)
  throw new Error('--runs must be an integer of at least 2 (one cold run).');

interface Run {
  irMs: number;
  targets: Record<string, number>;
  totalMs: number;
}

const samples: Run[] = [];
let summary: { operations: number; defaultOperations: number; files: Record<string, number> } | undefined;
for (let i = 0; i < runs; i++) {
  const start = performance.now();
  const result = await generateSdks(REPO_ROOT);
  const totalMs = performance.now() - start;
  samples.push({
    irMs: result.irMs,
    targets: Object.fromEntries(result.targets.map((t) => [t.target.name, t.ms])),
    totalMs,
  });
  summary ??= {
    operations: result.ir.operations.length,
    defaultOperations: result.ir.operations.filter((o) => o.origin.kind === 'default').length,
    files: Object.fromEntries(result.targets.map((t) => [t.target.name, t.files.length])),
  };
}

const round = (ms: number) => Math.round(ms * 10) / 10;
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};
const stats = (xs: number[]) => ({ medianMs: round(median(xs)), minMs: round(Math.min(...xs)) });
const [cold, ...warm] = samples;
const targetNames = Object.keys(cold!.targets);

console.log(
  JSON.stringify(
    {
      bench: 'codegen',
      runs,
      ...summary,
      cold: {
        irMs: round(cold!.irMs),
        targets: Object.fromEntries(targetNames.map((n) => [n, round(cold!.targets[n]!)])),
        totalMs: round(cold!.totalMs),
      },
      warm: {
        ir: stats(warm.map((r) => r.irMs)),
        targets: Object.fromEntries(targetNames.map((n) => [n, stats(warm.map((r) => r.targets[n]!))])),
        total: stats(warm.map((r) => r.totalMs)),
      },
    },
    null,
    2,
  ),
);

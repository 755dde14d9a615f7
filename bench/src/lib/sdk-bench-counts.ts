/** The command line the SDK benches share (C# and Python): call and message counts, validated, and passed on as flags. */
import { parseArgs } from 'node:util';
import { z } from 'zod';

export interface SdkBenchCounts {
  calls: number;
  rounds: number;
  messages: number;
  rooms: number;
}

const Counts = z.object({
  calls: z.coerce.number().int().positive(),
  rounds: z.coerce.number().int().positive(),
  messages: z.coerce.number().int().positive(),
  rooms: z.coerce.number().int().positive(),
});

/** `--calls --rounds --messages --rooms` from process.argv, with these defaults. */
export function sdkBenchCounts(defaults: SdkBenchCounts): SdkBenchCounts {
  const { values } = parseArgs({
    options: Object.fromEntries(
      Object.entries(defaults).map(([name, n]) => [name, { type: 'string' as const, default: String(n) }]),
    ),
  });
  return Counts.parse(values);
}

/** The counts as flags for the benchmark program. */
export function countFlags(counts: SdkBenchCounts): string[] {
  return Object.entries(counts).flatMap(([name, n]) => [`--${name}`, String(n)]);
}

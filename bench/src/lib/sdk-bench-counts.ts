/**
 * What the SDK benches share (C# and Python): the command line's call and message counts, validated and passed on
 * as flags, and the shapes of what both benchmark programs report.
 */
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

/** What both SDK benchmark programs report per call beside their plain-client time (its field name differs). */
export const SdkPerCall = z.object({
  sdkUsPerCall: z.number(),
  sdkExtraUsPerCall: z.number(),
  plainCpuUsPerCall: z.number(),
  sdkCpuUsPerCall: z.number(),
  sdkExtraCpuUsPerCall: z.number(),
});

/** Outbox throughput as both SDK benchmark programs report it. */
export const OutboxThroughput = z.object({
  enqueueMs: z.number(),
  enqueuePerSecond: z.number(),
  drainMs: z.number(),
  drainPerSecond: z.number(),
  endToEndPerSecond: z.number(),
});

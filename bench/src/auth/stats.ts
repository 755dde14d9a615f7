/** Exact latency percentiles from recorded samples (the auth bench keeps every sample: a few thousand per run). */

export interface LatencySummary {
  /** Milliseconds, two decimals (the samples are taken with process.hrtime, so sub-millisecond values are real). */
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
  samples: number;
}

const round2 = (n: number) => Math.round(n * 100) / 100;

/** Nearest-rank percentile of ascending `sorted` (p in 0..100); NaN for no samples. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

export function summarizeLatencies(samplesMs: readonly number[]): LatencySummary | null {
  if (samplesMs.length === 0) return null;
  const sorted = Float64Array.from(samplesMs).sort();
  let sum = 0;
  for (const v of sorted) sum += v;
  return {
    p50: round2(percentile(sorted, 50)),
    p90: round2(percentile(sorted, 90)),
    p99: round2(percentile(sorted, 99)),
    max: round2(sorted[sorted.length - 1]!),
    mean: round2(sum / sorted.length),
    samples: sorted.length,
  };
}

/** Median of a non-empty list of numbers. */
export function median(values: readonly number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

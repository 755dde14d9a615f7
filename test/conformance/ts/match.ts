/** Comparisons with the vector format's semantics (README.md, "Matching"). Each returns problems, empty = match. */

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `expected` ⊆ `actual`: objects by subset of keys, arrays element by element with equal length, else equal. */
export function subsetProblems(expected: unknown, actual: unknown, path = '$'): string[] {
  if (isPlainObject(expected)) {
    if (!isPlainObject(actual)) return [`${path}: expected an object, got ${JSON.stringify(actual)}`];
    return Object.entries(expected).flatMap(([k, v]) =>
      k in actual ? subsetProblems(v, actual[k], `${path}.${k}`) : [`${path}.${k}: missing`],
    );
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual) || actual.length !== expected.length) {
      return [`${path}: expected an array of ${expected.length}, got ${JSON.stringify(actual)}`];
    }
    return expected.flatMap((v, i) => subsetProblems(v, actual[i], `${path}[${i}]`));
  }
  return Object.is(expected, actual) || expected === actual
    ? []
    : [`${path}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`];
}

/** Deep equality of JSON values (key order ignored). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (isPlainObject(a) && isPlainObject(b)) {
    const ka = Object.keys(a).sort();
    const kb = Object.keys(b).sort();
    return ka.length === kb.length && ka.every((k, i) => k === kb[i] && jsonEqual(a[k], b[k]));
  }
  if (Array.isArray(a) && Array.isArray(b))
    return a.length === b.length && a.every((v, i) => jsonEqual(v, b[i]));
  return a === b;
}

/** One .NET tick: libm's pow/tanh may differ by an ulp between languages, moving a truncation by one tick. */
export const DELAY_TOLERANCE_MS = 0.0001;

/**
 * Elapsed fake-clock time: epoch milliseconds near 1.7e12 carry only ~0.0002 ms of double precision, so sums of
 * tick-precise delays are compared to within 0.001 ms.
 */
export const ELAPSED_TOLERANCE_MS = 0.001;

export function sleepsProblems(expected: readonly number[], actual: readonly number[]): string[] {
  const same =
    expected.length === actual.length &&
    expected.every((e, i) => Math.abs(e - actual[i]!) <= DELAY_TOLERANCE_MS + 1e-9);
  return same ? [] : [`sleeps: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`];
}

/** A random source that returns a vector's numbers in order and fails loudly when they run out. */
export interface ScriptedRandom {
  (): number;
  readonly consumed: number;
}

export function scriptedRandom(values: readonly number[], file: string): ScriptedRandom {
  let index = 0;
  const next = (() => {
    if (index >= values.length) {
      throw new Error(
        `${file}: the SDK drew random number #${index + 1} but the vector lists ${values.length}`,
      );
    }
    const value = values[index++]!;
    return value;
  }) as ScriptedRandom;
  Object.defineProperty(next, 'consumed', { get: () => index });
  return next;
}

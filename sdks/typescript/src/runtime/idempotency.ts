/**
 * Idempotency keys: one per logical call, made before the first attempt and sent unchanged on every attempt (as
 * the `idempotencyKey` variable and the `Idempotency-Key` header), so the server applies the mutation at most once
 * and answers a retry with the stored result (`extensions.idempotentReplay`). A caller that must survive restarts
 * (the outbox) makes the key itself, persists it, and passes it in.
 */

/** The variable every mutation of the schema declares for its key (docs/architecture.md#schema-conventions). */
export const IDEMPOTENCY_KEY_VARIABLE = 'idempotencyKey';
export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';

/** A random UUID (Web Crypto: Node 20 and every current browser). */
export function randomKey(): string {
  return globalThis.crypto.randomUUID();
}

/**
 * The key of one call: the caller's (`options.idempotencyKey`, or the `idempotencyKey` variable it filled in),
 * else a new one. Two different caller keys are a programming error.
 */
export function resolveIdempotencyKey(
  fromOptions: string | undefined,
  fromVariables: unknown,
  newKey: () => string,
): string {
  const variableKey =
    typeof fromVariables === 'string' && fromVariables.length > 0 ? fromVariables : undefined;
  if (fromOptions !== undefined && variableKey !== undefined && fromOptions !== variableKey) {
    throw new TypeError(
      'The call got two different idempotency keys (options.idempotencyKey and the idempotencyKey variable). ' +
        'Pass one.',
    );
  }
  const key = fromOptions ?? variableKey ?? newKey();
  if (typeof key !== 'string' || key.length === 0) {
    throw new TypeError('The idempotency key must be a non-empty string.');
  }
  return key;
}

/**
 * Errors. A failed call throws an AgentGraphError subclass: one class per code of the error table (`NotFoundError`,
 * `RateLimitedError`, …; `instanceof` works by code), and the client's own `NetworkError`, `TimeoutError`,
 * `InvalidResponseError` and `PrivacyError` (refused before anything is sent, naming paths, never values); an
 * aborted signal throws AbortError. Each says whether retrying can help (`retryable`, `retryAfterMs`) and why the
 * client stopped (`giveUpReason`); the SDK has already retried what it may.
 */
import { AgentGraph, AgentGraphError, NotFoundError, PrivacyError, RateLimitedError } from '../src/index.js';

export async function explain(call: () => Promise<unknown>): Promise<string> {
  try {
    await call();
    return 'ok';
  } catch (err) {
    if (err instanceof NotFoundError) return `not found (correlation id ${err.correlationId})`;
    if (err instanceof RateLimitedError) return `rate limited: come back in ${err.retryAfterMs} ms`;
    if (err instanceof PrivacyError)
      return `refused before sending: ${err.refusals.map((r) => `${r.path} ${r.reason}`).join(', ')}`;
    if (err instanceof AgentGraphError)
      return `${err.code} (retryable: ${err.retryable}, gave up: ${err.giveUpReason ?? 'no'})`;
    throw err; // not the SDK's: a bug to see
  }
}

export async function showErrors(sdk: AgentGraph, baseUrl: string, token: string) {
  const missing = await explain(() =>
    sdk.postMessage({ roomId: crypto.randomUUID(), input: { body: 'hello?' } }),
  );
  // The default privacy policy sends PUBLIC and INTERNAL data only: a message body is PERSONAL.
  const strict = new AgentGraph({
    baseUrl,
    tokenProvider: { getToken: async () => token, refresh: async () => token },
  });
  const refused = await explain(() =>
    strict.postMessage({ roomId: crypto.randomUUID(), input: { body: 'hi' } }),
  );
  return { missing, refused };
}

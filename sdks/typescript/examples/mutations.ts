/**
 * Mutations and idempotency. An idempotent mutation (one declaring $idempotencyKey) gets one key per call, sent as the
 * `idempotencyKey` variable and the `Idempotency-Key` header on every retry. Persist your own key with your record
 * to repeat the same logical call later (after a crash, from another process): the server applies it once and
 * answers the repeat with the stored result. The envelope (`.withResponse()`) says whether it was a replay.
 */
import type { AgentGraph } from '../src/index.js';

export async function postOnce(
  sdk: AgentGraph,
  roomId: string,
  body: string,
  idempotencyKey = crypto.randomUUID(),
) {
  // Awaited: the model, here the PostMessage payload.
  const first = await sdk.postMessage({ roomId, input: { body } }, { idempotencyKey });
  // The same key again, e.g. on the next start: the same message, not a second one.
  const again = await sdk.postMessage({ roomId, input: { body } }, { idempotencyKey }).withResponse();
  return {
    seq: first.postMessage.message.seq,
    sameMessage: again.data.postMessage.message.id === first.postMessage.message.id,
    replayed: again.replayed, // true: the server answered with the stored result
    attempts: again.attempts, // HTTP requests this call took (retries included)
    idempotencyKey: again.idempotencyKey, // the key sent
    status: again.response.status, // the HTTP answer that carried the result
    correlationId: again.response.headers.get('x-correlation-id'),
  };
}

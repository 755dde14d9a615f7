/**
 * Node only: a durable outbox. Messages survive a crash or a long outage and are delivered exactly once, in order
 * per room (the idempotency key is made at enqueue and persisted with the entry).
 */
import { type AgentGraph, Outbox, operations, sendWithClient, SqliteOutboxStore } from '../src/index.js';

export async function postThroughOutbox(sdk: AgentGraph, file: string, roomId: string, bodies: string[]) {
  const outbox = await Outbox.open({
    store: SqliteOutboxStore.open(file),
    send: sendWithClient(sdk.client, operations),
  });
  for (const body of bodies) {
    await outbox.enqueue({ room: roomId, operation: 'PostMessage', variables: { roomId, input: { body } } });
  }
  await outbox.drain(); // or outbox.start() to keep sending in the background
  return outbox.deadLetters(); // entries the server refused for good (POISON): show them to the user
}

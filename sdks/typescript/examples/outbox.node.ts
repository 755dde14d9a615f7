/**
 * Node only: a durable outbox (SQLite, better-sqlite3: `npm install better-sqlite3`). Messages survive a crash or a
 * long outage and are delivered exactly once, in order per room (the idempotency key is made at enqueue and persisted
 * with the entry). Offline and "wait" failures retry until the TTL (7 days); an entry the server refuses, or fails on
 * three times (`maxFailedDeliveries`), goes to the dead letters (POISON) with the reason, and its room goes on.
 */
import { type AgentGraph, Outbox, operations, sendWithClient, SqliteOutboxStore } from '../src/index.js';

export async function postThroughOutbox(sdk: AgentGraph, file: string, roomId: string, bodies: string[]) {
  const outbox = await Outbox.open({
    store: SqliteOutboxStore.open(file), // one process owns the file
    send: sendWithClient(sdk.client, operations),
    maxFailedDeliveries: 3, // the default
  });
  try {
    for (const body of bodies) {
      await outbox.enqueue({
        room: roomId,
        operation: 'PostMessage',
        variables: { roomId, input: { body } },
      });
    }
    await outbox.drain(); // or outbox.start() to keep sending in the background
    const sent = (await outbox.list({ state: 'SENT' })).length;
    // Entries that will not be delivered: show them to the user, export them, or revive(id) after a fix.
    const deadLetters = (await outbox.deadLetters()).map((e) => ({
      id: e.id,
      reason: e.lastError?.code,
      failedDeliveries: e.failedDeliveries,
    }));
    return { sent, deadLetters, exported: await outbox.exportDeadLetters() };
  } finally {
    await outbox.close();
  }
}

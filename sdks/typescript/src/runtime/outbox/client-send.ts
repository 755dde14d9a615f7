/**
 * The usual send function: the SDK client's `execute` with the entry's persisted idempotency key, so every send
 * of an entry — the client's own retries, the outbox's later resends, a resend after a crash — carries the key
 * made at enqueue. The client's errors (AgentGraphError: code, retryable, retryAfterMs) decide RETRYABLE or
 * POISON.
 */
import type { AgentGraphClient, OperationSpec } from '../client.js';
import { AgentGraphError } from '../errors.js';
import type { OutboxSend } from './outbox.js';

/** The operations an outbox may send, by the name entries carry (generated code exports them). */
export type OutboxOperations =
  Readonly<Record<string, OperationSpec>> | ((name: string) => OperationSpec | undefined);

export function sendWithClient(
  client: Pick<AgentGraphClient, 'execute'>,
  operations: OutboxOperations,
): OutboxSend {
  const lookup = typeof operations === 'function' ? operations : (name: string) => operations[name];
  return async (entry, signal) => {
    const op = lookup(entry.operation);
    if (!op || op.kind !== 'mutation' || !op.idempotent) {
      // Not retryable: the entry goes to the dead-letter list, where the app sees the mistake.
      throw new AgentGraphError({
        code: 'OUTBOX_UNKNOWN_OPERATION',
        retryable: false,
        message: op
          ? `Outbox entry ${entry.id}: ${entry.operation} is not an idempotent mutation; only those go through the outbox.`
          : `Outbox entry ${entry.id}: no operation named ${entry.operation} was given to sendWithClient.`,
      });
    }
    return (await client.execute(op, entry.variables, { signal, idempotencyKey: entry.idempotencyKey })).data;
  };
}

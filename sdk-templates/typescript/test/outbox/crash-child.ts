/**
 * Child process of the crash test: opens the outbox in the file given as argv[2], enqueues 3 entries in rooms A
 * and B, and sends with a function that prints `SENDING <room> <key>` and never returns. The parent kills it
 * with SIGKILL while both room heads are SENDING.
 */
import { Outbox } from '../../src/outbox/index.js';
import { SqliteOutboxStore } from '../../src/outbox/index.node.js';

const file = process.argv[2]!;
const outbox = await Outbox.open({
  store: SqliteOutboxStore.open(file),
  send: (entry) => {
    process.stdout.write(`SENDING ${entry.room} ${entry.idempotencyKey}\n`);
    return new Promise(() => undefined);
  },
});
for (const [room, n] of [
  ['A', 1],
  ['A', 2],
  ['B', 3],
] as const) {
  await outbox.enqueue({ room, operation: 'PostMessage', variables: { n } });
}
process.stdout.write('ENQUEUED\n');
await outbox.drain();

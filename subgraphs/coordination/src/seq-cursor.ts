/** Cursors of the lists ordered by a sequence number (room messages, intents and their history, inboxes, stop events). */
import { badInput, type SortKey } from '@agentgraph/runtime';

/** The sequence number a cursor holds; BAD_USER_INPUT naming `argument` when it holds anything else. */
export function seqKey(key: SortKey, argument = 'after'): number {
  const seq = key[0];
  if (key.length !== 1 || typeof seq !== 'number' || !Number.isInteger(seq)) {
    throw badInput(
      `The cursor in "${argument}" is not valid for this list. Start again without "${argument}".`,
      { argument },
    );
  }
  return seq;
}

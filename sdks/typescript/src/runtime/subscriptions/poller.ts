/**
 * One round of the polling fallback: run the backlog query through the client (its retries, typed errors and
 * privacy gate) page after page until the server has nothing more, yielding the new events (sequence above the last
 * handled) in order. The round returns where the next one continues (the last page's cursor), and a retryable
 * failure instead of throwing it (the next round, one poll interval later, tries again); anything else throws.
 *
 * A subscription that started without a position (`resume.after` unset) and has seen no event takes its position
 * from its first round: that round delivers nothing and ends at the newest event, as a live-only stream would.
 */
import type { AgentGraphClient } from '../client.js';
import { AbortError, AgentGraphError, InvalidResponseError } from '../errors.js';
import type { SequenceGate } from './sequence.js';
import type { PollPage, PollSpec } from './types.js';

export interface PollRoundInput<TEvent> {
  client: AgentGraphClient;
  poll: PollSpec<TEvent>;
  gate: SequenceGate;
  /** Where the previous round ended. */
  cursor: string | undefined;
  seqOf: (event: TEvent) => number;
  /** The subscription has no position yet: this round only finds the newest event. */
  positionOnly: boolean;
  signal: AbortSignal;
}

export interface PollRoundResult {
  /** Where the next round continues. */
  cursor: string | undefined;
  duplicates: number;
  /** A retryable failure (after the client's own retries): try again next round. */
  error?: AgentGraphError;
}

function checkPage<TEvent>(page: PollPage<TEvent> | undefined, operation: string): PollPage<TEvent> {
  if (!page || !Array.isArray(page.events) || typeof page.hasMore !== 'boolean') {
    throw new InvalidResponseError({
      code: 'INVALID_RESPONSE',
      retryable: false,
      message:
        `poll.select for ${operation} must return { events: [...], cursor, hasMore }; check that the backlog ` +
        `query selects the connection's nodes and pageInfo { hasNextPage endCursor }.`,
    });
  }
  return page;
}

export async function* pollRound<TEvent>(
  input: PollRoundInput<TEvent>,
): AsyncGenerator<{ event: TEvent; seq: number }, PollRoundResult, undefined> {
  const { client, poll, gate, seqOf, signal, positionOnly } = input;
  const operation = poll.operation.name;
  let cursor = input.cursor;
  let duplicates = 0;
  const seen = new Set<string>();
  for (;;) {
    let data: unknown;
    try {
      const result = await client.execute(poll.operation, poll.variables({ afterSeq: gate.last, cursor }), {
        signal,
      });
      data = result.data;
    } catch (err) {
      if (err instanceof AbortError) throw err;
      if (err instanceof AgentGraphError && err.retryable) return { cursor, duplicates, error: err };
      throw err;
    }
    const page = checkPage(poll.select(data), operation);
    for (const event of page.events) {
      const seq = seqOf(event);
      if (positionOnly) {
        gate.advanceTo(seq);
        continue;
      }
      if (!gate.admit(seq)) {
        duplicates += 1;
        continue;
      }
      yield { event, seq };
    }
    const next = page.cursor ?? undefined;
    if (next !== undefined) cursor = next;
    if (!page.hasMore) return { cursor, duplicates };
    if (next === undefined || seen.has(next)) {
      throw new InvalidResponseError({
        code: 'INVALID_RESPONSE',
        retryable: false,
        message:
          `The backlog query ${operation} says there is more but gave no new cursor; stopping instead of ` +
          `looping. Select pageInfo { hasNextPage endCursor } and return endCursor as cursor.`,
      });
    }
    seen.add(next);
  }
}

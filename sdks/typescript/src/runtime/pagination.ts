/**
 * Cursor auto-pagination over Relay connections: an AsyncIterable of nodes across pages, fetching the next page
 * only when the consumer has taken every node of the current one. Cancellation: once the signal aborts, the
 * iterator throws AbortError at its next step and never requests another page (an in-flight page request gets the
 * signal too and rejects with AbortError).
 */
import { AbortError, InvalidResponseError } from './errors.js';

export interface PageInfo {
  hasNextPage: boolean;
  endCursor?: string | null;
}

export interface Connection<TNode> {
  edges?: ReadonlyArray<{ node: TNode } | null> | null;
  nodes?: ReadonlyArray<TNode> | null;
  pageInfo: PageInfo;
}

/** Fetches the page after `after` (undefined for the first page). */
export type FetchPage<TNode> = (
  after: string | undefined,
  signal: AbortSignal | undefined,
) => Promise<Connection<TNode>>;

export interface PaginateOptions {
  signal?: AbortSignal;
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new AbortError(signal.reason);
}

function nodesOf<TNode>(page: Connection<TNode>): TNode[] {
  if (page.edges) return page.edges.filter((e): e is { node: TNode } => e !== null).map((e) => e.node);
  return [...(page.nodes ?? [])];
}

export function paginate<TNode>(
  fetchPage: FetchPage<TNode>,
  options: PaginateOptions = {},
): AsyncIterable<TNode> {
  const { signal } = options;
  return {
    async *[Symbol.asyncIterator]() {
      let after: string | undefined;
      const seen = new Set<string>();
      for (;;) {
        throwIfAborted(signal);
        const page = await fetchPage(after, signal);
        throwIfAborted(signal);
        if (!page || typeof page.pageInfo !== 'object' || page.pageInfo === null) {
          throw new InvalidResponseError({
            code: 'INVALID_RESPONSE',
            retryable: false,
            message: 'A page has no pageInfo: the selection must include pageInfo { hasNextPage endCursor }.',
          });
        }
        for (const node of nodesOf(page)) {
          throwIfAborted(signal);
          yield node;
        }
        if (!page.pageInfo.hasNextPage) return;
        const cursor = page.pageInfo.endCursor;
        if (typeof cursor !== 'string' || cursor.length === 0 || seen.has(cursor)) {
          throw new InvalidResponseError({
            code: 'INVALID_RESPONSE',
            retryable: false,
            message:
              'The server says there is a next page but gave no new endCursor; stopping instead of looping. ' +
              'Select pageInfo { hasNextPage endCursor }.',
          });
        }
        seen.add(cursor);
        after = cursor;
      }
    },
  };
}

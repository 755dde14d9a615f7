/**
 * Keyset paging on (timestamp, id), newest first. The cursor carries the row's own values at full (microsecond)
 * precision, read as text from PostgreSQL: a millisecond JS Date would land between rows that share a millisecond
 * and skip or repeat them.
 */
import {
  badInput,
  pageRequest,
  toConnection,
  type Connection,
  type PageArgs,
  type SortKey,
  type SubgraphContext,
} from '@agentgraph/runtime';

export const DEFAULT_PAGE_SIZE = 20;

/** SQL for a timestamptz column as the text a cursor holds (UTC, microseconds). */
export const cursorTime = (column: string): string =>
  `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

const TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export interface After {
  time: string;
  id: string;
}

export interface Keyed<T> {
  node: T;
  sortTime: string;
  id: string;
}

/**
 * One page: validates first/after against the scope (another list, parent or tenant → BAD_USER_INPUT), asks
 * `fetch` for limit + 1 rows after the position, and builds the connection.
 */
export async function timeKeysetPage<T>(
  ctx: SubgraphContext,
  scope: string,
  args: PageArgs,
  fetch: (limit: number, after: After | null) => Promise<Keyed<T>[]>,
): Promise<Connection<T>> {
  const req = pageRequest(ctx.cursors, scope, args, {
    maxPageSize: ctx.config.limits.maxPageSize,
    defaultPageSize: DEFAULT_PAGE_SIZE,
  });
  const after = req.from ? decodeTimeKey(req.from) : null;
  const rows = await fetch(req.limit + 1, after);
  const conn = toConnection(ctx.cursors, scope, req, rows, (r): SortKey => [r.sortTime, r.id]);
  return {
    pageInfo: conn.pageInfo,
    edges: conn.edges.map((e) => ({ cursor: e.cursor, node: e.node.node })),
  };
}

function decodeTimeKey(key: SortKey): After {
  const [time, id] = key;
  if (
    key.length !== 2 ||
    typeof time !== 'string' ||
    typeof id !== 'string' ||
    !TIME.test(time) ||
    !UUID.test(id)
  ) {
    // MAC-valid but not our shape: a cursor from an older format. Same answer as any foreign cursor.
    throw badInput(
      'The cursor in "after" is not valid for this list (altered, expired, or from another list). Start again without "after".',
      { argument: 'after' },
    );
  }
  return { time, id };
}

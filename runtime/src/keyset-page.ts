/**
 * Keyset paging over (sort value, id) for forward-only lists: by name (`anyKey`), or by time (`timeKey`) with the
 * timestamp at full (microsecond) precision, read as text from PostgreSQL (`cursorTime`); a millisecond JS Date would
 * land between rows that share a millisecond and skip or repeat them. The SQL stays in the subgraph: it gets the
 * decoded position and the row limit, and returns rows with their keys.
 */
import { pageRequest, toConnection, type Connection, type PageArgs, type SortKey } from './connection.js';
import { badInput } from './errors.js';
import type { SubgraphContext } from './subgraph-server.js';

export const DEFAULT_KEYSET_PAGE_SIZE = 20;

/** SQL for a timestamptz column as the text a cursor holds (UTC, microseconds). */
export const cursorTime = (column: string): string =>
  `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

const TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A position in a list: the first sort value (name or time) and the id that breaks ties. */
export interface KeysetAfter {
  value: string;
  id: string;
}

export interface Keyed<T> {
  node: T;
  key: KeysetAfter;
}

export const timeKey = (value: string): boolean => TIME.test(value);
export const anyKey = (_value: string): boolean => true;

/**
 * One page: validates first/after against the scope (another list, parent or tenant → BAD_USER_INPUT), asks
 * `fetch` for limit + 1 rows after the position, and builds the connection.
 */
export async function keysetPage<T>(
  ctx: SubgraphContext,
  scope: string,
  args: PageArgs,
  validValue: (value: string) => boolean,
  fetch: (limit: number, after: KeysetAfter | null) => Promise<Keyed<T>[]>,
): Promise<Connection<T>> {
  const req = pageRequest(ctx.cursors, scope, args, {
    maxPageSize: ctx.config.limits.maxPageSize,
    defaultPageSize: DEFAULT_KEYSET_PAGE_SIZE,
  });
  const after = req.from ? decodeKey(req.from, validValue) : null;
  const rows = await fetch(req.limit + 1, after);
  const conn = toConnection(ctx.cursors, scope, req, rows, (r): SortKey => [r.key.value, r.key.id]);
  return {
    pageInfo: conn.pageInfo,
    edges: conn.edges.map((e) => ({
      node: e.node.node,
      get cursor() {
        return e.cursor;
      },
    })),
  };
}

function decodeKey(key: SortKey, validValue: (value: string) => boolean): KeysetAfter {
  const [value, id] = key;
  if (
    key.length !== 2 ||
    typeof value !== 'string' ||
    typeof id !== 'string' ||
    !validValue(value) ||
    !UUID.test(id)
  ) {
    // MAC-valid but not our shape: a cursor from an older format. Same answer as any foreign cursor.
    throw badInput(
      'The cursor in "after" is not valid for this list (altered, expired, or from another list). Start again without "after".',
      { argument: 'after' },
    );
  }
  return { value, id };
}

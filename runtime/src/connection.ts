/**
 * Relay cursor connections over keyset pagination (docs/architecture.md#schema-conventions). A cursor carries the sort key of its row and
 * the list it belongs to (scope: connection, tenant, parent, filters), MACed with the server's cursor secret:
 * stable under inserts and deletes, opaque, and rejected when forged, altered or used on another list.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { badInput } from './errors.js';

export type KeyPart = string | number;
export type SortKey = readonly KeyPart[];

export interface PageArgs {
  first?: number | null;
  after?: string | null;
  last?: number | null;
  before?: string | null;
}

export interface Edge<T> {
  cursor: string;
  node: T;
}

export interface Connection<T> {
  edges: Edge<T>[];
  pageInfo: {
    hasNextPage: boolean;
    hasPreviousPage: boolean;
    startCursor: string | null;
    endCursor: string | null;
  };
}

export class CursorCodec {
  private readonly key: Buffer;
  constructor(secret: string) {
    if (secret.length < 32) throw new Error('cursor secret must be at least 32 characters');
    this.key = createHmac('sha256', 'agentgraph-cursor-v1').update(secret).digest();
  }

  private mac(scope: string, body: string): Buffer {
    return createHmac('sha256', this.key)
      .update(scope)
      .update('\u0000')
      .update(body)
      .digest()
      .subarray(0, 16);
  }

  encode(scope: string, key: SortKey): string {
    const body = Buffer.from(JSON.stringify(key)).toString('base64url');
    return `${body}.${this.mac(scope, body).toString('base64url')}`;
  }

  decode(scope: string, cursor: string, argument: string): SortKey {
    const invalid = () =>
      badInput(
        `The cursor in "${argument}" is not valid for this list (altered, expired, or from another list). Start again without "${argument}".`,
        { argument },
      );
    const dot = cursor.indexOf('.');
    if (cursor.length > 512 || dot <= 0) throw invalid();
    const body = cursor.slice(0, dot);
    const given = Buffer.from(cursor.slice(dot + 1), 'base64url');
    const expected = this.mac(scope, body);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw invalid();
    try {
      const key: unknown = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
      if (!Array.isArray(key) || !key.every((k) => typeof k === 'string' || typeof k === 'number')) {
        throw invalid();
      }
      return key as SortKey;
    } catch {
      throw invalid();
    }
  }
}

export interface PageRequest {
  direction: 'forward' | 'backward';
  /** Rows wanted (the fetch asks for one more to learn whether another page exists). */
  limit: number;
  /** Sort key to start after (forward) or before (backward); null from the start (or the end). */
  from: SortKey | null;
}

export function pageRequest(
  codec: CursorCodec,
  scope: string,
  args: PageArgs,
  opts: { maxPageSize: number; defaultPageSize: number; allowBackward?: boolean },
): PageRequest {
  const { first, after, last, before } = args;
  const check = (name: string, n: number) => {
    if (!Number.isInteger(n) || n < 0 || n > opts.maxPageSize) {
      throw badInput(
        `"${name}" must be between 0 and ${opts.maxPageSize}; page through larger lists with cursors.`,
        {
          argument: name,
          maxPageSize: opts.maxPageSize,
        },
      );
    }
  };
  if (last != null || before != null) {
    if (!opts.allowBackward) throw badInput('This list pages forward only: use first/after.');
    if (first != null || after != null) {
      throw badInput('Use either first/after or last/before, not both.');
    }
    const n = last ?? opts.defaultPageSize;
    check('last', n);
    return { direction: 'backward', limit: n, from: before ? codec.decode(scope, before, 'before') : null };
  }
  const n = first ?? opts.defaultPageSize;
  check('first', n);
  return { direction: 'forward', limit: n, from: after ? codec.decode(scope, after, 'after') : null };
}

/**
 * Builds the connection from rows fetched with limit + 1 in the request's direction (backward rows come
 * newest-first and are put back in list order here).
 */
export function toConnection<T>(
  codec: CursorCodec,
  scope: string,
  req: PageRequest,
  fetched: T[],
  keyOf: (row: T) => SortKey,
): Connection<T> {
  const more = fetched.length > req.limit;
  const rows = fetched.slice(0, req.limit);
  if (req.direction === 'backward') rows.reverse();
  // Cursors are computed when read (the default resolver reads the property): a query that does not select
  // them costs no HMAC, and each is computed at most once.
  const edges = rows.map((node): Edge<T> => {
    let cursor: string | undefined;
    return {
      node,
      get cursor() {
        return (cursor ??= codec.encode(scope, keyOf(node)));
      },
    };
  });
  const first = edges[0];
  const last = edges.at(-1);
  return {
    edges,
    pageInfo: {
      hasNextPage: req.direction === 'forward' ? more : req.from !== null,
      hasPreviousPage: req.direction === 'backward' ? more : req.from !== null,
      get startCursor() {
        return first?.cursor ?? null;
      },
      get endCursor() {
        return last?.cursor ?? null;
      },
    },
  };
}

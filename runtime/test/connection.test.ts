import { describe, expect, it } from 'vitest';
import { CursorCodec, pageRequest, toConnection, type SortKey } from '../src/connection.js';
import { expectAppError } from './helpers.js';

const codec = new CursorCodec('s'.repeat(32));
const scope = 'Room.messages:tenant-a:room-1';
const page = { maxPageSize: 100, defaultPageSize: 20 };

/** Replaces one character of a base64url string with another valid one. */
function flip(s: string, at: number): string {
  const c = s[at] === 'A' ? 'B' : 'A';
  return s.slice(0, at) + c + s.slice(at + 1);
}

describe('CursorCodec', () => {
  it('round-trips a sort key within its scope', () => {
    const key: SortKey = ['2030-01-01T00:00:00.000Z', '7f1c0d1e-0000-4000-8000-000000000001', 42];
    const cursor = codec.encode(scope, key);
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(codec.decode(scope, cursor, 'after')).toEqual(key);
  });

  it('is deterministic and opaque-looking', () => {
    expect(codec.encode(scope, ['a', 1])).toBe(codec.encode(scope, ['a', 1]));
    expect(codec.encode(scope, ['a', 1])).not.toBe(codec.encode(scope, ['a', 2]));
  });

  it('rejects a cursor whose body was altered', async () => {
    const cursor = codec.encode(scope, ['2030-01-01', 'id-1']);
    const [, mac] = cursor.split('.');
    const forgedBody = Buffer.from(JSON.stringify(['2030-01-01', 'id-2'])).toString('base64url');
    const e = await expectAppError(
      () => codec.decode(scope, `${forgedBody}.${mac}`, 'after'),
      'BAD_USER_INPUT',
    );
    expect(e.extensions['argument']).toBe('after');
    await expectAppError(() => codec.decode(scope, flip(cursor, 0), 'after'), 'BAD_USER_INPUT');
  });

  it('rejects a cursor whose MAC was altered', async () => {
    const cursor = codec.encode(scope, ['k']);
    await expectAppError(
      () => codec.decode(scope, flip(cursor, cursor.length - 2), 'before'),
      'BAD_USER_INPUT',
    );
    await expectAppError(() => codec.decode(scope, cursor.slice(0, -2), 'before'), 'BAD_USER_INPUT');
  });

  it('rejects a cursor from another list, parent or tenant', async () => {
    const cursor = codec.encode(scope, ['k']);
    await expectAppError(
      () => codec.decode('Room.messages:tenant-b:room-1', cursor, 'after'),
      'BAD_USER_INPUT',
    );
    await expectAppError(
      () => codec.decode('Room.messages:tenant-a:room-2', cursor, 'after'),
      'BAD_USER_INPUT',
    );
    await expectAppError(
      () => codec.decode('Workspace.records:tenant-a:room-1', cursor, 'after'),
      'BAD_USER_INPUT',
    );
  });

  it('rejects a cursor made with another secret', async () => {
    const other = new CursorCodec('t'.repeat(32));
    await expectAppError(() => codec.decode(scope, other.encode(scope, ['k']), 'after'), 'BAD_USER_INPUT');
  });

  it.each([
    ['empty', ''],
    ['no dot', 'abcdef'],
    ['leading dot', '.abc'],
    ['too long', `${'a'.repeat(600)}.b`],
    ['not base64', '!!!.???'],
  ])('rejects garbage (%s)', async (_, cursor) => {
    await expectAppError(() => codec.decode(scope, cursor, 'after'), 'BAD_USER_INPUT');
  });

  it('rejects a correctly MACed body that is not a list of keys', async () => {
    // Only the server can MAC, but decode must still not trust the shape of what it MACed.
    const mac = (codec as unknown as { mac(scope: string, body: string): Buffer }).mac.bind(codec);
    for (const value of [{ not: 'an array' }, [{ nested: true }], 'text']) {
      const body = Buffer.from(JSON.stringify(value)).toString('base64url');
      const cursor = `${body}.${mac(scope, body).toString('base64url')}`;
      await expectAppError(() => codec.decode(scope, cursor, 'after'), 'BAD_USER_INPUT');
    }
    const notJson = Buffer.from('{oops').toString('base64url');
    await expectAppError(
      () => codec.decode(scope, `${notJson}.${mac(scope, notJson).toString('base64url')}`, 'after'),
      'BAD_USER_INPUT',
    );
  });

  it('refuses a short secret', () => {
    expect(() => new CursorCodec('short')).toThrow(/at least 32/);
  });
});

describe('pageRequest', () => {
  it('defaults to the first page forward', () => {
    expect(pageRequest(codec, scope, {}, page)).toEqual({ direction: 'forward', limit: 20, from: null });
  });

  it('decodes after into the key to start after', () => {
    const after = codec.encode(scope, ['t', 'id']);
    expect(pageRequest(codec, scope, { first: 5, after }, page)).toEqual({
      direction: 'forward',
      limit: 5,
      from: ['t', 'id'],
    });
  });

  it('caps first and last at the maximum page size', async () => {
    expect(pageRequest(codec, scope, { first: 100 }, page).limit).toBe(100);
    const e = await expectAppError(() => pageRequest(codec, scope, { first: 101 }, page), 'BAD_USER_INPUT');
    expect(e.extensions).toMatchObject({ argument: 'first', maxPageSize: 100 });
    await expectAppError(() => pageRequest(codec, scope, { first: 100_000 }, page), 'BAD_USER_INPUT');
    await expectAppError(() => pageRequest(codec, scope, { first: -1 }, page), 'BAD_USER_INPUT');
    await expectAppError(() => pageRequest(codec, scope, { first: 1.5 }, page), 'BAD_USER_INPUT');
    await expectAppError(
      () => pageRequest(codec, scope, { last: 101 }, { ...page, allowBackward: true }),
      'BAD_USER_INPUT',
    );
  });

  it('pages backward only where allowed', async () => {
    await expectAppError(() => pageRequest(codec, scope, { last: 5 }, page), 'BAD_USER_INPUT');
    const before = codec.encode(scope, ['k']);
    expect(pageRequest(codec, scope, { last: 5, before }, { ...page, allowBackward: true })).toEqual({
      direction: 'backward',
      limit: 5,
      from: ['k'],
    });
  });

  it('rejects mixing directions', async () => {
    const opts = { ...page, allowBackward: true };
    const c = codec.encode(scope, ['k']);
    await expectAppError(() => pageRequest(codec, scope, { first: 1, last: 1 }, opts), 'BAD_USER_INPUT');
    await expectAppError(() => pageRequest(codec, scope, { after: c, before: c }, opts), 'BAD_USER_INPUT');
    await expectAppError(() => pageRequest(codec, scope, { first: 1, before: c }, opts), 'BAD_USER_INPUT');
  });

  it('rejects a foreign cursor in after', async () => {
    const after = codec.encode('Other.list:tenant-a:', ['k']);
    await expectAppError(() => pageRequest(codec, scope, { after }, page), 'BAD_USER_INPUT');
  });
});

describe('toConnection', () => {
  const rows = [1, 2, 3, 4].map((n) => ({ id: `id-${n}`, n }));
  const keyOf = (r: { id: string; n: number }): SortKey => [r.n, r.id];

  it('builds edges from limit + 1 rows and reports a next page', () => {
    const req = pageRequest(codec, scope, { first: 3 }, page);
    const conn = toConnection(codec, scope, req, rows, keyOf);
    expect(conn.edges.map((e) => e.node.n)).toEqual([1, 2, 3]);
    expect(conn.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: false });
    expect(codec.decode(scope, conn.pageInfo.endCursor!, 'after')).toEqual([3, 'id-3']);
    expect(conn.pageInfo.startCursor).toBe(conn.edges[0]!.cursor);
  });

  it('reports the last page and a previous page after a cursor', () => {
    const after = codec.encode(scope, [0, 'id-0']);
    const req = pageRequest(codec, scope, { first: 5, after }, page);
    const conn = toConnection(codec, scope, req, rows, keyOf);
    expect(conn.edges).toHaveLength(4);
    expect(conn.pageInfo).toMatchObject({ hasNextPage: false, hasPreviousPage: true });
  });

  it('puts backward pages (fetched newest first) back in list order', () => {
    const req = pageRequest(codec, scope, { last: 2 }, { ...page, allowBackward: true });
    const conn = toConnection(codec, scope, req, [...rows].reverse(), keyOf);
    expect(conn.edges.map((e) => e.node.n)).toEqual([3, 4]);
    expect(conn.pageInfo).toMatchObject({ hasPreviousPage: true, hasNextPage: false });
  });

  it('answers an empty list with null cursors', () => {
    const conn = toConnection(codec, scope, pageRequest(codec, scope, {}, page), [], keyOf);
    expect(conn).toEqual({
      edges: [],
      pageInfo: { hasNextPage: false, hasPreviousPage: false, startCursor: null, endCursor: null },
    });
  });
});

describe('toConnection computes cursors only when read', () => {
  it('encodes no cursor for a query that selects none, and each at most once', () => {
    const codec = new CursorCodec('x'.repeat(32));
    let encoded = 0;
    const encode = codec.encode.bind(codec);
    codec.encode = (scope, key) => {
      encoded++;
      return encode(scope, key);
    };
    const req = { direction: 'forward' as const, limit: 2, from: null };
    const conn = toConnection(codec, 'L:t:', req, [{ id: 1 }, { id: 2 }, { id: 3 }], (r) => [r.id]);
    expect(conn.edges.map((e) => e.node.id)).toEqual([1, 2]);
    expect(encoded).toBe(0);
    const cursor = conn.edges[1]!.cursor;
    expect(conn.pageInfo.endCursor).toBe(cursor);
    expect(conn.pageInfo.hasNextPage).toBe(true);
    expect(encoded).toBe(1);
    expect(codec.decode('L:t:', cursor, 'after')).toEqual([2]);
  });
});

import { describe, expect, it } from 'vitest';
import { AbortError, type Connection, paginate } from '../src/index.js';

function pages(n: number) {
  const fetched: (string | undefined)[] = [];
  const fetchPage = async (after: string | undefined): Promise<Connection<number>> => {
    fetched.push(after);
    const index = after === undefined ? 0 : Number(after);
    return {
      edges: [{ node: index * 10 }, null, { node: index * 10 + 1 }],
      pageInfo: { hasNextPage: index + 1 < n, endCursor: String(index + 1) },
    };
  };
  return { fetched, fetchPage };
}

describe('paginate', () => {
  it('skips null edges and reads `nodes` connections too', async () => {
    const { fetchPage } = pages(2);
    const out: number[] = [];
    for await (const node of paginate(fetchPage)) out.push(node);
    expect(out).toEqual([0, 1, 10, 11]);
    const nodesOnly = paginate(async () => ({ nodes: ['a', 'b'], pageInfo: { hasNextPage: false } }));
    const got: string[] = [];
    for await (const n of nodesOnly) got.push(n);
    expect(got).toEqual(['a', 'b']);
  });

  it('fetches nothing more when the consumer stops early', async () => {
    const { fetched, fetchPage } = pages(5);
    for await (const node of paginate(fetchPage)) if (node === 10) break;
    expect(fetched).toEqual([undefined, '1']);
  });

  it('stops with AbortError at the next step after an abort, without another fetch', async () => {
    const { fetched, fetchPage } = pages(5);
    const controller = new AbortController();
    const out: number[] = [];
    const err = await (async () => {
      for await (const node of paginate(fetchPage, { signal: controller.signal })) {
        out.push(node);
        if (node === 1) controller.abort(new Error('user left'));
      }
    })().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AbortError);
    expect((err as AbortError).cause).toEqual(new Error('user left'));
    expect(out).toEqual([0, 1]);
    expect(fetched).toEqual([undefined]);
  });

  it('refuses to loop on a repeated cursor', async () => {
    const iterable = paginate(async () => ({
      nodes: [1],
      pageInfo: { hasNextPage: true, endCursor: 'same' },
    }));
    const err = await (async () => {
      for await (const _ of iterable) void _;
    })().catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'INVALID_RESPONSE' });
  });
});

import { describe, expect, it } from 'vitest';
import { APIPromise } from '../src/api-promise.js';
import type { ExecuteResult } from '../src/client.js';

const envelope = (data: { n: number }): ExecuteResult<{ n: number }> => ({
  data,
  replayed: true,
  attempts: 2,
  idempotencyKey: 'key-1',
  response: { status: 200, headers: new Headers({ 'x-request-id': 'r1' }), body: { data }, bytes: 12 },
});

describe('APIPromise', () => {
  it('awaits to the data; withResponse() gives the envelope of the same call', async () => {
    let calls = 0;
    const call = () => new APIPromise((calls++, Promise.resolve(envelope({ n: 1 }))));
    expect(await call()).toEqual({ n: 1 });
    const promise = call();
    const { data, replayed, attempts, idempotencyKey, response } = await promise.withResponse();
    expect({ data, replayed, attempts, idempotencyKey, status: response.status }).toEqual({
      data: { n: 1 },
      replayed: true,
      attempts: 2,
      idempotencyKey: 'key-1',
      status: 200,
    });
    expect(response.headers.get('x-request-id')).toBe('r1');
    expect(await promise).toEqual({ n: 1 }); // the same result, no second call
    expect(calls).toBe(2);
  });

  it('is a Promise: then, catch, finally, Promise.all; derived promises are plain Promises', async () => {
    const promise = new APIPromise(Promise.resolve(envelope({ n: 2 })));
    expect(promise).toBeInstanceOf(Promise);
    const chained = promise.then((d) => d.n * 10);
    expect(chained).not.toBeInstanceOf(APIPromise);
    expect(await chained).toBe(20);
    expect(await Promise.all([promise, new APIPromise(Promise.resolve(envelope({ n: 3 })))])).toEqual([
      { n: 2 },
      { n: 3 },
    ]);
    let finished = false;
    expect(await promise.finally(() => (finished = true))).toEqual({ n: 2 });
    expect(finished).toBe(true);
  });

  it('rejects with the call error, both awaited and through withResponse()', async () => {
    const error = new Error('NOT_FOUND');
    const failing = () => new APIPromise<{ n: number }>(Promise.reject(error));
    await expect(failing()).rejects.toBe(error);
    await expect(failing().withResponse()).rejects.toBe(error);
    expect(await failing().catch((e: unknown) => (e as Error).message)).toBe('NOT_FOUND');
  });
});

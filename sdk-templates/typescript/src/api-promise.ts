/**
 * `APIPromise`: what a generated method returns (the Stainless shape, as in openai-node). Awaiting it gives the
 * model, the operation's `data`; `.withResponse()` gives the whole envelope of the same call (`data`, `replayed`,
 * `attempts`, `idempotencyKey`, `extensions`, and the HTTP `response` that carried the answer). One request either
 * way: the call starts when the method is called, and both read its one result.
 */
import type { ExecuteResult } from './client.js';

export class APIPromise<TData> extends Promise<TData> {
  // `then` of a derived promise must build a plain Promise, not call this constructor.
  static override get [Symbol.species](): PromiseConstructor {
    return Promise;
  }

  readonly #result: Promise<ExecuteResult<TData>>;
  #data: Promise<TData> | undefined;

  constructor(result: Promise<ExecuteResult<TData>>) {
    // The value this Promise itself settles with is never read: then/catch/finally read the call's result.
    super((resolve) => resolve(undefined as TData));
    this.#result = result;
  }

  /** The envelope: `{ data, replayed, attempts, idempotencyKey, extensions, response }`. */
  withResponse(): Promise<ExecuteResult<TData>> {
    return this.#result;
  }

  private data(): Promise<TData> {
    this.#data ??= this.#result.then((result) => result.data);
    return this.#data;
  }

  override then<TResult1 = TData, TResult2 = never>(
    onfulfilled?: ((value: TData) => TResult1 | PromiseLike<TResult1>) | null,
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- as Promise.then types it
    onrejected?: ((reason: any) => TResult2 | PromiseLike<TResult2>) | null,
  ): Promise<TResult1 | TResult2> {
    return this.data().then(onfulfilled, onrejected);
  }

  override catch<TResult = never>(
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- as Promise.catch types it
    onrejected?: ((reason: any) => TResult | PromiseLike<TResult>) | null,
  ): Promise<TData | TResult> {
    return this.data().catch(onrejected);
  }

  override finally(onfinally?: (() => void) | null): Promise<TData> {
    return this.data().finally(onfinally);
  }
}

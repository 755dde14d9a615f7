/**
 * Streams live longer than the token that opened them. The guard ends a subscription when its token is revoked
 * (within the revocation list's propagation, i.e. a second) or expires: it aborts the stream's signal with an
 * UNAUTHENTICATED AppError, and `endWithReason` turns that into a last event the client can act on (refresh the
 * token, reconnect with its resume argument) before the stream completes.
 */
import type { ExecutionResult } from 'graphql';
import { AppError } from './errors.js';
import type { RevocationList } from './revocation.js';
import type { AuthContext } from './tenancy.js';

export interface StreamGuard {
  /**
   * Before a stream opens: when a cached stop answer would refuse the caller, asks the refusing sources to re-read
   * (`refresh`), so a stream opened right after a lift on another replica (whose notification has not arrived yet)
   * is not refused on stale news. A stop that is still engaged refuses in `watch` as before.
   */
  admit(auth: AuthContext | null): Promise<void>;
  /** Watches one stream until `unwatch(abort)` (no closure per stream: an idle stream costs two map entries). */
  watch(auth: AuthContext | null, abort: AbortController): void;
  /** Stops watching a stream (when it ends); a stream not watched, or no longer, is ignored. */
  unwatch(abort: AbortController): void;
  close(): void;
}
/**
 * Another reason a stream must end (or may not start) while its token is still good, e.g. coordination's emergency
 * stop. `check` answers for one caller now; `subscribe` says when answers may have changed.
 */
export interface StreamStopSource {
  check(auth: AuthContext): AppError | null;
  subscribe(listener: () => void): () => void;
  /** Re-reads the source's state (one read started after the call); for a refusal that may be stale. */
  refresh?(): Promise<void>;
}

/** A stop source a subgraph starts for one server: ready before it listens, closed with it. */
export interface StartedStreamStop extends StreamStopSource {
  ready: Promise<void>;
  close(): Promise<void>;
}

export interface StreamGuardOptions {
  revocations?: Pick<RevocationList, 'isRevoked' | 'subscribe'>;
  stops?: readonly StreamStopSource[];
  /** Epoch milliseconds (tests). */
  now?: () => number;
  setTimer?: (fn: () => void, ms: number) => { clear(): void };
}

const MAX_TIMER_MS = 2 ** 31 - 1;

function defaultTimer(fn: () => void, ms: number): { clear(): void } {
  const t = setTimeout(fn, Math.min(ms, MAX_TIMER_MS));
  t.unref();
  return { clear: () => clearTimeout(t) };
}

function expired(): AppError {
  return new AppError(
    'UNAUTHENTICATED',
    'The access token of this stream expired. Refresh it and resubscribe with your resume argument.',
  );
}

/**
 * Token expiry for every watched stream on one timer: streams are kept in buckets by their token's `exp` (whole epoch
 * seconds, so streams of the same second share a bucket), and a single timer is set for the earliest bucket. When it
 * fires, every bucket that is due is aborted and the timer is set for the next one. A timer that fires early (delays
 * are capped at 2^31-1 ms) aborts nothing and is set again.
 */
class ExpiryWheel {
  private readonly buckets = new Map<number, Set<AbortController>>();
  private timer: { clear(): void } | null = null;
  /** The bucket (epoch seconds) the timer is set for; Infinity when none. */
  private timerAt = Infinity;

  constructor(
    private readonly now: () => number,
    private readonly setTimer: (fn: () => void, ms: number) => { clear(): void },
    private readonly onExpired: (abort: AbortController) => void,
  ) {}

  add(at: number, abort: AbortController): void {
    let bucket = this.buckets.get(at);
    if (!bucket) this.buckets.set(at, (bucket = new Set()));
    bucket.add(abort);
    if (at < this.timerAt) this.arm(at);
  }

  /** Leaves the timer as it is: when it fires on an emptied bucket, it only sets itself for the next one. */
  delete(at: number, abort: AbortController): void {
    const bucket = this.buckets.get(at);
    if (!bucket?.delete(abort) || bucket.size) return;
    this.buckets.delete(at);
  }

  clear(): void {
    this.buckets.clear();
    this.timer?.clear();
    this.timer = null;
    this.timerAt = Infinity;
  }

  private arm(at: number): void {
    this.timer?.clear();
    this.timerAt = at;
    this.timer = this.setTimer(() => this.fire(), Math.max(0, at * 1000 - this.now()));
  }

  private fire(): void {
    this.timer = null;
    this.timerAt = Infinity;
    const now = this.now();
    let next = Infinity;
    for (const [at, bucket] of this.buckets) {
      if (at * 1000 > now) {
        if (at < next) next = at;
        continue;
      }
      this.buckets.delete(at);
      for (const abort of bucket) this.onExpired(abort);
    }
    // Aborting may have added streams (a listener resubscribing at once); they armed the timer themselves.
    if (next < this.timerAt) this.arm(next);
  }
}

export function createStreamGuard(opts: StreamGuardOptions = {}): StreamGuard {
  const now = opts.now ?? Date.now;
  const watched = new Map<AbortController, AuthContext>();
  const wheel = new ExpiryWheel(now, opts.setTimer ?? defaultTimer, (abort) => {
    watched.delete(abort);
    abort.abort(expired());
  });
  const stops = opts.stops ?? [];
  const stopReason = (auth: AuthContext): AppError | null => {
    for (const s of stops) {
      const error = s.check(auth);
      if (error) return error;
    }
    return null;
  };
  const revokedError = () =>
    new AppError(
      'UNAUTHENTICATED',
      'The access token of this stream was revoked. Sign in again to resubscribe.',
    );
  const unsubscribe = opts.revocations?.subscribe(() => {
    for (const [abort, auth] of watched) {
      if (opts.revocations!.isRevoked(auth)) abort.abort(revokedError());
    }
  });
  const unsubscribeStops = stops.map((s) =>
    s.subscribe(() => {
      for (const [abort, auth] of watched) {
        const error = stopReason(auth);
        if (error) abort.abort(error);
      }
    }),
  );
  return {
    async admit(auth) {
      if (!auth) return;
      const stale = stops.filter((s) => s.refresh && s.check(auth));
      await Promise.all(stale.map((s) => s.refresh!()));
    },
    watch(auth, abort) {
      if (!auth || abort.signal.aborted) return;
      // Revoked between its check (when the stream's context was made) and now: the list's news came in between.
      if (opts.revocations?.isRevoked(auth)) {
        abort.abort(revokedError());
        return;
      }
      const refused = stopReason(auth);
      if (refused) {
        abort.abort(refused);
        return;
      }
      watched.set(abort, auth);
      if (auth.expiresAt !== undefined) wheel.add(auth.expiresAt, abort);
    },
    unwatch(abort) {
      const auth = watched.get(abort);
      if (!auth) return;
      watched.delete(abort);
      if (auth.expiresAt !== undefined) wheel.delete(auth.expiresAt, abort);
    },
    close() {
      unsubscribe?.();
      for (const u of unsubscribeStops) u();
      watched.clear();
      wheel.clear();
    },
  };
}

/**
 * What `endWithReason` does besides passing results through. Called as methods of this object, so one object per
 * stream whose prototype holds them costs no closure per stream.
 */
export interface EndWithReasonOptions<S, T = S> {
  /**
   * Run once when the stream ends or is cancelled (`return()`), before the source is told to return. For a stream
   * whose `signal` nothing else aborts (graphql-sse single-connection operations), it must abort it: a source
   * suspended in an await answers `return()` only once it resumes.
   */
  cleanup?(): void;
  /**
   * A source that throws (or whose `map` throws) ends with this last result instead of the error (the error stays
   * with this stream: graphql-sse's single-connection mode would otherwise end every operation of the connection).
   */
  onError?(err: unknown): ExecutionResult;
  /** Maps each source value to what the stream yields (e.g. a subscription's event to its execution result). */
  map?(value: S): T | Promise<T>;
}

const DONE = Object.freeze({ value: undefined, done: true }) as IteratorReturnResult<undefined>;

/**
 * The iterator `endWithReason` returns. A class with explicit promises, not an async generator or async methods:
 * `return()` acts at once even while a `next()` is pending, and an idle stream holds one object, one listener on its
 * signal and one pending promise, which the source's next result settles or the signal's abort does, whichever comes
 * first (no suspended async function, no race).
 */
class GuardedStream<S, T> implements AsyncIterator<T | ExecutionResult> {
  private ended = false;
  private listening = false;
  /** The pending `next()`: its promise and the functions that settle it. */
  private pending: Promise<IteratorResult<T | ExecutionResult>> | null = null;
  private resolve: ((result: IteratorResult<T | ExecutionResult>) => void) | null = null;
  private reject: ((err: unknown) => void) | null = null;
  /** The source's settlement handlers, bound once per stream (not per `next()`). */
  private readonly onStep: (step: IteratorResult<S>) => void;
  private readonly onFailure: (err: unknown) => void;

  constructor(
    private readonly it: AsyncIterator<S>,
    private readonly signal: AbortSignal,
    private readonly opts: EndWithReasonOptions<S, T>,
  ) {
    this.onStep = this.step.bind(this);
    this.onFailure = this.fail.bind(this);
  }

  next(): Promise<IteratorResult<T | ExecutionResult>> {
    // One at a time, in order (graphql-sse never overlaps them; a caller that does waits its turn).
    if (this.pending) return this.pending.then(() => this.next());
    if (this.ended) return Promise.resolve(DONE);
    if (this.signal.aborted) return Promise.resolve(this.stopped());
    if (!this.listening) {
      this.listening = true;
      this.signal.addEventListener('abort', this, { once: true });
    }
    const pending = new Promise<IteratorResult<T | ExecutionResult>>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    this.pending = pending;
    let next: Promise<IteratorResult<S>>;
    try {
      next = this.it.next();
    } catch (err) {
      this.fail(err);
      return pending;
    }
    next.then(this.onStep, this.onFailure);
    return pending;
  }

  async return(): Promise<IteratorResult<T | ExecutionResult>> {
    this.end();
    return DONE;
  }

  async throw(err?: unknown): Promise<IteratorResult<T | ExecutionResult>> {
    this.end();
    throw err;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  /** The signal's abort (EventListener object: no closure): a pending `next()` answers with the reason now. */
  handleEvent(): void {
    this.answerStopped();
  }

  /** Answers the pending `next()` with the abort's reason (taken first: ending would answer it with DONE). */
  private answerStopped(): void {
    const resolve = this.resolve;
    if (!resolve) return;
    this.pending = this.resolve = this.reject = null;
    resolve(this.stopped());
  }

  /** Answers the pending `next()`, if any, with `result`. */
  private settle(result: IteratorResult<T | ExecutionResult>): void {
    const resolve = this.resolve;
    this.pending = this.resolve = this.reject = null;
    resolve?.(result);
  }

  private step(step: IteratorResult<S>): void {
    if (!this.pending) return; // answered already (aborted, ended)
    if (step.done) {
      this.end();
      return;
    }
    if (!this.opts.map) {
      this.settle(step as unknown as IteratorResult<T>);
      return;
    }
    let mapped: T | Promise<T>;
    try {
      mapped = this.opts.map(step.value);
    } catch (err) {
      this.fail(err);
      return;
    }
    if (!(mapped instanceof Promise)) {
      this.deliver(mapped);
      return;
    }
    mapped.then(
      (value) => this.deliver(value),
      (err: unknown) => this.fail(err),
    );
  }

  private deliver(value: T): void {
    if (!this.pending) return;
    if (this.signal.aborted) this.answerStopped();
    else this.settle({ value, done: false });
  }

  private fail(err: unknown): void {
    if (!this.pending) return;
    if (this.ended) {
      this.settle(DONE);
      return;
    }
    const { resolve, reject } = this;
    this.pending = this.resolve = this.reject = null;
    this.end();
    if (this.opts.onError) resolve!({ value: this.opts.onError(err), done: false });
    else reject!(err);
  }

  private stopped(): IteratorResult<T | ExecutionResult> {
    const reason: unknown = this.signal.reason;
    this.end();
    return reason instanceof AppError ? { value: { errors: [reason] }, done: false } : DONE;
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    if (this.listening) this.signal.removeEventListener('abort', this);
    this.opts.cleanup?.();
    // A pending next() ends now (its source may answer late or never).
    if (this.pending) this.settle(DONE);
    // Not awaited: a source suspended in an await finishes its return() only when it resumes, and the stream must
    // end now. The source cleans up (its finally blocks run) as soon as it does resume.
    Promise.resolve(this.it.return?.()).catch(() => undefined);
  }
}

const NO_OPTIONS: EndWithReasonOptions<never> = {};

/**
 * Passes a subscription's results through (mapped by `opts.map` when given) until `signal` aborts; then, if the abort
 * carries an AppError, sends it as a last result, and completes (closing the source), whether or not the source
 * itself watches the signal.
 */
export function endWithReason<S, T = S>(
  source: AsyncIterable<S>,
  signal: AbortSignal,
  opts: EndWithReasonOptions<S, T> = NO_OPTIONS as EndWithReasonOptions<S, T>,
): AsyncGenerator<T | ExecutionResult> {
  return new GuardedStream<S, T>(source[Symbol.asyncIterator](), signal, opts) as unknown as AsyncGenerator<
    T | ExecutionResult
  >;
}

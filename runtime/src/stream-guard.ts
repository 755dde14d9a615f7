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
  /** Watches one stream; returns the function to call when it ends. */
  watch(auth: AuthContext | null, abort: AbortController): () => void;
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

export function createStreamGuard(opts: StreamGuardOptions = {}): StreamGuard {
  const now = opts.now ?? Date.now;
  const setTimer = opts.setTimer ?? defaultTimer;
  const watched = new Map<AbortController, AuthContext>();
  const stops = opts.stops ?? [];
  const stopReason = (auth: AuthContext): AppError | null => {
    for (const s of stops) {
      const error = s.check(auth);
      if (error) return error;
    }
    return null;
  };
  const unsubscribe = opts.revocations?.subscribe(() => {
    for (const [abort, auth] of watched) {
      if (opts.revocations!.isRevoked(auth)) {
        abort.abort(
          new AppError(
            'UNAUTHENTICATED',
            'The access token of this stream was revoked. Sign in again to resubscribe.',
          ),
        );
      }
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
      if (!auth) return () => undefined;
      const refused = stopReason(auth);
      if (refused) {
        abort.abort(refused);
        return () => undefined;
      }
      watched.set(abort, auth);
      const timer =
        auth.expiresAt === undefined
          ? null
          : setTimer(
              () =>
                abort.abort(
                  new AppError(
                    'UNAUTHENTICATED',
                    'The access token of this stream expired. Refresh it and resubscribe with your resume argument.',
                  ),
                ),
              Math.max(0, auth.expiresAt * 1000 - now()),
            );
      return () => {
        watched.delete(abort);
        timer?.clear();
      };
    },
    close() {
      unsubscribe?.();
      for (const u of unsubscribeStops) u();
      watched.clear();
    },
  };
}

const ABORTED = Symbol('aborted');

export interface EndWithReasonOptions {
  /**
   * Run once when the stream ends or is cancelled (`return()`), before the source is told to return. For a stream
   * whose `signal` nothing else aborts (graphql-sse single-connection operations), it must abort it: a source
   * suspended in an await answers `return()` only once it resumes.
   */
  cleanup?: () => void;
  /**
   * A source that throws ends with this last result instead of the error (the error stays with this stream:
   * graphql-sse's single-connection mode would otherwise end every operation of the connection).
   */
  onError?: (err: unknown) => ExecutionResult;
}

/**
 * Passes a subscription's results through until `signal` aborts; then, if the abort carries an AppError, sends it
 * as a last result, and completes (closing the source), whether or not the source itself watches the signal.
 * A plain iterator, not an async generator: `return()` acts at once even while a `next()` is pending, and an idle
 * stream holds one pending promise chain, not two.
 */
export function endWithReason<T>(
  source: AsyncIterable<T>,
  signal: AbortSignal,
  opts: EndWithReasonOptions = {},
): AsyncGenerator<T | ExecutionResult> {
  const it = source[Symbol.asyncIterator]();
  const DONE = { value: undefined, done: true } as IteratorReturnResult<undefined>;
  let ended = false;
  let aborted: Promise<typeof ABORTED> | null = null;
  const end = () => {
    if (ended) return;
    ended = true;
    opts.cleanup?.();
    // Not awaited: a source suspended in an await finishes its return() only when it resumes, and the stream must
    // end now. The source cleans up (its finally blocks run) as soon as it does resume.
    Promise.resolve(it.return?.()).catch(() => undefined);
  };
  const stopped = (): IteratorResult<T | ExecutionResult> => {
    const reason: unknown = signal.reason;
    end();
    return reason instanceof AppError ? { value: { errors: [reason] }, done: false } : DONE;
  };
  const iterator = {
    async next(): Promise<IteratorResult<T | ExecutionResult>> {
      if (ended) return DONE;
      if (signal.aborted) return stopped();
      aborted ??= new Promise((resolve) =>
        signal.addEventListener('abort', () => resolve(ABORTED), { once: true }),
      );
      try {
        const next = await Promise.race([it.next(), aborted]);
        if (ended) return DONE;
        if (next === ABORTED) return stopped();
        if (next.done) {
          end();
          return DONE;
        }
        return next;
      } catch (err) {
        if (ended) return DONE;
        end();
        if (opts.onError) return { value: opts.onError(err), done: false };
        throw err;
      }
    },
    async return(): Promise<IteratorResult<T | ExecutionResult>> {
      end();
      return DONE;
    },
    async throw(err?: unknown): Promise<IteratorResult<T | ExecutionResult>> {
      end();
      throw err;
    },
    [Symbol.asyncIterator]() {
      return iterator;
    },
  };
  return iterator as unknown as AsyncGenerator<T | ExecutionResult>;
}

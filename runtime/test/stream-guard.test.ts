/** The stream guard on a fake clock and a fake revocation list: streams end on expiry and on revocation. */
import { describe, expect, it } from 'vitest';
import { AppError } from '../src/errors.js';
import { createStreamGuard, endWithReason } from '../src/stream-guard.js';
import type { AuthContext } from '../src/tenancy.js';

function fakeTimers() {
  const timers: { at: number; fn: () => void; live: boolean }[] = [];
  let now = 1_000_000;
  return {
    now: () => now,
    setTimer(fn: () => void, ms: number) {
      const t = { at: now + ms, fn, live: true };
      timers.push(t);
      return { clear: () => void (t.live = false) };
    },
    /** When the timers not yet fired or cleared are due (fake epoch ms). */
    pending: () => timers.filter((t) => t.live).map((t) => t.at),
    advance(ms: number) {
      now += ms;
      for (const t of timers) {
        if (t.live && t.at <= now) {
          t.live = false;
          t.fn();
        }
      }
    },
  };
}

const auth = (over: Partial<AuthContext> = {}): AuthContext => ({
  tenantId: 't',
  principalId: 'u',
  role: 'OPERATOR',
  scopes: ['api:read'],
  tokenId: 'jti-1',
  expiresAt: 1_000 + 60, // epoch seconds: 60 s after the fake clock's start
  ...over,
});

describe('stream guard', () => {
  it('aborts a stream with UNAUTHENTICATED exactly when its token expires', () => {
    const clock = fakeTimers();
    const guard = createStreamGuard({ now: clock.now, setTimer: clock.setTimer });
    const abort = new AbortController();
    guard.watch(auth(), abort);
    clock.advance(59_999);
    expect(abort.signal.aborted).toBe(false);
    clock.advance(1);
    expect(abort.signal.aborted).toBe(true);
    expect(abort.signal.reason).toBeInstanceOf(AppError);
    expect((abort.signal.reason as AppError).code).toBe('UNAUTHENTICATED');
    expect((abort.signal.reason as AppError).message).toContain('expired');
  });

  it('aborts only the streams whose token the revocation list now refuses; unwatched streams are left alone', () => {
    const clock = fakeTimers();
    const revoked = new Set<string>();
    let notify = () => undefined as void;
    const guard = createStreamGuard({
      now: clock.now,
      setTimer: clock.setTimer,
      revocations: {
        isRevoked: (a) => revoked.has(a.tokenId!),
        subscribe: (l) => ((notify = l), () => undefined),
      },
    });
    const a = new AbortController();
    const b = new AbortController();
    const c = new AbortController();
    guard.watch(auth({ tokenId: 'a' }), a);
    guard.watch(auth({ tokenId: 'b' }), b);
    guard.watch(auth({ tokenId: 'c' }), c);
    guard.unwatch(c);
    revoked.add('a');
    revoked.add('c');
    notify();
    expect(a.signal.aborted).toBe(true);
    expect((a.signal.reason as AppError).message).toContain('revoked');
    expect(b.signal.aborted).toBe(false);
    expect(c.signal.aborted).toBe(false);
    // An anonymous stream has nothing to expire or revoke.
    const anon = new AbortController();
    guard.watch(null, anon);
    clock.advance(3_600_000);
    expect(anon.signal.aborted).toBe(false);
  });

  it('keeps one timer for every expiry, armed for the earliest, and aborts each stream exactly at its exp', () => {
    const clock = fakeTimers();
    const guard = createStreamGuard({ now: clock.now, setTimer: clock.setTimer });
    const at = (seconds: number) => 1_000_000 + seconds * 1000;
    const late = new AbortController();
    const sameSecond = [new AbortController(), new AbortController()];
    const early = new AbortController();
    const leaving = new AbortController();
    guard.watch(auth({ expiresAt: 1_000 + 90 }), late);
    expect(clock.pending()).toEqual([at(90)]);
    for (const a of sameSecond) guard.watch(auth({ expiresAt: 1_000 + 60 }), a);
    // An earlier expiry re-arms the one timer; a later one leaves it.
    expect(clock.pending()).toEqual([at(60)]);
    guard.watch(auth({ expiresAt: 1_000 + 30 }), early);
    guard.watch(auth({ expiresAt: 1_000 + 45 }), leaving);
    expect(clock.pending()).toEqual([at(30)]);
    guard.unwatch(leaving);
    // The armed bucket emptied by unwatch keeps its timer, which then finds nothing due and arms the next.
    const gone = new AbortController();
    guard.watch(auth({ expiresAt: 1_000 + 20 }), gone);
    guard.unwatch(gone);
    expect(clock.pending()).toEqual([at(20)]);
    clock.advance(20_000);
    expect(gone.signal.aborted).toBe(false);
    expect(clock.pending()).toEqual([at(30)]);

    clock.advance(9_999);
    expect(early.signal.aborted).toBe(false);
    clock.advance(1);
    expect((early.signal.reason as AppError).message).toContain('expired');
    // The bucket of 45 s went with its last stream: the next timer is for 60 s.
    expect(clock.pending()).toEqual([at(60)]);
    clock.advance(15_000);
    expect(leaving.signal.aborted).toBe(false);
    clock.advance(14_999);
    expect(sameSecond.map((a) => a.signal.aborted)).toEqual([false, false]);
    clock.advance(1);
    expect(sameSecond.map((a) => a.signal.aborted)).toEqual([true, true]);
    expect(late.signal.aborted).toBe(false);
    expect(clock.pending()).toEqual([at(90)]);
    clock.advance(30_000);
    expect(late.signal.aborted).toBe(true);
    expect(clock.pending()).toEqual([]);
    // Unwatching an expired (or never watched) stream is harmless; close drops the timer.
    guard.unwatch(late);
    guard.unwatch(new AbortController());
    guard.watch(auth({ expiresAt: 1_000 + 200 }), new AbortController());
    expect(clock.pending()).toEqual([at(200)]);
    guard.close();
    expect(clock.pending()).toEqual([]);
  });

  it('a timer that fires before the earliest expiry (capped delays) aborts nothing and is armed again', () => {
    let now = 0;
    const timers: Array<{ fn: () => void; ms: number }> = [];
    const guard = createStreamGuard({
      now: () => now,
      // Fires at most 1,000 ms later, whatever it was asked for.
      setTimer: (fn, ms) => {
        timers.push({ fn, ms });
        return { clear: () => undefined };
      },
    });
    const abort = new AbortController();
    guard.watch(auth({ expiresAt: 5 }), abort);
    expect(timers.map((t) => t.ms)).toEqual([5_000]);
    now = 1_000;
    timers[0]!.fn();
    expect(abort.signal.aborted).toBe(false);
    expect(timers.map((t) => t.ms)).toEqual([5_000, 4_000]);
    now = 5_000;
    timers[1]!.fn();
    expect(abort.signal.aborted).toBe(true);
    expect(timers).toHaveLength(2);
  });

  it('refuses to watch a stream whose token was revoked since it was checked', () => {
    const clock = fakeTimers();
    const revoked = new Set<string>(['late']);
    const guard = createStreamGuard({
      now: clock.now,
      setTimer: clock.setTimer,
      revocations: { isRevoked: (a) => revoked.has(a.tokenId!), subscribe: () => () => undefined },
    });
    const late = new AbortController();
    guard.watch(auth({ tokenId: 'late' }), late);
    expect((late.signal.reason as AppError).code).toBe('UNAUTHENTICATED');
    expect((late.signal.reason as AppError).message).toContain('revoked');
    const fine = new AbortController();
    guard.watch(auth({ tokenId: 'fine' }), fine);
    expect(fine.signal.aborted).toBe(false);
  });

  it('admit re-reads only a source that would refuse, and then watch acts on the fresh answer', async () => {
    const stopped = new Set<string>(['t']);
    const refreshes: string[] = [];
    const source = (name: string, fresh: () => void) => ({
      check: (a: AuthContext) =>
        stopped.has(`${name}:${a.tenantId}`) || (name === 'stop' && stopped.has(a.tenantId))
          ? new AppError('EMERGENCY_STOP', 'stopped')
          : null,
      subscribe: () => () => undefined,
      refresh: async () => {
        refreshes.push(name);
        fresh();
      },
    });
    // The cache says tenant t is stopped; a fresh read says it was lifted.
    const guard = createStreamGuard({
      stops: [source('stop', () => stopped.delete('t')), source('other', () => {})],
    });
    await guard.admit(auth());
    expect(refreshes).toEqual(['stop']);
    const lifted = new AbortController();
    guard.watch(auth(), lifted);
    expect(lifted.signal.aborted).toBe(false);
    // Still engaged after the fresh read: refused.
    stopped.add('other:t');
    await guard.admit(auth());
    expect(refreshes).toEqual(['stop', 'other']);
    const refused = new AbortController();
    guard.watch(auth(), refused);
    expect((refused.signal.reason as AppError).code).toBe('EMERGENCY_STOP');
    // Nobody to refuse, nothing to read; an anonymous caller is not checked.
    await guard.admit(auth({ tenantId: 'u' }));
    await guard.admit(null);
    expect(refreshes).toEqual(['stop', 'other']);
  });

  it('endWithReason passes results, then the abort reason as a last event, and closes the source', async () => {
    const abort = new AbortController();
    let closed = false;
    let release = () => undefined as void;
    async function* source() {
      try {
        yield { data: { n: 1 } };
        // A source that does not watch the signal: it waits for its next value.
        await new Promise<void>((r) => (release = r));
        yield { data: { n: 2 } };
      } finally {
        closed = true;
      }
    }
    const out = endWithReason(source(), abort.signal);
    expect((await out.next()).value).toEqual({ data: { n: 1 } });
    const pending = out.next();
    abort.abort(new AppError('UNAUTHENTICATED', 'revoked'));
    const last = await pending;
    expect((last.value as { errors: AppError[] }).errors[0]!.code).toBe('UNAUTHENTICATED');
    expect((await out.next()).done).toBe(true);
    // The source is told to return; it finishes when it resumes, and its value 2 is never sent.
    release();
    await new Promise((r) => setImmediate(r));
    expect(closed).toBe(true);
  });
});

describe('endWithReason', () => {
  /** A source whose next() answers only when the test says so. */
  function manualSource<T>() {
    const waiting: Array<{ resolve: (r: IteratorResult<T>) => void; reject: (e: unknown) => void }> = [];
    let returned = 0;
    const it: AsyncIterableIterator<T> = {
      next: () => new Promise((resolve, reject) => waiting.push({ resolve, reject })),
      return: async () => {
        returned++;
        return { value: undefined, done: true };
      },
      [Symbol.asyncIterator]() {
        return it;
      },
    };
    return {
      it,
      waiting,
      returned: () => returned,
      push: (value: T) => waiting.shift()!.resolve({ value, done: false }),
      fail: (err: unknown) => waiting.shift()!.reject(err),
    };
  }

  it('maps each value (sync or async), answers return() at once while a next() waits, and cleans up once', async () => {
    const source = manualSource<number>();
    const abort = new AbortController();
    let cleanups = 0;
    const out = endWithReason(source.it, abort.signal, {
      map: (n: number) => (n % 2 ? { data: { n } } : Promise.resolve({ data: { n, even: true } })),
      cleanup: () => void cleanups++,
    });
    const first = out.next();
    source.push(1);
    expect(await first).toEqual({ value: { data: { n: 1 } }, done: false });
    const second = out.next();
    source.push(2);
    expect(await second).toEqual({ value: { data: { n: 2, even: true } }, done: false });
    const waiting = out.next();
    expect(await out.return(undefined)).toEqual({ value: undefined, done: true });
    expect(await waiting).toEqual({ value: undefined, done: true });
    expect(await out.next()).toEqual({ value: undefined, done: true });
    expect(cleanups).toBe(1);
    expect(source.returned()).toBe(1);
    // The source answering late changes nothing.
    source.push(3);
    expect(await out.next()).toEqual({ value: undefined, done: true });
  });

  it('turns a failing source into the onError result, then completes; without onError the error is thrown', async () => {
    const source = manualSource<number>();
    let cleanups = 0;
    const out = endWithReason(source.it, new AbortController().signal, {
      cleanup: () => void cleanups++,
      onError: (err) => ({ errors: [new AppError('SERVICE_UNAVAILABLE', String((err as Error).message))] }),
    });
    const pending = out.next();
    source.fail(new Error('gone'));
    const last = await pending;
    expect((last.value as { errors: AppError[] }).errors[0]!.message).toBe('gone');
    expect(await out.next()).toEqual({ value: undefined, done: true });
    expect(cleanups).toBe(1);

    const bare = manualSource<number>();
    const plain = endWithReason(bare.it, new AbortController().signal);
    const failing = plain.next();
    bare.fail(new Error('boom'));
    await expect(failing).rejects.toThrow('boom');
  });

  it('ends without a last event when the abort carries no AppError, and at once when already aborted', async () => {
    const source = manualSource<number>();
    const abort = new AbortController();
    const out = endWithReason(source.it, abort.signal);
    const pending = out.next();
    abort.abort();
    expect(await pending).toEqual({ value: undefined, done: true });
    expect(source.returned()).toBe(1);

    const stopped = new AbortController();
    stopped.abort(new AppError('EMERGENCY_STOP', 'stopped'));
    const late = endWithReason(manualSource<number>().it, stopped.signal);
    expect(((await late.next()).value as { errors: AppError[] }).errors[0]!.code).toBe('EMERGENCY_STOP');
    expect(await late.next()).toEqual({ value: undefined, done: true });
  });
});

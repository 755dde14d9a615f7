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
    const unwatch = guard.watch(auth({ tokenId: 'c' }), c);
    unwatch();
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

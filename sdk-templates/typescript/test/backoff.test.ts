import { describe, expect, it } from 'vitest';
import {
  AgentGraphError,
  type AgentGraphErrorInit,
  DecorrelatedJitterBackoff,
  decideRetry,
  decorrelatedJitterBackoffV2,
} from '../src/index.js';
import { MAX_TIMESPAN_TICKS } from '../src/backoff.js';

describe('decorrelated jitter backoff (Polly v8 DecorrelatedJitterBackoffV2)', () => {
  it('gives the hand-computed delays for a random sequence (see the conformance vectors for the arithmetic)', () => {
    const randoms = [0.5, 0.25, 0.75, 0.1];
    const backoff = new DecorrelatedJitterBackoff(200, undefined, () => randoms.shift()!);
    expect([0, 1, 2, 3].map((a) => backoff.next(a))).toEqual([179.4809, 152.6177, 626.3998, 264.2467]);
  });

  it('truncates to whole .NET ticks (0.0001 ms)', () => {
    for (let i = 0; i < 200; i++) {
      const { delayMs } = decorrelatedJitterBackoffV2(i % 6, 200, 0, () => (i * 0.618) % 1);
      expect(Number.isInteger(Math.round(delayMs * 10_000))).toBe(true);
      expect(Math.abs(delayMs * 10_000 - Math.round(delayMs * 10_000))).toBeLessThan(1e-6);
    }
  });

  it('returns 0 for a zero base delay without drawing a random number (as Polly)', () => {
    let drawn = 0;
    const step = decorrelatedJitterBackoffV2(3, 0, 1.5, () => {
      drawn++;
      return 0.5;
    });
    expect(step).toEqual({ delayMs: 0, next: 1.5 });
    expect(drawn).toBe(0);
  });

  it('caps a delay at maxDelayMs, and an overflowing formula at the TimeSpan maximum', () => {
    const capped = new DecorrelatedJitterBackoff(200, 500, () => 0.75);
    expect(capped.next(0)).toBeLessThan(500);
    expect(capped.next(10)).toBe(500);
    const huge = decorrelatedJitterBackoffV2(2000, 200, 0, () => 0.5);
    expect(huge.delayMs).toBe(MAX_TIMESPAN_TICKS / 10_000);
    expect(MAX_TIMESPAN_TICKS).toBe(Number(2n ** 63n) - 1000);
  });

  it('stays within Polly’s property-test range 0 ≤ delay < f·2^attempt·4 for seeded random inputs', () => {
    let seed = 42;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let run = 0; run < 100; run++) {
      const backoff = new DecorrelatedJitterBackoff(200, undefined, random);
      for (let attempt = 0; attempt < 8; attempt++) {
        const delay = backoff.next(attempt);
        expect(delay).toBeGreaterThanOrEqual(0);
        expect(delay).toBeLessThan(200 * 2 ** attempt * 4);
      }
    }
  });
});

describe('decideRetry', () => {
  const settings = {
    maxAttempts: 5,
    budgetMs: 30_000,
    baseDelayMs: 200,
    maxDelayMs: 30_000,
    maxRetryAfterMs: 60_000,
  };
  const state = { attempts: 1, retries: 0, refreshed: false, canRefresh: true, mayRetry: true, startedAt: 0 };
  const err = (code: string, retryable: boolean, extra: Partial<AgentGraphErrorInit> = {}) =>
    new AgentGraphError({ code, message: code, retryable, ...extra });
  const decide = (e: AgentGraphError, s: Partial<typeof state> = {}, now = 0, random = () => 0.5) =>
    decideRetry(e, { ...state, ...s }, settings, new DecorrelatedJitterBackoff(200, 30_000, random), now);

  it('refreshes once on UNAUTHENTICATED, then gives up', () => {
    expect(decide(err('UNAUTHENTICATED', false))).toEqual({ action: 'refresh' });
    expect(decide(err('UNAUTHENTICATED', false), { refreshed: true })).toEqual({
      action: 'give-up',
      reason: 'unauthenticated',
    });
    expect(decide(err('UNAUTHENTICATED', false), { canRefresh: false })).toMatchObject({
      reason: 'unauthenticated',
    });
  });

  it('gives up for the right reason, in order', () => {
    expect(decide(err('FORBIDDEN', false))).toMatchObject({ reason: 'not-retryable' });
    expect(decide(err('NETWORK_ERROR', true), { mayRetry: false })).toMatchObject({
      reason: 'not-idempotent',
    });
    expect(decide(err('NETWORK_ERROR', true), { attempts: 5 })).toMatchObject({ reason: 'attempts' });
    expect(decide(err('RATE_LIMITED', true, { retryAfterMs: 60_001 }))).toMatchObject({
      reason: 'retry-after-cap',
    });
    expect(decide(err('RATE_LIMITED', true, { retryAfterMs: 20_000 }), {}, 10_001)).toMatchObject({
      reason: 'budget',
    });
  });

  it('waits the server’s time exactly, else the jitter delay', () => {
    expect(decide(err('RATE_LIMITED', true, { retryAfterMs: 60_000 }), {}, 0)).toMatchObject({
      reason: 'budget',
    });
    expect(decide(err('RATE_LIMITED', true, { retryAfterMs: 30_000 }))).toEqual({
      action: 'wait',
      delayMs: 30_000,
    });
    expect(decide(err('NETWORK_ERROR', true))).toEqual({ action: 'wait', delayMs: 179.4809 });
  });
});

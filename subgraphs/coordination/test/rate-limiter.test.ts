/**
 * The token buckets (coordination.take_tokens through takeRateToken) on exact times: capacity, refill, the wait a
 * refusal reports, all-or-nothing across the principal and tenant buckets, isolation between principals, actions
 * and tenants, and a clock that goes backwards. PGlite or PostgreSQL (DATABASE_URL).
 */
import { randomUUID } from 'node:crypto';
import { AppError, type AuthContext, type Config } from '@agentgraph/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { takeRateToken } from '../src/limits/rate-limiter.js';
import { startHarness, type Harness } from './harness.js';

let h: Harness;
const T0 = Date.parse('2026-11-29T12:00:00.000Z');
const at = (ms: number) => new Date(T0 + ms);

function auth(tenantId: string, principalId = randomUUID(), deviceId?: string): AuthContext {
  return {
    tenantId,
    principalId,
    role: 'OPERATOR',
    scopes: ['api:read', 'api:write'],
    ...(deviceId ? { deviceId } : {}),
  };
}

const limits = (
  principal: { perSecond: number; burst: number } | null,
  tenant: { perSecond: number; burst: number } | null,
): Pick<Config, 'rateLimits'> => ({
  rateLimits: { intent: { principal, tenant }, post: { principal, tenant } },
});

/** 0 when taken, else the retryAfterMs of the RATE_LIMITED refusal. */
async function take(
  cfg: Pick<Config, 'rateLimits'>,
  a: AuthContext,
  ms: number,
  action: 'intent' | 'post' = 'post',
) {
  try {
    await takeRateToken(h.db, cfg, a, action, at(ms));
    return 0;
  } catch (err) {
    if (err instanceof AppError && err.code === 'RATE_LIMITED')
      return err.extensions['retryAfterMs'] as number;
    throw err;
  }
}

beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

describe('token buckets', () => {
  it('allows a burst, refuses the next with the exact wait, and refills at the rate', async () => {
    const cfg = limits({ perSecond: 2, burst: 3 }, null);
    const a = auth(randomUUID());
    expect([await take(cfg, a, 0), await take(cfg, a, 0), await take(cfg, a, 0)]).toEqual([0, 0, 0]);
    expect(await take(cfg, a, 0)).toBe(500); // one token at 2/s
    expect(await take(cfg, a, 250)).toBe(250);
    expect(await take(cfg, a, 500)).toBe(0); // refilled one
    expect(await take(cfg, a, 500)).toBe(500);
    // Long idle: back to the burst, never above it.
    const later = 60_000;
    expect([await take(cfg, a, later), await take(cfg, a, later), await take(cfg, a, later)]).toEqual([
      0, 0, 0,
    ]);
    expect(await take(cfg, a, later)).toBe(500);
  });

  it('takes from the principal and the tenant bucket together, or from neither', async () => {
    const cfg = limits({ perSecond: 1, burst: 2 }, { perSecond: 1, burst: 3 });
    const tenant = randomUUID();
    const alice = auth(tenant);
    const bob = auth(tenant);
    expect([await take(cfg, alice, 0), await take(cfg, alice, 0)]).toEqual([0, 0]);
    expect(await take(cfg, alice, 0)).toBe(1000); // alice's own bucket is empty (the tenant's has 1)
    expect(await take(cfg, bob, 0)).toBe(0); // the tenant's last token
    expect(await take(cfg, bob, 0)).toBe(1000); // bob has one left, the tenant none: refused, nothing taken
    // Had bob's refused attempt taken his token, he would have none at +1 s; he has one (the tenant refilled one).
    expect(await take(cfg, bob, 1000)).toBe(0);
    expect(await take(cfg, bob, 1000)).toBe(1000);
  });

  it('keeps principals, devices, actions and tenants apart', async () => {
    const cfg = limits({ perSecond: 1, burst: 1 }, null);
    const tenant = randomUUID();
    const user = randomUUID();
    const asUser = auth(tenant, user);
    const asDevice = auth(tenant, user, randomUUID()); // the same user's device has a bucket of its own
    expect(await take(cfg, asUser, 0)).toBe(0);
    expect(await take(cfg, asUser, 0)).toBe(1000);
    expect(await take(cfg, asDevice, 0)).toBe(0);
    expect(await take(cfg, asUser, 0, 'intent')).toBe(0); // another action, another bucket
    expect(await take(cfg, auth(randomUUID(), user), 0)).toBe(0); // another tenant
  });

  it('refills nothing when the clock goes backwards, and needs no bucket when limits are off', async () => {
    const cfg = limits({ perSecond: 1, burst: 1 }, null);
    const a = auth(randomUUID());
    expect(await take(cfg, a, 10_000)).toBe(0);
    expect(await take(cfg, a, 5_000)).toBe(1000);
    expect(await take(cfg, a, 10_999)).toBe(1);
    const off = limits(null, null);
    for (let i = 0; i < 5; i++) expect(await take(off, a, 0)).toBe(0);
  });

  it('counts every concurrent attempt exactly once (row locks, no lost update)', async () => {
    const cfg = limits({ perSecond: 0.001, burst: 10 }, { perSecond: 0.001, burst: 25 });
    const tenant = randomUUID();
    const callers = [auth(tenant), auth(tenant), auth(tenant), auth(tenant)];
    const results = await Promise.all(
      callers.flatMap((c) => Array.from({ length: 10 }, () => take(cfg, c, 0))),
    );
    // 40 attempts, 10 per principal, 25 for the tenant: exactly 25 pass.
    expect(results.filter((r) => r === 0)).toHaveLength(25);
  });
});

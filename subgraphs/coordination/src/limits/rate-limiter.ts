/**
 * Token-bucket rate limits on intent creation and posting (coordination README, "Rate limits, the emergency stop, audit"), per principal and per tenant, held in
 * PostgreSQL (`coordination.take_tokens`) so every replica draws from the same buckets. A request takes one token
 * from both of its buckets or from neither; refused, it gets RATE_LIMITED with `retryAfterMs` (the time until both
 * buckets hold a token again), which the gateway turns into HTTP 429 + Retry-After when nothing else was answered.
 *
 * Tokens are taken in one statement of their own before the work (`coordination.take_tokens_as`, its own implicit
 * transaction), so the bucket rows are locked for microseconds, not for the work's transaction. Every attempt
 * counts, a replay of an idempotency key included (it still costs the server a round trip).
 */
import {
  AppError,
  type AuthContext,
  type Config,
  type Database,
  type Metrics,
  type RateLimit,
  type RateLimitedAction,
} from '@agentgraph/runtime';

const ACTION_WORDS: Record<RateLimitedAction, string> = {
  intent: 'intents created',
  post: 'messages posted',
};

/** The principal a bucket belongs to: the device for a device's token, else the user. */
export function principalKey(auth: AuthContext): string {
  return auth.deviceId ? `device:${auth.deviceId}` : `user:${auth.principalId}`;
}

interface Bucket {
  key: string;
  limit: RateLimit;
}

/** Takes one token for `action` or throws RATE_LIMITED (counted as limiter `coordination_<action>`). */
export async function takeRateToken(
  db: Database,
  config: Pick<Config, 'rateLimits'>,
  auth: AuthContext,
  action: RateLimitedAction,
  now: Date,
  metrics?: Pick<Metrics, 'rateLimited'>,
): Promise<void> {
  const limits = config.rateLimits[action];
  const buckets: Bucket[] = [];
  if (limits.principal) buckets.push({ key: `${action}:${principalKey(auth)}`, limit: limits.principal });
  if (limits.tenant) buckets.push({ key: `${action}:tenant`, limit: limits.tenant });
  if (buckets.length === 0) return;
  // One statement, no explicit transaction: take_tokens_as sets the tenant for RLS and runs in the statement's own
  // implicit transaction, so the bucket rows are locked only while it runs (one round trip instead of three).
  const r = await db.query<{ wait: string | number }>(
    `SELECT coordination.take_tokens_as($1, $2, $3::text[], $4::float8[], $5::float8[], 1, $6) AS wait`,
    [
      auth.tenantId,
      auth.principalId,
      buckets.map((b) => b.key),
      buckets.map((b) => b.limit.burst),
      buckets.map((b) => b.limit.perSecond),
      now.toISOString(),
    ],
  );
  const waitMs = Number(r.rows[0]!.wait);
  if (waitMs > 0) {
    metrics?.rateLimited(`coordination_${action}`);
    const which = buckets
      .map(
        (b) =>
          `${b.key.endsWith(':tenant') ? 'your tenant' : 'you'}: ${b.limit.perSecond}/s, bursts of ${b.limit.burst}`,
      )
      .join('; ');
    throw new AppError(
      'RATE_LIMITED',
      `Too many ${ACTION_WORDS[action]} (limits — ${which}). Wait ${waitMs} ms (extensions.retryAfterMs), then retry with the same idempotency key.`,
      { retryAfterMs: waitMs },
    );
  }
}

/**
 * A failed-attempt limiter kept in the database (identity.auth_attempts), so every replica sees the same counts.
 *
 * A key (e.g. `signin:email:ada@example.com`, `signin:ip:203.0.113.7`, a device user code) collects failures in a
 * fixed window that starts with its first failure. The failure that reaches `maxFailures` inside the window locks the
 * key for `lockSeconds`; while locked, `assertNotLocked` throws RATE_LIMITED with `retryAfterMs`, whatever the
 * attempt would have been. A failure after the window has passed starts a new window. `clearFailures` forgets a key
 * (after a successful sign-in). Callers check first and record after:
 *
 *   await assertNotLocked(db, [key, ipKey]);    // refused while any of them is locked
 *   if (!ok) await recordFailure(db, key, policy);
 *   else await clearFailures(db, key);
 *
 * Only clear a key when a success proves what the failures were guessing (the password of that e-mail). Where anyone
 * can make a success of their own (a device user code they minted themselves), never clear: a success would reset the
 * count between wrong guesses, and the window would never fill.
 *
 * Time is a parameter (`now`, default the clock) so tests are exact. Keys are not tenant data and hold no secret.
 */
import { AppError, type Queryable } from '@agentgraph/runtime';

export interface AttemptPolicy {
  maxFailures: number;
  windowSeconds: number;
  lockSeconds: number;
}

/** Sign-in per e-mail address: 5 failures in 15 minutes lock that address for 15 minutes. */
export const SIGN_IN_EMAIL_POLICY: AttemptPolicy = { maxFailures: 5, windowSeconds: 900, lockSeconds: 900 };
/** Sign-in per client address: 50 failures in 15 minutes (password spraying across many e-mails). */
export const SIGN_IN_IP_POLICY: AttemptPolicy = { maxFailures: 50, windowSeconds: 900, lockSeconds: 900 };

export const signInEmailKey = (email: string): string => `signin:email:${email.trim().toLowerCase()}`;
export const signInIpKey = (address: string): string => `signin:ip:${address}`;

function minutes(ms: number): string {
  const m = Math.max(1, Math.ceil(ms / 60_000));
  return m === 1 ? '1 minute' : `${m} minutes`;
}

/** The RATE_LIMITED error every locked key answers with (the HTML pages show its message as text). */
export function lockedError(retryAfterMs: number): AppError {
  return new AppError(
    'RATE_LIMITED',
    `Too many failed attempts. Wait ${minutes(retryAfterMs)} and try again.`,
    { retryAfterMs },
  );
}

function toDate(value: Date | string): Date {
  return value instanceof Date ? value : new Date(value);
}

/**
 * Throws RATE_LIMITED (extensions.retryAfterMs) while `key` (or any of `keys`) is locked, with the longest wait among
 * them; otherwise returns.
 */
export async function assertNotLocked(
  db: Queryable,
  key: string | readonly string[],
  now: Date = new Date(),
): Promise<void> {
  const keys = typeof key === 'string' ? [key] : [...key];
  const r = await db.query<{ locked_until: Date | string }>(
    `SELECT locked_until FROM identity.auth_attempts
      WHERE key = ANY($1::text[]) AND locked_until > $2::timestamptz
      ORDER BY locked_until DESC LIMIT 1`,
    [keys, now.toISOString()],
  );
  const row = r.rows[0];
  if (row) throw lockedError(toDate(row.locked_until).getTime() - now.getTime());
}

/**
 * Counts one failure for `key` (atomically: concurrent failures on other replicas all count). Returns whether the
 * key is now locked and for how long (0 when not locked).
 */
export async function recordFailure(
  db: Queryable,
  key: string,
  policy: AttemptPolicy,
  now: Date = new Date(),
): Promise<{ locked: boolean; retryAfterMs: number }> {
  // $2 now, $3 max failures, $4 window seconds, $5 lock seconds. A window that has passed starts over at 1.
  const r = await db.query<{ locked_until: Date | string | null }>(
    `INSERT INTO identity.auth_attempts AS a (key, failures, window_started_at, locked_until)
     VALUES ($1, 1, $2::timestamptz,
             CASE WHEN 1 >= $3::int THEN $2::timestamptz + make_interval(secs => $5::int) END)
     ON CONFLICT (key) DO UPDATE SET
       failures = CASE WHEN a.window_started_at <= $2::timestamptz - make_interval(secs => $4::int)
                       THEN 1 ELSE a.failures + 1 END,
       window_started_at = CASE WHEN a.window_started_at <= $2::timestamptz - make_interval(secs => $4::int)
                                THEN $2::timestamptz ELSE a.window_started_at END,
       locked_until = CASE
         WHEN (CASE WHEN a.window_started_at <= $2::timestamptz - make_interval(secs => $4::int)
                    THEN 1 ELSE a.failures + 1 END) >= $3::int
           THEN GREATEST(a.locked_until, $2::timestamptz + make_interval(secs => $5::int))
         ELSE a.locked_until END
     RETURNING locked_until`,
    [key, now.toISOString(), policy.maxFailures, policy.windowSeconds, policy.lockSeconds],
  );
  const lockedUntil = r.rows[0]?.locked_until;
  const retryAfterMs = lockedUntil ? toDate(lockedUntil).getTime() - now.getTime() : 0;
  return retryAfterMs > 0 ? { locked: true, retryAfterMs } : { locked: false, retryAfterMs: 0 };
}

/** Forgets the failures of `key` (and any lock). */
export async function clearFailures(db: Queryable, key: string): Promise<void> {
  await db.query('DELETE FROM identity.auth_attempts WHERE key = $1', [key]);
}

/**
 * Deletes counters that can no longer matter: their window started over a day ago (longer than any policy's window)
 * and they are not locked. Returns how many went.
 */
export async function purgeStaleAttempts(db: Queryable, now: Date = new Date()): Promise<number> {
  const r = await db.query(
    `DELETE FROM identity.auth_attempts
      WHERE window_started_at < $1::timestamptz - interval '1 day'
        AND (locked_until IS NULL OR locked_until < $1::timestamptz)`,
    [now.toISOString()],
  );
  return r.rowCount;
}

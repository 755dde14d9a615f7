/**
 * Checking an e-mail and password, with the attempt limiter (per e-mail and per client address), and the
 * short-lived "password already checked" token used when a user with several tenants picks one.
 *
 * Wrong e-mail and wrong password look the same (same message, same work: scrypt runs against a dummy hash for an
 * unknown e-mail) and both count as failures for the e-mail and the address. The sixth attempt on an e-mail within
 * 15 minutes of five failures is refused before the password is looked at, with the time to wait.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { AppError, badInput, type Queryable } from '@agentgraph/runtime';
import {
  assertNotLocked,
  clearFailures,
  lockedError,
  recordFailure,
  SIGN_IN_EMAIL_POLICY,
  SIGN_IN_IP_POLICY,
  signInEmailKey,
  signInIpKey,
} from '../attempt-limiter.js';
import { Email } from '../input.js';
import type { Role } from '../models.js';
import { hashPassword, needsRehash, verifyPassword } from '../passwords.js';

export interface SignInMembership {
  tenantId: string;
  tenantName: string;
  role: Role;
}

export interface Authenticated {
  userId: string;
  email: string;
  memberships: SignInMembership[];
}

export interface Credentials {
  email: string;
  password: string;
  /** The client's network address (limiter key). */
  address: string;
}

/** Normalizes the e-mail field or throws BAD_USER_INPUT (field "email"). */
export function parseEmail(value: string): string {
  const r = Email.safeParse(value);
  if (!r.success) {
    throw badInput(
      value.trim() ? 'Enter an e-mail address like ada@example.com.' : 'Enter your e-mail address.',
      { field: 'email' },
    );
  }
  return r.data;
}

const WRONG = 'The e-mail address or password is wrong. Check both and try again.';

/**
 * Checks the credentials. Throws BAD_USER_INPUT (empty fields), RATE_LIMITED (locked; extensions.retryAfterMs),
 * UNAUTHENTICATED (wrong e-mail or password), FORBIDDEN (account disabled, or a member of no tenant).
 */
export async function authenticate(db: Queryable, c: Credentials, now: Date): Promise<Authenticated> {
  const email = parseEmail(c.email);
  if (!c.password) throw badInput('Enter your password.', { field: 'password' });
  const emailKey = signInEmailKey(email);
  const ipKey = signInIpKey(c.address);
  await assertNotLocked(db, ipKey, now);
  await assertNotLocked(db, emailKey, now);

  const r = await db.query<{
    id: string;
    email: string;
    password_hash: string | null;
    disabled: boolean;
  }>('SELECT id, email, password_hash, disabled FROM identity.user_for_sign_in($1)', [email]);
  const user = r.rows[0];
  const ok = await verifyPassword(c.password, user?.password_hash ?? null);
  if (!ok || !user) {
    const byEmail = await recordFailure(db, emailKey, SIGN_IN_EMAIL_POLICY, now);
    const byIp = await recordFailure(db, ipKey, SIGN_IN_IP_POLICY, now);
    const lock = Math.max(byEmail.retryAfterMs, byIp.retryAfterMs);
    if (lock > 0) {
      const e = lockedError(lock);
      throw new AppError('RATE_LIMITED', `${WRONG.split('.')[0]}. ${e.message}`, e.extensions);
    }
    throw new AppError('UNAUTHENTICATED', WRONG);
  }
  await clearFailures(db, emailKey);
  if (user.disabled) {
    throw new AppError(
      'FORBIDDEN',
      'This account is disabled. Ask an owner or administrator of your tenant to enable it.',
    );
  }
  if (needsRehash(user.password_hash!)) {
    const upgraded = await hashPassword(c.password);
    await db.query('SELECT identity.upgrade_password_hash($1, $2, $3)', [
      user.id,
      user.password_hash,
      upgraded,
    ]);
  }
  const memberships = await membershipsOf(db, user.id);
  if (memberships.length === 0) {
    throw new AppError(
      'FORBIDDEN',
      'Your account is not a member of any tenant yet. Ask an owner or administrator to add you.',
    );
  }
  return { userId: user.id, email: user.email, memberships };
}

export async function membershipsOf(db: Queryable, userId: string): Promise<SignInMembership[]> {
  const r = await db.query<{ tenant_id: string; tenant_name: string; role: Role }>(
    'SELECT tenant_id, tenant_name, role FROM identity.sign_in_memberships($1)',
    [userId],
  );
  return r.rows.map((m) => ({ tenantId: m.tenant_id, tenantName: m.tenant_name, role: m.role }));
}

/** How long a user may take to pick a tenant after the password was checked. */
export const PENDING_TTL_SECONDS = 5 * 60;

function pendingMac(key: string, userId: string, exp: number, bound: Buffer): string {
  return createHmac('sha256', key)
    .update(`pending-sign-in:${userId}:${exp}:${bound.toString('base64url')}`)
    .digest('base64url');
}

/**
 * A token saying "this browser checked the password of userId", valid 5 minutes and only together with the CSRF
 * secret it is bound to (the browser's `ag_csrf` cookie), so it is useless when copied elsewhere.
 */
export function pendingToken(keys: readonly string[], userId: string, bound: Buffer, now: Date): string {
  const exp = Math.floor(now.getTime() / 1000) + PENDING_TTL_SECONDS;
  return `${userId}.${exp}.${pendingMac(keys[0]!, userId, exp, bound)}`;
}

/** The user id inside a valid pending token, else null. */
export function verifyPendingToken(
  keys: readonly string[],
  token: string,
  bound: Buffer,
  now: Date,
): string | null {
  const m = /^([0-9a-f-]{36})\.(\d{1,12})\.([A-Za-z0-9_-]{43})$/.exec(token);
  if (!m) return null;
  const [, userId, expText, mac] = m;
  const exp = Number(expText);
  if (exp * 1000 <= now.getTime()) return null;
  const given = Buffer.from(mac!);
  for (const key of keys) {
    const want = Buffer.from(pendingMac(key, userId!, exp, bound));
    if (want.length === given.length && timingSafeEqual(want, given)) return userId!;
  }
  return null;
}

/**
 * The user's side of RFC 8628: a signed-in member looks up the code their desktop shows, sees what is asking, and
 * approves (the device is enrolled: a devices row with its public key, an OAuth grant, and the device code released to
 * the polling device) or denies (the device gets access_denied). Shared by the /device page and GraphQL.
 *
 * Wrong codes are guesses. Run every call inside `withUserCodeGuard(oauth, { auth, address }, fn)`, with `fn` opening
 * the tenant transaction: the guard refuses a locked-out caller before any work, and records a wrong guess after the
 * transaction has rolled back (so the rollback cannot erase it, and the embedded single-connection database never
 * waits on itself). Wrong guesses count per member (5 in 15 minutes) and per client address (20 in 15 minutes, across
 * members); the guess that fills a window locks that key for 15 minutes, and every attempt meanwhile is refused with
 * RATE_LIMITED (retryAfterMs), whatever code it carries. A right code resets nothing: anyone can mint a valid code of
 * their own, so a success between wrong guesses must not buy more guesses.
 */
import { AppError, type AuthContext, type Queryable } from '@agentgraph/runtime';
import { assertNotLocked, recordFailure, type AttemptPolicy } from '../attempt-limiter.js';
import { userIdOf } from '../input.js';
import type { Platform } from '../models.js';
import { CLIENT_NAMES } from './clients.js';
import { API_RESOURCE } from './constants.js';
import { describeDevice } from './device-params.js';
import { createGrant, grantableScopes } from './grants.js';
import type { OAuthService } from './service.js';
import { withOAuthTransaction } from './store-context.js';

/** Wrong user codes per member (tenant and principal): 5 in 15 minutes lock the member out for 15 minutes. */
export const USER_CODE_GUESSES: AttemptPolicy = { maxFailures: 5, windowSeconds: 900, lockSeconds: 900 };
/** Wrong user codes per client address, whichever members guess: 20 in 15 minutes lock the address for 15 minutes. */
export const USER_CODE_ADDRESS_GUESSES: AttemptPolicy = {
  maxFailures: 20,
  windowSeconds: 900,
  lockSeconds: 900,
};
const USER_CODE_ALPHABET = /^[BCDFGHJKLMNPQRSTVWXZ]{8}$/;

export interface DeviceAuthorizationView {
  /** Canonical form XXXX-XXXX. */
  userCode: string;
  clientId: string;
  clientName: string;
  scopes: string[];
  deviceName: string;
  platform: Platform;
  keyThumbprint: string;
  expiresAt: Date;
}

/** Upper-cases and drops everything but letters and digits ("bcdf-ghjk" → "BCDFGHJK"). */
export function normalizeUserCode(input: string): string {
  return input.toUpperCase().replace(/[^A-Z0-9]/g, '');
}

export const userCodeMemberKey = (auth: Pick<AuthContext, 'tenantId' | 'principalId'>): string =>
  `usercode:${auth.tenantId}:${auth.principalId}`;
export const userCodeAddressKey = (address: string): string => `usercode:ip:${address}`;

/** Who makes a user-code attempt, and from where. */
export interface UserCodeCaller {
  auth: AuthContext;
  /** The client's network address (the page: the socket peer; GraphQL: the request origin's ip); null if unknown. */
  address: string | null;
  /** The clock (tests pass a fake one); default now. */
  now?: Date;
}

/** Thrown inside the transaction for an unknown, expired or spent code; the guard turns it into NOT_FOUND. */
class WrongUserCode extends AppError {
  constructor() {
    super(
      'NOT_FOUND',
      'No pending device request has this code. Check the code your device shows (it expires after 10 minutes).',
    );
  }
}

/**
 * Runs `fn` (which opens its own tenant transaction and calls the functions below) under the wrong-guess limits of
 * the member and of the client address. The pages and GraphQL pass a `UserCodeCaller`; a bare AuthContext (scripts,
 * tests) has no address, so only the member's limit applies. A success clears nothing.
 */
export async function withUserCodeGuard<T>(
  oauth: OAuthService,
  caller: UserCodeCaller | AuthContext,
  fn: () => Promise<T>,
): Promise<T> {
  await oauth.ready;
  const from: UserCodeCaller = 'auth' in caller ? caller : { auth: caller, address: null };
  const now = from.now ?? new Date();
  const limits: [string, AttemptPolicy][] = [[userCodeMemberKey(from.auth), USER_CODE_GUESSES]];
  if (from.address) limits.push([userCodeAddressKey(from.address), USER_CODE_ADDRESS_GUESSES]);
  await assertNotLocked(
    oauth.db,
    limits.map(([key]) => key),
    now,
  );
  try {
    return await fn();
  } catch (err) {
    if (!(err instanceof WrongUserCode)) throw err;
    // This guess was wrong (NOT_FOUND); if it filled a window, the next call is refused by assertNotLocked.
    for (const [key, policy] of limits) await recordFailure(oauth.db, key, policy, now);
    throw err;
  }
}

interface PendingCode {
  code: InstanceType<OAuthService['provider']['DeviceCode']>;
  view: DeviceAuthorizationView;
  device: NonNullable<Awaited<ReturnType<typeof describeDevice>>>;
}

async function pendingCode(
  oauth: OAuthService,
  tx: Queryable,
  auth: AuthContext,
  userCode: string,
): Promise<PendingCode> {
  if (auth.deviceId) {
    throw new AppError('FORBIDDEN', 'A device cannot approve device requests; sign in as a user.');
  }
  userIdOf(auth);
  const normalized = normalizeUserCode(userCode);
  const code = USER_CODE_ALPHABET.test(normalized)
    ? await withOAuthTransaction(tx, () => oauth.provider.DeviceCode.findByUserCode(normalized))
    : undefined;
  const device = code ? await describeDevice((code.params ?? {}) as Record<string, unknown>) : null;
  if (!code || !device || code.isExpired || code.accountId || code.error || code.consumed) {
    throw new WrongUserCode();
  }
  const { oidc, api } = grantableScopes(String(code.params?.['scope'] ?? '').split(' '));
  const view: DeviceAuthorizationView = {
    userCode: `${normalized.slice(0, 4)}-${normalized.slice(4)}`,
    clientId: code.clientId!,
    clientName: CLIENT_NAMES[code.clientId!] ?? code.clientId!,
    scopes: [...oidc, ...api],
    deviceName: device.name,
    platform: device.platform,
    keyThumbprint: device.thumbprint,
    expiresAt: new Date(code.exp! * 1000),
  };
  return { code, view, device };
}

export async function findDeviceAuthorization(
  oauth: OAuthService,
  tx: Queryable,
  auth: AuthContext,
  userCode: string,
): Promise<DeviceAuthorizationView> {
  return (await pendingCode(oauth, tx, auth, userCode)).view;
}

export async function approveDeviceAuthorization(
  oauth: OAuthService,
  tx: Queryable,
  auth: AuthContext,
  userCode: string,
): Promise<{ deviceId: string }> {
  const { code, view, device } = await pendingCode(oauth, tx, auth, userCode);
  const userId = userIdOf(auth);
  const r = await tx.query<{ id: string }>(
    `INSERT INTO identity.devices
       (tenant_id, owner_id, name, platform, status, public_jwk, key_thumbprint, client_id, enrolled_at)
     VALUES ($1, $2, $3, $4, 'ENROLLED', $5::text::jsonb, $6, $7, now())
     RETURNING id`,
    [
      auth.tenantId,
      userId,
      device.name,
      device.platform,
      JSON.stringify(device.publicJwk),
      device.thumbprint,
      view.clientId,
    ],
  );
  const deviceId = r.rows[0]!.id;
  const grantId = await createGrant(oauth, tx, {
    tenantId: auth.tenantId,
    userId,
    clientId: view.clientId,
    scopes: view.scopes,
    deviceId,
  });
  Object.assign(code, {
    accountId: userId,
    grantId,
    scope: view.scopes.join(' '),
    // The API resource (RFC 8707) makes the device's access tokens JWTs for the API audience.
    resource: API_RESOURCE,
    authTime: Math.floor(Date.now() / 1000),
  });
  await withOAuthTransaction(tx, () => code.save());
  return { deviceId };
}

export async function denyDeviceAuthorization(
  oauth: OAuthService,
  tx: Queryable,
  auth: AuthContext,
  userCode: string,
): Promise<void> {
  const { code } = await pendingCode(oauth, tx, auth, userCode);
  Object.assign(code, { error: 'access_denied', errorDescription: 'the user denied the device request' });
  await withOAuthTransaction(tx, () => code.save());
}

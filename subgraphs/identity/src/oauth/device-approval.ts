/**
 * The user's side of RFC 8628: a signed-in member looks up the code their desktop shows, sees what is asking, and
 * approves (the device is enrolled: a devices row with its public key, an OAuth grant, and the device code released to
 * the polling device) or denies (the device gets access_denied). Shared by the /device page and GraphQL.
 *
 * Wrong codes are guesses. Run every call inside `withUserCodeGuard(oauth, auth, fn)`, with `fn` opening the tenant
 * transaction: the guard refuses a locked-out caller before any work, and records a wrong guess after the
 * transaction has rolled back (so the rollback cannot erase it, and the embedded single-connection database never
 * waits on itself). After 5 wrong guesses in 15 minutes the caller is locked out for 15 minutes: the 6th attempt is
 * refused with RATE_LIMITED (retryAfterMs), whatever code it carries.
 */
import { AppError, type AuthContext, type Queryable } from '@agentgraph/runtime';
import { assertNotLocked, clearFailures, recordFailure, type AttemptPolicy } from '../attempt-limiter.js';
import { userIdOf } from '../input.js';
import type { Platform } from '../models.js';
import { CLIENT_NAMES } from './clients.js';
import { API_RESOURCE } from './constants.js';
import { describeDevice } from './device-params.js';
import { createGrant, grantableScopes } from './grants.js';
import type { OAuthService } from './service.js';
import { withOAuthTransaction } from './store-context.js';

export const USER_CODE_GUESSES: AttemptPolicy = { maxFailures: 5, windowSeconds: 900, lockSeconds: 900 };
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

function guessKey(auth: AuthContext): string {
  return `usercode:${auth.tenantId}:${auth.principalId}`;
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
 * Runs `fn` (which opens its own tenant transaction and calls the functions below) under the wrong-guess limit.
 */
export async function withUserCodeGuard<T>(
  oauth: OAuthService,
  auth: AuthContext,
  fn: () => Promise<T>,
): Promise<T> {
  await oauth.ready;
  const key = guessKey(auth);
  await assertNotLocked(oauth.db, key);
  try {
    const result = await fn();
    await clearFailures(oauth.db, key);
    return result;
  } catch (err) {
    if (!(err instanceof WrongUserCode)) throw err;
    // This guess was wrong (NOT_FOUND); if it was the last one allowed, the next call is refused by assertNotLocked.
    await recordFailure(oauth.db, key, USER_CODE_GUESSES);
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

/**
 * Tenant-scoped transactions: every read and write of tenant data runs inside one, with the tenant and principal
 * set as transaction-local settings that the Row-Level Security policies read (runtime.current_tenant()).
 */
import type { Database, Queryable } from './db/types.js';
import { AppError } from './errors.js';
import type { Role } from './roles.js';

export interface AuthContext {
  tenantId: string;
  /** The user (or device) the token was issued to. */
  principalId: string;
  role: Role;
  scopes: readonly string[];
  /** `jti` of the access token (revocation by token). */
  tokenId?: string;
  /** `gid`: the OAuth grant the token came from (revocation of a refresh-token family). */
  grantId?: string;
  /** `did`: the enrolled device the token belongs to; absent for a user's own (browser) token. */
  deviceId?: string;
  /** `client_id` of the OAuth client the token was issued to. */
  clientId?: string;
  /** `iat` (epoch seconds): revocations of a member refuse tokens issued up to the revocation, not after. */
  issuedAt?: number;
  /** `exp` (epoch seconds): a stream opened with the token ends when it expires. */
  expiresAt?: number;
  /**
   * `act.sub` (RFC 8693): set on a token obtained by token exchange, naming the client that acts for the subject
   * (e.g. the desktop host minting a sidecar token). Such tokens may not do what only the subject itself may.
   */
  actor?: string;
}

export function requireAuth(auth: AuthContext | null): AuthContext {
  if (!auth) {
    throw new AppError(
      'UNAUTHENTICATED',
      'This operation needs an access token. Send "Authorization: Bearer <token>"; sign in again if it expired.',
    );
  }
  return auth;
}

export async function withTenant<T>(
  db: Database,
  auth: AuthContext,
  fn: (tx: Queryable) => Promise<T>,
): Promise<T> {
  return db.transaction(fn, { 'app.tenant_id': auth.tenantId, 'app.principal_id': auth.principalId });
}

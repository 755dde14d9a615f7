/**
 * Tenant-scoped transactions: every read and write of tenant data runs inside one, with the tenant and principal
 * set as transaction-local settings that the Row-Level Security policies read (runtime.current_tenant()).
 */
import type { Database, Queryable } from './db/types.js';
import { AppError } from './errors.js';

export interface AuthContext {
  tenantId: string;
  /** The user (or device) the token was issued to. */
  principalId: string;
  role: 'OWNER' | 'ADMIN' | 'OPERATOR' | 'VIEWER';
  scopes: readonly string[];
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

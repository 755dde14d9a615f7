/**
 * Input validation (zod) and the role rules. Errors name the field and say what is expected; they never echo
 * the value the client sent.
 */
import {
  AppError,
  badInput,
  roleCovers,
  roleMeet,
  rolesCovering,
  type AuthContext,
} from '@agentgraph/runtime';
import { z } from 'zod';
import { PLATFORMS, ROLES, type DeviceModel, type Role } from './models.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: unknown): value is string {
  return typeof value === 'string' && UUID.test(value);
}

const text100 = z
  .string()
  .trim()
  .min(1, 'must be 1 to 100 characters (not blank)')
  .max(100, 'must be 1 to 100 characters');

export const RegisterDeviceInput = z.object({
  name: text100,
  platform: z.enum(PLATFORMS, 'must be one of windows, macos, linux'),
});

export const UpdateProfileInput = z.object({
  displayName: text100,
});

export const DeviceName = text100;

/** A user code as a person types it (RFC 8628 §6.1: case and separators do not matter); the OAuth module checks it. */
export const UserCode = z
  .string()
  .trim()
  .min(1, 'must be the code the device shows, e.g. WDJB-MJHT')
  .max(32, 'must be the code the device shows, e.g. WDJB-MJHT');

export const RoleInput = z.enum(ROLES, `must be one of ${ROLES.join(', ')}`);

export const Email = z
  .string()
  .trim()
  .toLowerCase()
  .max(254, 'must be at most 254 characters')
  .regex(/^[^\s@]+@[^\s@]+$/, 'must be an e-mail address like ada@example.com');

export const AddMemberInput = z.object({
  email: Email,
  role: RoleInput,
});

export const BootstrapInput = z.object({
  tenantName: text100,
  email: Email,
  displayName: text100,
});

/** Parses `value` or throws BAD_USER_INPUT naming the first bad field (e.g. "input.name"). */
export function parseInput<T>(schema: z.ZodType<T>, value: unknown, argument: string): T {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const issue = r.error.issues[0]!;
  const field = [argument, ...issue.path.map(String)].filter(Boolean).join('.');
  throw badInput(`${field} ${issue.message}.`, { field });
}

/** The caller as a user (user tokens carry the user id as `sub`; other principals cannot use these fields). */
export function userIdOf(auth: AuthContext): string {
  if (!isUuid(auth.principalId)) {
    throw new AppError(
      'FORBIDDEN',
      'This operation needs a user access token; the token you sent is for another kind of principal.',
    );
  }
  return auth.principalId.toLowerCase();
}

/** Throws FORBIDDEN unless `role` covers `least` (roles form a lattice: runtime/src/roles.ts). */
export function requireAtLeast(role: Role, least: Role, action: string): Role {
  if (!roleCovers(role, least)) {
    throw new AppError(
      'FORBIDDEN',
      `Your role ${role} cannot ${action}; it needs ${rolesCovering(least)}. Ask a tenant owner or admin.`,
      { requiredRole: least },
    );
  }
  return role;
}

/**
 * The role a request acts with: the lesser of the token's claim (a token may be deliberately down-scoped, e.g.
 * a sidecar token from token exchange) and the membership's current role in the database (null: not a member
 * any more). Throws FORBIDDEN unless it is at least `least`.
 */
export function requireRole(auth: AuthContext, memberRole: Role | null, least: Role, action: string): Role {
  if (memberRole === null) {
    throw new AppError(
      'FORBIDDEN',
      'You are no longer a member of the tenant your token is for. Sign in again to get a token for a tenant you belong to.',
    );
  }
  const role = roleMeet(auth.role, memberRole);
  return requireAtLeast(role, least, action);
}

/** A device is managed (renamed, revoked) by its owner, or by an ADMIN or OWNER of the tenant. */
export function requireDeviceManager(role: Role, userId: string, device: DeviceModel, action: string): void {
  if (device.ownerId === userId || roleCovers(role, 'ADMIN')) return;
  throw new AppError(
    'FORBIDDEN',
    `Only the device's owner or an ADMIN or OWNER can ${action}; your role is ${role}. Ask the owner or an admin.`,
    { requiredRole: 'ADMIN' },
  );
}

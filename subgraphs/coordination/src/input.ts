/**
 * Argument validation at the resolver (zod). Errors are BAD_USER_INPUT naming the argument and the rule, never
 * echoing the value (bodies may be personal data).
 */
import { AppError, badInput, roleCovers, rolesCovering, type AuthContext } from '@agentgraph/runtime';
import { z } from 'zod';

const noNul = (s: string) => !s.includes('\u0000');

export const Id = z.guid('must be a UUID');

export const RoomName = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(100, 'must be at most 100 characters')
  .refine(noNul, 'must not contain NUL characters');

export const MessageBody = z
  .string()
  .min(1, 'must not be empty')
  .max(16_384, 'must be at most 16384 characters')
  .refine(noNul, 'must not contain NUL characters');

export const AfterSeq = z.number().int().min(0, 'must be 0 or more (0 replays the whole log)');

/** Parses one argument; on failure throws BAD_USER_INPUT naming it. */
export function parseArg<T>(schema: z.ZodType<T>, value: unknown, argument: string): T {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const rule = r.error.issues[0]?.message ?? 'is invalid';
  throw badInput(`"${argument}" ${rule}.`, { argument });
}

/** Writers: OPERATOR and the roles above it (not VIEWER, not PUBLISHER). */
export function requireWriter(auth: AuthContext, action: string): void {
  if (!roleCovers(auth.role, 'OPERATOR')) {
    throw new AppError(
      'FORBIDDEN',
      `Your role (${auth.role}) cannot ${action}. It needs ${rolesCovering('OPERATOR')}; ask an owner or admin of the tenant.`,
      { requiredRole: 'OPERATOR' },
    );
  }
}

/**
 * Argument validation at the resolver (zod). A failure is BAD_USER_INPUT naming the field and the rule, never the
 * value the client sent. Also the role rule for writes.
 */
import {
  AppError,
  badInput,
  requireAuth,
  roleCovers,
  rolesCovering,
  type AuthContext,
} from '@agentgraph/runtime';
import { z } from 'zod';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Semantic Versioning 2.0.0 MAJOR.MINOR.PATCH with an optional pre-release; no build metadata, no leading zeros. */
const NUMERIC = '0|[1-9]\\d*';
const PRERELEASE_ID = '0|[1-9]\\d*|\\d*[a-zA-Z-][0-9a-zA-Z-]*';
export const SEMVER = new RegExp(
  `^(?:${NUMERIC})\\.(?:${NUMERIC})\\.(?:${NUMERIC})(?:-(?:${PRERELEASE_ID})(?:\\.(?:${PRERELEASE_ID}))*)?$`,
);

export const PLUGIN_NAME = /^[a-z][a-z0-9-]{1,62}$/;

export const CreatePluginArgs = z.object({
  input: z.object({
    name: z
      .string()
      .regex(
        PLUGIN_NAME,
        'must be 2 to 63 characters: a lowercase letter, then lowercase letters, digits or "-"',
      ),
    displayName: z.string().trim().min(1, 'must not be empty').max(100, 'must be at most 100 characters'),
    description: z
      .string()
      .max(2000, 'must be at most 2000 characters')
      .nullish()
      .transform((d) => d ?? ''),
  }),
});

export const DeclareReleaseArgs = z.object({
  pluginId: z
    .string()
    .regex(UUID, 'must be a plugin id (a UUID)')
    .transform((s) => s.toLowerCase()),
  input: z.object({
    version: z
      .string()
      .max(64, 'must be at most 64 characters')
      .regex(
        SEMVER,
        'must be a semantic version MAJOR.MINOR.PATCH with an optional -prerelease, e.g. 1.4.0 or 2.0.0-beta.1',
      ),
  }),
});

/** Parses arguments or throws BAD_USER_INPUT with the first problem (field path in extensions.field). */
export function parseArgs<S extends z.ZodType>(schema: S, args: unknown): z.output<S> {
  const parsed = schema.safeParse(args);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const field = issue.path.map(String).join('.');
  throw badInput(`Invalid ${field || 'arguments'}: ${issue.message}. Fix it and send the request again.`, {
    field,
  });
}

/** Reads need a token; the tenant comes from it. */
export function requireReader(auth: AuthContext | null): AuthContext {
  return requireAuth(auth);
}

/** Malformed ids in queries and entity references cannot exist: the same answer as "not found". */
export function isUuid(value: unknown): value is string {
  return typeof value === 'string' && UUID.test(value);
}

const Id = (what: string) =>
  z
    .string()
    .regex(UUID, `must be ${what} id (a UUID)`)
    .transform((s) => s.toLowerCase());
const Reason = z.string().trim().min(1, 'must not be empty').max(2000, 'must be at most 2000 characters');

export const ReleaseIdArgs = z.object({ releaseId: Id('a release') });
export const ReleaseReasonArgs = z.object({ releaseId: Id('a release'), reason: Reason });

/**
 * Publishing (creating plugins, declaring releases, uploading packages): PUBLISHER, ADMIN or OWNER. OPERATOR runs
 * things on devices and may not publish (runtime/src/roles.ts: OPERATOR and PUBLISHER are incomparable).
 */
export function requirePublisher(auth: AuthContext | null, action = 'upload plugin packages'): AuthContext {
  const a = requireAuth(auth);
  if (!roleCovers(a.role, 'PUBLISHER')) {
    throw new AppError(
      'FORBIDDEN',
      `Your role (${a.role}) cannot ${action}. It needs ${rolesCovering('PUBLISHER')}; ask an owner or admin of your tenant.`,
    );
  }
  return a;
}

/** Review decisions, promotion and revocation: ADMIN or OWNER. */
export function requireReviewer(auth: AuthContext | null, action: string): AuthContext {
  const a = requireAuth(auth);
  if (!roleCovers(a.role, 'ADMIN')) {
    throw new AppError(
      'FORBIDDEN',
      `Your role (${a.role}) cannot ${action}. It needs ${rolesCovering('ADMIN')}; ask an owner or admin of your tenant.`,
    );
  }
  return a;
}

/**
 * Argument validation at the resolver (zod). A failure is BAD_USER_INPUT naming the field and the rule, never the
 * value the client sent. Also the role rule for writes.
 */
import { AppError, badInput, requireAuth, type AuthContext } from '@agentgraph/runtime';
import { z } from 'zod';

/** Any RFC 4122-shaped UUID (PostgreSQL's uuid accepts every version), normalised to lowercase. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const uuid = () =>
  z
    .string()
    .regex(UUID, 'must be a UUID (e.g. from crypto.randomUUID())')
    .transform((s) => s.toLowerCase());

export const MAX_TAGS = 32;

export const CreateWorkspaceArgs = z.object({
  input: z.object({
    name: z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters'),
  }),
});

export const PutMemoryArgs = z.object({
  id: uuid(),
  expectedVersion: z
    .number()
    .int()
    .min(0, 'must be null (unconditional), 0 (must not exist yet) or the version you read (1 or more)')
    .nullish(),
  input: z.object({
    workspaceId: uuid(),
    kind: z.string().regex(/^[a-z0-9_.-]{1,64}$/, 'must be 1 to 64 characters of a-z, 0-9, "_", "." or "-"'),
    content: z.string(),
    tags: z
      .array(
        z
          .string()
          .min(1, 'each tag must be 1 to 64 characters')
          .max(64, 'each tag must be 1 to 64 characters'),
      )
      .max(MAX_TAGS, `at most ${MAX_TAGS} tags`)
      .nullish()
      .transform((t) => t ?? []),
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

/** Writers are every role but VIEWER. */
export function requireWriter(auth: AuthContext | null): AuthContext {
  const a = requireAuth(auth);
  if (a.role === 'VIEWER') {
    throw new AppError(
      'FORBIDDEN',
      'Your role (VIEWER) can read memory but not change it. Ask an owner or admin of your tenant for a writing role.',
    );
  }
  return a;
}

/** Reads need a token; the tenant comes from it. */
export function requireReader(auth: AuthContext | null): AuthContext {
  return requireAuth(auth);
}

/** Malformed ids in queries and entity references cannot exist: the same answer as "not found". */
export function isUuid(value: unknown): value is string {
  return typeof value === 'string' && UUID.test(value);
}

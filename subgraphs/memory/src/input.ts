/**
 * Argument validation at the resolver (zod). A failure is BAD_USER_INPUT naming the field and the rule, never the
 * value the client sent. Also the role rule for writes.
 */
import { AppError, badInput, requireAuth, roleCovers, type AuthContext } from '@agentgraph/runtime';
import { z } from 'zod';

/** Any RFC 4122-shaped UUID (PostgreSQL's uuid accepts every version), normalised to lowercase. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const uuid = () =>
  z
    .string()
    .regex(UUID, 'must be a UUID (e.g. from crypto.randomUUID())')
    .transform((s) => s.toLowerCase());

export const MAX_TAGS = 32;

export const MAX_EMBEDDING_DIMENSIONS = 4096;

export const CreateWorkspaceArgs = z.object({
  input: z.object({
    name: z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters'),
    secretPolicy: z
      .enum(['REJECT', 'REDACT'])
      .nullish()
      .transform((p) => p ?? 'REJECT'),
    embeddingDimensions: z
      .number()
      .int()
      .min(1, `must be 1 to ${MAX_EMBEDDING_DIMENSIONS}`)
      .max(MAX_EMBEDDING_DIMENSIONS, `must be 1 to ${MAX_EMBEDDING_DIMENSIONS}`)
      .nullish()
      .transform((n) => n ?? null),
  }),
});

/** An embedding: finite numbers, 1..4096 of them, not all zero (cosine needs a direction). */
export const embedding = () =>
  z
    .array(z.number().refine(Number.isFinite, 'must hold finite numbers only'))
    .min(1, `must have 1 to ${MAX_EMBEDDING_DIMENSIONS} numbers`)
    .max(MAX_EMBEDDING_DIMENSIONS, `must have 1 to ${MAX_EMBEDDING_DIMENSIONS} numbers`)
    .refine((v) => v.some((x) => Math.fround(x) !== 0), 'must not be all zeros (as 32-bit floats)');

const dateTime = () => z.date().refine((d) => !Number.isNaN(d.getTime()), 'must be an ISO-8601 timestamp');

/** Bounds of PutMemoryInput.metadata (a JSON object as text). */
export const METADATA_LIMITS = { maxBytes: 16 * 1024, maxDepth: 8, maxKeys: 256, maxKeyLength: 128 } as const;

type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

function measure(value: JsonValue, depth: number, acc: { depth: number; keys: number; longKey: boolean }) {
  acc.depth = Math.max(acc.depth, depth);
  if (Array.isArray(value)) for (const v of value) measure(v, depth + 1, acc);
  else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      acc.keys++;
      if (k.length > METADATA_LIMITS.maxKeyLength) acc.longKey = true;
      measure(v, depth + 1, acc);
    }
  }
}

/** Metadata: JSON object text within METADATA_LIMITS; parsed. Each failure names the limit. */
function metadataText() {
  const L = METADATA_LIMITS;
  return z
    .string()
    .nullish()
    .transform((text, ctx): Record<string, JsonValue> => {
      if (text == null || text === '') return {};
      if (Buffer.byteLength(text, 'utf8') > L.maxBytes) {
        ctx.addIssue({
          code: 'custom',
          message: `must be at most ${L.maxBytes} bytes (limit maxBytes)`,
          params: { limit: 'maxBytes', max: L.maxBytes },
        });
        return z.NEVER;
      }
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        ctx.addIssue({ code: 'custom', message: 'must be JSON object text, e.g. {"source":"chat"}' });
        return z.NEVER;
      }
      if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
        ctx.addIssue({ code: 'custom', message: 'must be a JSON object (not an array or a scalar)' });
        return z.NEVER;
      }
      const acc = { depth: 0, keys: 0, longKey: false };
      measure(parsed as JsonValue, 1, acc);
      if (acc.depth > L.maxDepth) {
        ctx.addIssue({
          code: 'custom',
          message: `must nest at most ${L.maxDepth} levels deep (limit maxDepth)`,
          params: { limit: 'maxDepth', max: L.maxDepth },
        });
      } else if (acc.keys > L.maxKeys) {
        ctx.addIssue({
          code: 'custom',
          message: `must have at most ${L.maxKeys} keys in all (limit maxKeys)`,
          params: { limit: 'maxKeys', max: L.maxKeys },
        });
      } else if (acc.longKey) {
        ctx.addIssue({
          code: 'custom',
          message: `keys must be at most ${L.maxKeyLength} characters (limit maxKeyLength)`,
          params: { limit: 'maxKeyLength', max: L.maxKeyLength },
        });
      } else if (/\\u0000/.test(text)) {
        ctx.addIssue({
          code: 'custom',
          message: 'must not contain NUL characters (PostgreSQL jsonb cannot store them)',
        });
      } else {
        return parsed as Record<string, JsonValue>;
      }
      return z.NEVER;
    });
}

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
    metadata: metadataText(),
    embedding: embedding()
      .nullish()
      .transform((e) => e ?? null),
    expiresAt: dateTime()
      .nullish()
      .transform((d) => d ?? null),
  }),
});

/** At most this many records per putMemories call. */
export const MAX_BATCH_RECORDS = 100;

/** One record of putMemories: putMemory's id, expectedVersion and input fields in one object. */
const PutMemoriesRecord = PutMemoryArgs.shape.input.extend({
  id: PutMemoryArgs.shape.id,
  expectedVersion: PutMemoryArgs.shape.expectedVersion,
});
export type PutMemoriesRecord = z.output<typeof PutMemoriesRecord>;

/** putMemories' arguments: the batch size only; each record is parsed on its own (parseBatchRecord). */
export const PutMemoriesArgs = z.object({
  input: z.object({
    records: z
      .array(z.unknown())
      .min(1, `must hold 1 to ${MAX_BATCH_RECORDS} records`)
      .max(MAX_BATCH_RECORDS, `must hold 1 to ${MAX_BATCH_RECORDS} records (limit maxRecords)`),
  }),
});

/**
 * One record of a batch: the parsed record, or the BAD_USER_INPUT that record gets, its field named as
 * `input.records[i].field` (e.g. `input.records[3].tags.0`).
 */
export function parseBatchRecord(
  value: unknown,
  index: number,
): { ok: true; record: PutMemoriesRecord } | { ok: false; error: AppError } {
  const parsed = PutMemoriesRecord.safeParse(value);
  if (parsed.success) return { ok: true, record: parsed.data };
  return { ok: false, error: issueError(parsed.error, `input.records[${index}]`) };
}

export const MemoryRecordFilterInput = z
  .object({
    kind: z.string().min(1).max(64, 'must be at most 64 characters').nullish(),
    tag: z.string().min(1).max(64, 'must be at most 64 characters').nullish(),
    authorId: z.string().min(1).max(200, 'must be at most 200 characters').nullish(),
    updatedSince: dateTime().nullish(),
  })
  .nullish()
  .transform((f) => ({
    kind: f?.kind ?? null,
    tag: f?.tag ?? null,
    authorId: f?.authorId ?? null,
    updatedSince: f?.updatedSince ?? null,
  }));
export type RecordFilter = z.output<typeof MemoryRecordFilterInput>;

export const RecordsArgs = z.object({ filter: MemoryRecordFilterInput });

export const SearchArgs = z.object({
  workspaceId: uuid(),
  query: z
    .object({
      text: z
        .string()
        .trim()
        .max(1000, 'must be at most 1000 characters')
        .nullish()
        .transform((t) => (t ? t : null)),
      embedding: embedding()
        .nullish()
        .transform((e) => e ?? null),
      textWeight: z
        .number()
        .min(0, 'must be between 0 and 1')
        .max(1, 'must be between 0 and 1')
        .nullish()
        .transform((w) => w ?? 0.5),
      filter: MemoryRecordFilterInput,
    })
    .refine((q) => q.text !== null || q.embedding !== null, {
      message: 'needs text, an embedding, or both',
    }),
});

export const DeleteArgs = z.object({ id: uuid() });

export const JobsArgs = z.object({
  state: z.enum(['QUEUED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'DEAD']).nullish(),
});

/** Parses arguments or throws BAD_USER_INPUT with the first problem (field path in extensions.field). */
/** PAYLOAD_TOO_LARGE naming the field when the content is over `maxBytes` UTF-8 bytes (putMemory, putMemories). */
export function contentTooLarge(content: string, field: string, maxBytes: number): AppError | null {
  if (Buffer.byteLength(content, 'utf8') <= maxBytes) return null;
  return new AppError(
    'PAYLOAD_TOO_LARGE',
    `${field} is over the limit of ${maxBytes} bytes (UTF-8). Store less per record, or split it into several records.`,
    { field, maxBytes },
  );
}

export function parseArgs<S extends z.ZodType>(schema: S, args: unknown): z.output<S> {
  const parsed = schema.safeParse(args);
  if (parsed.success) return parsed.data;
  throw issueError(parsed.error);
}

/** BAD_USER_INPUT for a zod error's first issue; its path below `prefix` (when given) names the field. */
function issueError(error: z.ZodError, prefix?: string): AppError {
  const issue = error.issues[0]!;
  const field = [...(prefix ? [prefix] : []), ...issue.path.map(String)].join('.');
  const params = issue.code === 'custom' ? (issue.params ?? {}) : {};
  // The batch limit names itself like the other limits (extensions.limit), e.g. for SDKs that split batches.
  const limit =
    field === 'input.records' && issue.code === 'too_big'
      ? { limit: 'maxRecords', max: MAX_BATCH_RECORDS }
      : {};
  return badInput(`Invalid ${field || 'arguments'}: ${issue.message}. Fix it and send the request again.`, {
    field,
    ...params,
    ...limit,
  });
}

/** Writers: OWNER, ADMIN and OPERATOR (not VIEWER, nor a catalog-only role). */
export function requireWriter(auth: AuthContext | null): AuthContext {
  const a = requireAuth(auth);
  if (!roleCovers(a.role, 'OPERATOR')) {
    throw new AppError(
      'FORBIDDEN',
      `Your role (${a.role}) can read memory but not change it. Ask an owner or admin of your tenant for a writing role.`,
    );
  }
  return a;
}

/** Tenant administration (jobs, tenant-wide erasure): ADMIN and the roles above it (runtime/src/roles.ts). */
export function requireAdmin(auth: AuthContext | null): AuthContext {
  const a = requireAuth(auth);
  if (!roleCovers(a.role, 'ADMIN')) {
    throw new AppError(
      'FORBIDDEN',
      `This needs the OWNER or ADMIN role; your token has ${a.role}. Ask an owner or admin of your tenant.`,
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

/**
 * The error-code table (docs/architecture.md#error-codes), read from schemas/errors.json (the same file the SDK generators read),
 * and the one error class every server part throws.
 */
import { readFileSync } from 'node:fs';
import { GraphQLError, type GraphQLFormattedError, type SourceLocation } from 'graphql';
import { z } from 'zod';

const ErrorTable = z.object({
  codes: z.array(
    z.object({
      code: z.string().regex(/^[A-Z][A-Z_]+$/),
      // 200 only for PERSISTED_QUERY_NOT_FOUND: the APQ protocol answers a miss with 200 so clients resend.
      http: z.number().int().min(200).max(599),
      // resend-document: send the same request again at once with the full document (APQ miss).
      retry: z.enum(['never', 'refresh-once', 'backoff', 'after', 'resend-document']),
      description: z.string(),
    }),
  ),
});

export type ErrorCodeEntry = z.infer<typeof ErrorTable>['codes'][number];

const tablePath = new URL('../../schemas/errors.json', import.meta.url);
export const errorTable: readonly ErrorCodeEntry[] = ErrorTable.parse(
  JSON.parse(readFileSync(tablePath, 'utf8')),
).codes;

export type ErrorCode =
  | 'BAD_USER_INPUT'
  | 'GRAPHQL_PARSE_FAILED'
  | 'GRAPHQL_VALIDATION_FAILED'
  | 'QUERY_TOO_COMPLEX'
  | 'UNAUTHENTICATED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'PAYLOAD_TOO_LARGE'
  | 'IDEMPOTENCY_KEY_REUSED'
  | 'VERSION_CONFLICT'
  | 'IDEMPOTENCY_KEY_IN_PROGRESS'
  | 'RATE_LIMITED'
  | 'INTERNAL_SERVER_ERROR'
  | 'SERVICE_UNAVAILABLE'
  | 'PERSISTED_QUERY_NOT_FOUND'
  | 'OPERATION_NOT_TRUSTED'
  | 'EMERGENCY_STOP';

const byCode = new Map(errorTable.map((e) => [e.code, e]));
for (const code of [
  'BAD_USER_INPUT',
  'GRAPHQL_PARSE_FAILED',
  'GRAPHQL_VALIDATION_FAILED',
  'QUERY_TOO_COMPLEX',
  'UNAUTHENTICATED',
  'FORBIDDEN',
  'NOT_FOUND',
  'PAYLOAD_TOO_LARGE',
  'IDEMPOTENCY_KEY_REUSED',
  'VERSION_CONFLICT',
  'IDEMPOTENCY_KEY_IN_PROGRESS',
  'RATE_LIMITED',
  'INTERNAL_SERVER_ERROR',
  'SERVICE_UNAVAILABLE',
  'PERSISTED_QUERY_NOT_FOUND',
  'OPERATION_NOT_TRUSTED',
  'EMERGENCY_STOP',
] satisfies ErrorCode[]) {
  if (!byCode.has(code)) throw new Error(`schemas/errors.json lacks the code ${code}`);
}

/** HTTP status the code maps to when it is a request error (docs/architecture.md#error-codes). */
export function httpStatusOf(code: string): number {
  return byCode.get(code)?.http ?? 500;
}

/**
 * An error a client can act on: a code from the table, a message that says what went wrong and what to do,
 * and optional extensions (retryAfterMs, field path, ...). Never put secrets or user values in the message.
 */
export class AppError extends GraphQLError {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string, extensions: Record<string, unknown> = {}) {
    super(message, { extensions: { ...extensions, code } });
    this.code = code;
    this.name = 'AppError';
  }
}

/**
 * Whether a client may see an error with this code as it is: every code of the table but INTERNAL_SERVER_ERROR.
 * Anything else (no code, a code from a library, INTERNAL_SERVER_ERROR) is masked with `maskedError`.
 */
export function isClientCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && code !== 'INTERNAL_SERVER_ERROR' && byCode.has(code);
}

/**
 * The one shape of a masked error, for the subgraph server, the gateway and its streams: no detail of what broke
 * (that goes to the log, under the same correlation id), what to do (`action`: retry, reconnect), and the
 * correlation id to report.
 */
export function maskedError(
  correlationId: string | undefined,
  where: { path?: readonly (string | number)[]; locations?: readonly SourceLocation[] } = {},
  action = 'Retry later',
): GraphQLFormattedError {
  return {
    message: `Internal server error. ${action}; if it persists, report correlation id ${correlationId ?? 'n/a'}.`,
    ...(where.locations ? { locations: where.locations } : {}),
    ...(where.path ? { path: where.path } : {}),
    extensions: { code: 'INTERNAL_SERVER_ERROR', ...(correlationId ? { correlationId } : {}) },
  };
}

export function badInput(message: string, extensions?: Record<string, unknown>): AppError {
  return new AppError('BAD_USER_INPUT', message, extensions);
}

export function notFound(what: string): AppError {
  return new AppError(
    'NOT_FOUND',
    `${what} was not found or is not visible to you. Check the id and the tenant your token is for.`,
  );
}

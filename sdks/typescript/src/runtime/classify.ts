/**
 * Retry classification (docs/architecture.md#error-codes): turns an HTTP answer that carries errors into a typed AgentGraphError and
 * decides whether a resend can succeed.
 *
 * - An error whose `extensions.code` is in the table: the table's `retry` column decides (`backoff` and `after`
 *   retry; `never` and `refresh-once` do not — UNAUTHENTICATED is handled by the one token refresh instead).
 * - An error without a known code: the HTTP status decides — 408, 429 and 5xx retry; everything else does not.
 * - Several errors: the first gives the code and the class; the call is retryable only if every error is.
 * - No GraphQL body at all (a proxy's 503, an HTML 502): the code is the one table code with that status when
 *   exactly one exists (429 → RATE_LIMITED, 503 → SERVICE_UNAVAILABLE), else HTTP_ERROR; the status decides.
 * Network failures and timeouts are retryable (errors.ts).
 */
import {
  type AgentGraphError,
  type ErrorRegistry,
  type GraphQLErrorShape,
  InvalidResponseError,
} from './errors.js';
import { parseRetryAfter } from './retry-after.js';

export function statusIsRetryable(status: number): boolean {
  return status === 408 || status === 429 || (status >= 500 && status <= 599);
}

/** Whether one GraphQL error, answered with `status`, may be retried. */
export function errorIsRetryable(registry: ErrorRegistry, code: string | undefined, status: number): boolean {
  const entry = code === undefined ? undefined : registry.entry(code);
  if (entry) return entry.retry === 'backoff' || entry.retry === 'after';
  return statusIsRetryable(status);
}

/** Whether this error asks for a token refresh (UNAUTHENTICATED, or a bare 401). */
export function wantsTokenRefresh(error: AgentGraphError): boolean {
  return error.code === 'UNAUTHENTICATED' || (error.status === 401 && error.errors.length === 0);
}

export interface HttpAnswer {
  status: number;
  headers: Headers;
  /** The parsed JSON body, or undefined when the body was not JSON. */
  body: unknown;
}

/**
 * The server's requested wait: `extensions.retryAfterMs` of the first error when it is a non-negative number
 * (millisecond precision, preferred), else the `Retry-After` header (seconds or an HTTP date, relative to `nowMs`).
 */
export function requestedDelayMs(
  errors: readonly GraphQLErrorShape[],
  headers: Headers,
  nowMs: number,
): number | undefined {
  const fromExtension = errors[0]?.extensions?.['retryAfterMs'];
  if (typeof fromExtension === 'number' && Number.isFinite(fromExtension) && fromExtension >= 0) {
    return fromExtension;
  }
  return parseRetryAfter(headers.get('retry-after'), nowMs);
}

function correlationIdOf(errors: readonly GraphQLErrorShape[], headers: Headers): string | undefined {
  const fromExtension = errors[0]?.extensions?.['correlationId'];
  if (typeof fromExtension === 'string') return fromExtension;
  return headers.get('x-correlation-id') ?? undefined;
}

export function graphQLErrorsOf(body: unknown): GraphQLErrorShape[] | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const errors = (body as { errors?: unknown }).errors;
  if (!Array.isArray(errors) || errors.length === 0) return undefined;
  return errors.map((e): GraphQLErrorShape => {
    const entry = (typeof e === 'object' && e !== null ? e : {}) as Record<string, unknown>;
    const shape: GraphQLErrorShape = {
      message: typeof entry['message'] === 'string' ? entry['message'] : 'Unknown error',
    };
    if (Array.isArray(entry['path'])) shape.path = entry['path'] as (string | number)[];
    if (typeof entry['extensions'] === 'object' && entry['extensions'] !== null) {
      shape.extensions = entry['extensions'] as Record<string, unknown>;
    }
    return shape;
  });
}

/** The error a failed answer stands for. Call only when the answer has errors or a non-2xx status. */
export function errorFromAnswer(registry: ErrorRegistry, answer: HttpAnswer, nowMs: number): AgentGraphError {
  const { status, headers, body } = answer;
  const errors = graphQLErrorsOf(body);
  if (errors) {
    const first = errors[0]!;
    const codeOf = (e: GraphQLErrorShape) =>
      typeof e.extensions?.['code'] === 'string' ? (e.extensions['code'] as string) : undefined;
    // An error without a code: the status's one table code, HTTP_ERROR for other failures, GRAPHQL_ERROR in a 2xx.
    const code =
      codeOf(first) ?? (status >= 400 ? (registry.codeForStatus(status) ?? 'HTTP_ERROR') : 'GRAPHQL_ERROR');
    const retryable = errors.every((e) => errorIsRetryable(registry, codeOf(e) ?? code, status));
    const retryAfterMs = requestedDelayMs(errors, headers, nowMs);
    const correlationId = correlationIdOf(errors, headers);
    const data = (body as { data?: unknown }).data;
    return registry.create({
      code,
      message: first.message,
      retryable,
      status,
      errors,
      ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
      ...(correlationId !== undefined ? { correlationId } : {}),
      ...(first.path !== undefined ? { path: first.path } : {}),
      ...(data !== undefined && data !== null ? { data } : {}),
    });
  }
  const correlationId = headers.get('x-correlation-id') ?? undefined;
  const retryAfterMs = parseRetryAfter(headers.get('retry-after'), nowMs);
  const common = {
    status,
    retryable: statusIsRetryable(status),
    ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
    ...(correlationId !== undefined ? { correlationId } : {}),
  };
  if (status >= 200 && status < 300) {
    return new InvalidResponseError({
      ...common,
      code: 'INVALID_RESPONSE',
      retryable: false,
      message: `The server answered ${status} without a GraphQL response (no "data" or "errors"). Check the base URL.`,
    });
  }
  const code = registry.codeForStatus(status) ?? 'HTTP_ERROR';
  return registry.create({
    ...common,
    code,
    message: `The server answered HTTP ${status} without GraphQL errors${
      common.retryable ? '; retrying may help' : ''
    }.`,
  });
}

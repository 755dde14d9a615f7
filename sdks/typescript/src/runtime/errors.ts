/**
 * Typed errors. `AgentGraphError` is what every failed call throws; the server's codes (schemas/errors.json, handed
 * in by generated code as an `ErrorTable`) each get a subclass (`RATE_LIMITED` → `RateLimitedError`), and the
 * client's own failures have fixed classes: `NetworkError`, `TimeoutError`, `PrivacyError`, `InvalidResponseError`.
 * An aborted call rejects with `AbortError` (not an AgentGraphError: nothing went wrong, the caller stopped it).
 */

/** How a code is retried (the `retry` column of schemas/errors.json). */
/**
 * How the SDK treats a code (schemas/errors.json). `resend-document`: a persisted-query miss (APQ); a client that
 * sends only hashes resends once with the full document. This runtime always sends full documents, so it never
 * meets it and never retries it.
 */
export type RetryClass = 'never' | 'refresh-once' | 'backoff' | 'after' | 'resend-document';

export interface ErrorTableEntry {
  code: string;
  http: number;
  retry: RetryClass;
  description: string;
}

/** The shape of schemas/errors.json. */
export interface ErrorTable {
  codes: readonly ErrorTableEntry[];
}

/** Why the retry loop stopped and threw (set on the thrown error). */
export type GiveUpReason =
  /** The error is not retryable (or the call failed locally: privacy gate, payload cap). */
  | 'not-retryable'
  /** The error is retryable but the operation is not: a mutation without an idempotency key is never resent. */
  | 'not-idempotent'
  /** UNAUTHENTICATED again after the one token refresh (or no token provider to refresh with). */
  | 'unauthenticated'
  /** `maxAttempts` requests were sent. */
  | 'attempts'
  /** The next wait would end after `budgetMs` from the start of the call. */
  | 'budget'
  /** The server asked to wait longer than `maxRetryAfterMs` (Retry-After / retryAfterMs above the cap). */
  | 'retry-after-cap';

/** One entry of a GraphQL response's `errors`. */
export interface GraphQLErrorShape {
  message: string;
  path?: readonly (string | number)[];
  extensions?: Record<string, unknown>;
}

export interface AgentGraphErrorInit {
  code: string;
  message: string;
  retryable: boolean;
  status?: number;
  retryAfterMs?: number;
  correlationId?: string;
  path?: readonly (string | number)[];
  /** Every error of the response (the first one gave `code` and `message`). */
  errors?: readonly GraphQLErrorShape[];
  /** Partial data that came with field errors, if any. */
  data?: unknown;
  cause?: unknown;
}

export class AgentGraphError extends Error {
  /** A code from the error table, or NETWORK_ERROR, TIMEOUT, PRIVACY_REFUSED, INVALID_RESPONSE, HTTP_ERROR. */
  readonly code: string;
  /** HTTP status of the answer, when there was one. */
  readonly status?: number;
  /** Whether retrying the same request (with the same idempotency key) can succeed. */
  readonly retryable: boolean;
  /** The wait the server asked for (`extensions.retryAfterMs`, else `Retry-After`), in milliseconds. */
  readonly retryAfterMs?: number;
  /** The server's correlation id (`x-correlation-id` header or `extensions.correlationId`): quote it in reports. */
  readonly correlationId?: string;
  /** Response path of the first GraphQL error. */
  readonly path?: readonly (string | number)[];
  readonly errors: readonly GraphQLErrorShape[];
  readonly data?: unknown;
  /** Requests sent for the logical call (set by the client when it gives up). */
  attempts = 1;
  /** Why the client stopped retrying (set by the client when it gives up). */
  giveUpReason?: GiveUpReason;

  constructor(init: AgentGraphErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = new.target.name;
    this.code = init.code;
    this.retryable = init.retryable;
    this.errors = init.errors ?? [];
    if (init.status !== undefined) this.status = init.status;
    if (init.retryAfterMs !== undefined) this.retryAfterMs = init.retryAfterMs;
    if (init.correlationId !== undefined) this.correlationId = init.correlationId;
    if (init.path !== undefined) this.path = init.path;
    if (init.data !== undefined) this.data = init.data;
  }
}

/** The request never got an HTTP answer (connection refused or reset, DNS, TLS). Retryable. */
export class NetworkError extends AgentGraphError {
  constructor(message: string, cause?: unknown) {
    super({ code: 'NETWORK_ERROR', message, retryable: true, cause });
  }
}

/** No complete answer within the per-attempt timeout. Retryable (the key makes a resend safe). */
export class TimeoutError extends AgentGraphError {
  constructor(message: string, cause?: unknown) {
    super({ code: 'TIMEOUT', message, retryable: true, cause });
  }
}

/** The answer was not a GraphQL response (not JSON, or neither `data` nor `errors`). */
export class InvalidResponseError extends AgentGraphError {}

/** One variable the privacy gate refused: the path and the rule, never the value. */
export interface PrivacyRefusal {
  /** Concrete variable path, e.g. `input.items[2].note`. */
  path: string;
  /** `class:<DataClass>` for a forbidden required field, else the detector id (e.g. `card-number`). */
  reason: string;
}

/** The privacy gate refused the call before anything was serialized or sent. Not retryable. */
export class PrivacyError extends AgentGraphError {
  readonly refusals: readonly PrivacyRefusal[];
  constructor(operation: string, refusals: readonly PrivacyRefusal[]) {
    const list = refusals.map((r) => `${r.path} (${r.reason})`).join(', ');
    super({
      code: 'PRIVACY_REFUSED',
      retryable: false,
      message:
        `The privacy gate refused ${operation}: ${list}. Nothing was sent. Remove these values, or allow their ` +
        `data class in the client's privacy policy if sending them is intended.`,
    });
    this.refusals = refusals;
  }
}

/** The caller's AbortSignal fired. `cause` is the signal's reason. */
export class AbortError extends Error {
  constructor(reason?: unknown) {
    super('The call was aborted by its AbortSignal.', reason === undefined ? undefined : { cause: reason });
    this.name = 'AbortError';
  }
}

export type AgentGraphErrorClass = new (init: AgentGraphErrorInit) => AgentGraphError;

/** `RATE_LIMITED` → `RateLimitedError`. */
export function errorClassName(code: string): string {
  const pascal = code
    .toLowerCase()
    .split('_')
    .filter((part) => part.length > 0)
    .map((part) => part[0]!.toUpperCase() + part.slice(1))
    .join('');
  return `${pascal}Error`;
}

/**
 * The error table turned into classes and lookups. Generated code builds one from schemas/errors.json and exports
 * `registry.classes` so applications can `instanceof` them.
 */
export class ErrorRegistry {
  readonly classes: Readonly<Record<string, AgentGraphErrorClass>>;
  private readonly entries: ReadonlyMap<string, ErrorTableEntry>;
  private readonly byStatus: ReadonlyMap<number, string>;

  constructor(table: ErrorTable) {
    const classes: Record<string, AgentGraphErrorClass> = {};
    const entries = new Map<string, ErrorTableEntry>();
    const statusCodes = new Map<number, string[]>();
    for (const entry of table.codes) {
      entries.set(entry.code, entry);
      const name = errorClassName(entry.code);
      // A named class per code: `{ [name]: class extends ... }` gives the class its `name`.
      classes[entry.code] = { [name]: class extends AgentGraphError {} }[name]!;
      statusCodes.set(entry.http, [...(statusCodes.get(entry.http) ?? []), entry.code]);
    }
    this.classes = classes;
    this.entries = entries;
    // A status stands for a code only when exactly one code has it (409 and 400 are ambiguous).
    this.byStatus = new Map(
      [...statusCodes]
        .filter(([, codes]) => codes.length === 1)
        .map(([status, codes]) => [status, codes[0]!]),
    );
  }

  entry(code: string): ErrorTableEntry | undefined {
    return this.entries.get(code);
  }

  /** The one table code whose HTTP analogue is `status`, if exactly one has it. */
  codeForStatus(status: number): string | undefined {
    return this.byStatus.get(status);
  }

  /** The subclass for `code`, or AgentGraphError itself for a code the table does not know. */
  classFor(code: string): AgentGraphErrorClass {
    return this.classes[code] ?? AgentGraphError;
  }

  create(init: AgentGraphErrorInit): AgentGraphError {
    return new (this.classFor(init.code))(init);
  }
}

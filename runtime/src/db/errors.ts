/**
 * What a failed database call means for the client, in one place (the subgraph server's error formatting for
 * `/graphql` and stream events, and every request-level error answer, call it):
 *
 * - the database cannot be reached or is going away (connection refused or reset, "Connection terminated
 *   unexpectedly", a connection or pool-checkout timeout, SQLSTATE class 08 except 08P01, 57P01 admin_shutdown,
 *   57P02 crash_shutdown, 57P03 cannot_connect_now, 53300 too_many_connections) → SERVICE_UNAVAILABLE with
 *   `retryAfterMs`: the request did nothing that committed unless the commit itself was cut, and then a retry with
 *   the same idempotency key is answered from the stored result; the SDKs retry after the given wait;
 * - the database refused a character of a text value (22021 character_not_in_repertoire: a NUL in text; 22P05
 *   untranslatable_character: a `\u0000` escape in JSON) → BAD_USER_INPUT. The subgraph server refuses such input
 *   before resolvers run, naming the field (input-text.ts); this is the backstop for input that came another way.
 * - anything else → null: the caller masks it as INTERNAL_SERVER_ERROR and logs it.
 *
 * The shapes are what `pg` and `pg-pool` produce (runtime/test/database-errors.test.ts makes each one for real) and
 * PGlite's `DatabaseError` (same `code`). 08P01 protocol_violation is left out: a client fault (e.g. a NUL inside a
 * simple-protocol statement), not an outage.
 */
import { AppError } from '../errors.js';

/** How long a client waits before retrying after the database was unreachable (about a server restart's time). */
export const DATABASE_RETRY_AFTER_MS = 2000;

/** Socket errors (Node's `code`) of a connection that could not be made or was lost. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'EAI_AGAIN',
]);

/** SQLSTATEs outside class 08 that mean "the server cannot serve this connection now". */
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300']);

/** SQLSTATEs of a text value the database cannot store. */
const UNSTORABLE_TEXT_SQLSTATES = new Set(['22021', '22P05']);

/**
 * Messages of `pg` (client.js) and `pg-pool` (index.js) errors that carry no code: the connection ended (while in
 * use, or while connecting: "Connection terminated unexpectedly", "Connection terminated due to connection
 * timeout"), a query on a client whose connection already failed or was closed, a pool checkout that timed out
 * (`connectionTimeoutMillis`), and a pool already ended (the process is shutting down).
 */
const UNAVAILABLE_MESSAGE =
  /^(Connection terminated|Client has encountered a connection error and is not queryable$|Client was closed and is not queryable$|timeout exceeded when trying to connect$|Cannot use a pool after calling end on the pool$)/;

type Verdict = 'unavailable' | 'unstorable-text' | null;

function verdictOf(err: unknown, depth: number): Verdict {
  if (!(err instanceof Error) || depth > 4) return null;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (NETWORK_CODES.has(code)) return 'unavailable';
    if (/^[0-9A-Z]{5}$/.test(code) && 'severity' in err) {
      // A PostgreSQL error (pg's DatabaseError, PGlite's): the SQLSTATE decides, whatever the message says.
      if ((code.startsWith('08') && code !== '08P01') || UNAVAILABLE_SQLSTATES.has(code))
        return 'unavailable';
      return UNSTORABLE_TEXT_SQLSTATES.has(code) ? 'unstorable-text' : null;
    }
  }
  if (UNAVAILABLE_MESSAGE.test(err.message)) return 'unavailable';
  // Node's connect to a name with several addresses fails with an AggregateError of one error per address.
  if (err instanceof AggregateError) {
    for (const inner of err.errors) if (verdictOf(inner, depth + 1) === 'unavailable') return 'unavailable';
  }
  // Wrapped: an Error's `cause`, a GraphQLError's `originalError`.
  return verdictOf(err.cause ?? (err as { originalError?: unknown }).originalError, depth + 1);
}

/**
 * The coded error a failed database call stands for, or null when it is not one this module knows (an unexpected
 * error: mask and log it). The message names no host, port or value.
 */
export function classifyDatabaseError(err: unknown): AppError | null {
  switch (verdictOf(err, 0)) {
    case 'unavailable':
      return new AppError(
        'SERVICE_UNAVAILABLE',
        `The database is unavailable (unreachable or restarting). Retry after ${DATABASE_RETRY_AFTER_MS} ms (extensions.retryAfterMs) with the same idempotency key.`,
        { retryAfterMs: DATABASE_RETRY_AFTER_MS },
      );
    case 'unstorable-text':
      return new AppError(
        'BAD_USER_INPUT',
        'A text value in the request holds a character that cannot be stored (U+0000, also as \\u0000 inside JSON). Remove it and send the request again.',
      );
    default:
      return null;
  }
}

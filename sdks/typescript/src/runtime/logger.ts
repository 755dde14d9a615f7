/**
 * Metadata-only call logs. The client hands an injectable logger one entry per HTTP attempt, per retry wait, per
 * privacy drop and per finished call. Entries are built field by field from metadata — never from headers, tokens,
 * idempotency keys, variables or response bodies — so a logger cannot leak them.
 */

export interface LogEntry {
  event: 'attempt' | 'retry' | 'call' | 'privacy-drop';
  method: 'POST';
  operation: string;
  kind: 'query' | 'mutation';
  /** Requests sent so far for this logical call. */
  attempts: number;
  /** Milliseconds: the attempt's round trip (attempt), or the whole call so far (retry, call). */
  latencyMs: number;
  /** Size of the request body in bytes. */
  bytes: number;
  /** HTTP status of the last answer, if any. */
  status?: number;
  /** Error code of the last failure, if any. */
  code?: string;
  /** Size of the last response body in bytes, if any. */
  responseBytes?: number;
  /** retry: the wait before the next attempt, in milliseconds. */
  delayMs?: number;
  /** call, when it failed: why the client stopped. */
  giveUpReason?: string;
  /** privacy-drop: the variable paths removed (paths only, never values). */
  dropped?: string[];
}

export interface Logger {
  log(entry: LogEntry): void;
}

export const silentLogger: Logger = { log: () => undefined };

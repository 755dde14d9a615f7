/**
 * What a failed or ended stream means, and what the subscription does about it:
 *
 * - `refresh`: UNAUTHENTICATED (or a bare 401) — refresh the token once and reconnect at once;
 * - `streams-off`: the server does not stream here (404/405/501 without GraphQL errors, or a 2xx that is not
 *   `text/event-stream`) — poll if a backlog query was given, else give up;
 * - `retry`: the connection broke, ended, went silent, or the server said so (retryable table codes: 429, 503, 5xx)
 *   — reconnect after a backoff, resuming after the last sequence handled;
 * - `fatal`: the server refused the subscription for good (FORBIDDEN, NOT_FOUND, BAD_USER_INPUT, validation) — the
 *   iterator throws the typed error.
 */
import { errorFromAnswer, graphQLErrorsOf, wantsTokenRefresh } from '../classify.js';
import {
  type AgentGraphError,
  type ErrorRegistry,
  InvalidResponseError,
  NetworkError,
  TimeoutError,
} from '../errors.js';
import type { Refusal } from './event-stream.js';
import type { DropReason } from './types.js';

export interface StreamFailure {
  reason: DropReason;
  error: AgentGraphError;
}

export type FailureAction = 'retry' | 'refresh' | 'streams-off' | 'fatal';

/** Statuses that, without a GraphQL body, mean "no stream endpoint here". */
const STREAMS_OFF_STATUSES = new Set([404, 405, 501]);

export function failureAction(failure: StreamFailure): FailureAction {
  if (failure.reason === 'streams-off') return 'streams-off';
  if (wantsTokenRefresh(failure.error)) return 'refresh';
  return failure.error.retryable ? 'retry' : 'fatal';
}

export function refusalFailure(
  registry: ErrorRegistry,
  refusal: Refusal,
  url: string,
  nowMs: number,
): StreamFailure {
  if (refusal.notAStream) {
    return {
      reason: 'streams-off',
      error: new InvalidResponseError({
        code: 'INVALID_RESPONSE',
        retryable: false,
        status: refusal.status,
        message:
          `${url} answered ${refusal.status} without an event stream: it does not serve graphql-sse here. ` +
          `Check streamUrl (default: the GraphQL endpoint + /stream).`,
      }),
    };
  }
  const error = errorFromAnswer(registry, refusal, nowMs);
  if (STREAMS_OFF_STATUSES.has(refusal.status) && graphQLErrorsOf(refusal.body) === undefined) {
    return {
      reason: 'streams-off',
      error: registry.create({
        code: error.code,
        status: refusal.status,
        retryable: false,
        message:
          `${url} answered HTTP ${refusal.status}: streams are off or not served there. Give the subscription a ` +
          `poll spec to fall back to polling, or check streamUrl (default: the GraphQL endpoint + /stream).`,
        ...(error.correlationId !== undefined ? { correlationId: error.correlationId } : {}),
      }),
    };
  }
  return { reason: 'server-error', error };
}

/** A `next` event with errors and no data: the server ended or refused the subscription inside the stream. */
export function eventErrorFailure(registry: ErrorRegistry, result: unknown, nowMs: number): StreamFailure {
  return {
    reason: 'server-error',
    error: errorFromAnswer(registry, { status: 200, headers: new Headers(), body: result }, nowMs),
  };
}

export function dropFailure(reason: 'ended' | 'idle' | 'complete', idleTimeoutMs: number): StreamFailure {
  const message =
    reason === 'idle'
      ? `The stream sent nothing (not even a heartbeat) for ${idleTimeoutMs} ms; reconnecting.`
      : reason === 'complete'
        ? 'The server completed the stream (it may be restarting); reconnecting.'
        : 'The stream ended without completing; reconnecting.';
  return { reason, error: new NetworkError(message) };
}

export function protocolFailure(detail: string): StreamFailure {
  return {
    reason: 'protocol',
    error: new InvalidResponseError({
      code: 'INVALID_RESPONSE',
      retryable: true,
      message: `The stream sent an event that is not graphql-sse (${detail}); reconnecting.`,
    }),
  };
}

export function connectFailure(error: NetworkError | TimeoutError): StreamFailure {
  return { reason: error instanceof TimeoutError ? 'connect-timeout' : 'network', error };
}

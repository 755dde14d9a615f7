/**
 * The public shapes of subscriptions: what generated code passes (the operation, how to resume, how to poll), what
 * the iterable yields (events and rejected events), and the metadata-only status entries given to `onEvent` and the
 * logger.
 */
import type { OperationSpec } from '../client.js';
import type { AgentGraphError } from '../errors.js';
import type { PrivacyTable } from '../privacy-types.js';

/** A subscription operation, as generated code describes it. */
export interface SubscriptionSpec {
  name: string;
  /** The GraphQL document (exactly one `subscription` operation). */
  document: string;
  kind: 'subscription';
  /** Data class of each variable path; the privacy gate runs once, before the first request. */
  privacy: PrivacyTable;
}

/** How the stream is resumed: the operation's resume argument and the sequence number of each event. */
export interface ResumeSpec<TEvent> {
  /** The variable that takes "the last sequence handled", e.g. `afterSeq`. */
  cursorVariable: string;
  /** The event's sequence number (a non-negative safe integer, increasing along the stream). */
  seqOf: (event: TEvent) => number;
  /**
   * Start after this sequence (0: from the beginning; the inbox's cursor after a restart). Without it the first
   * connection starts live (the server's current position) and no-gap holds from the first event on.
   */
  after?: number;
}

/** Where the poller stands; the backlog query's variables are built from it. */
export interface PollPosition {
  /** The last sequence handled (undefined before the first event when `resume.after` was not given). */
  afterSeq: number | undefined;
  /** The `cursor` of the last page polled (undefined before the first poll). */
  cursor: string | undefined;
}

/** One page of the backlog query, as `PollSpec.select` reads it. */
export interface PollPage<TEvent> {
  /** Events in sequence order; those at or below the last sequence handled are dropped as duplicates. */
  events: readonly TEvent[];
  /** Where the next poll continues (a connection's endCursor); null/undefined keeps the previous one. */
  cursor?: string | null;
  /** Another page is there now: the poller asks for it at once instead of waiting for the next interval. */
  hasMore: boolean;
}

/**
 * The fallback when streaming fails: a query over the same log (e.g. `room(id) { messages(first, after) }`),
 * executed through the client (retries, typed errors, privacy gate) every `pollIntervalMs`.
 */
export interface PollSpec<TEvent, TData = unknown> {
  operation: OperationSpec;
  variables(position: PollPosition): Record<string, unknown>;
  /** The page inside the query's `data` (a method, so a select typed for the query's data fits). */
  select(data: TData): PollPage<TEvent>;
}

export interface SubscribeOptions<TEvent, TVerified = undefined, TData = unknown> {
  resume: ResumeSpec<TEvent>;
  /** The event inside a stream result's `data` (default: `data` itself), e.g. `(d) => d.roomMessages`. */
  select?(data: TData): TEvent;
  /** Polling fallback; without it the subscription only streams (and reconnects for ever). */
  poll?: PollSpec<TEvent>;
  /**
   * Checks each new event before it is yielded (e.g. the intent verifier). A throw does not stop the
   * subscription: the event is yielded as `{ type: 'rejected', error }` and its sequence counts as handled.
   */
  verify?: (event: TEvent) => TVerified | Promise<TVerified>;
  /** Ends the subscription; the iterator then throws AbortError. */
  signal?: AbortSignal;
  /** Status changes (metadata only, the same entries the logger gets): connected, dropped, polling, ... */
  onEvent?: (status: SubscriptionStatus) => void;
  /** A stream silent (no byte, not even a heartbeat) for longer than this is dropped (default 45 000 ms). */
  idleTimeoutMs?: number;
  /** Consecutive stream failures before polling takes over (default 3; needs `poll`). */
  maxStreamFailures?: number;
  /** While polling, how often the stream is tried again (default 30 000 ms). */
  streamRetryMs?: number;
  /** Poll interval when the server's capabilities did not set one (default 5 000 ms). */
  pollIntervalMs?: number;
  /** A `complete` event ends the subscription (default: it is a server restart; reconnect and resume). */
  completeEnds?: boolean;
}

/** Where an item came from. */
export type ItemSource = 'stream' | 'poll';

/** What the subscription yields, in strictly increasing `seq`, each sequence once. */
export type SubscriptionItem<TEvent, TVerified = undefined> =
  | { type: 'event'; seq: number; event: TEvent; verified: TVerified; source: ItemSource }
  /** `verify` refused the event (e.g. IntentVerificationError); the subscription goes on. */
  | { type: 'rejected'; seq: number; event: TEvent; error: AgentGraphError; source: ItemSource };

/** Why a stream ended or could not start. */
export type DropReason =
  /** The connection failed or broke (reset, refused, DNS, cut mid-stream). */
  | 'network'
  /** No answer headers within the client's timeout. */
  | 'connect-timeout'
  /** The body ended without `complete`. */
  | 'ended'
  /** Nothing arrived for `idleTimeoutMs`. */
  | 'idle'
  /** The server sent `complete` (e.g. it is shutting down). */
  | 'complete'
  /** The server refused the stream (HTTP error) or sent an error event. */
  | 'server-error'
  /** The server does not serve streams here (404/405/501 without GraphQL errors, or not `text/event-stream`). */
  | 'streams-off'
  /** An event that is not graphql-sse (bad JSON, no data). */
  | 'protocol';

/**
 * One status entry: built field by field from metadata (never tokens, headers, variables or event payloads), for
 * `onEvent` and for the logger.
 */
export interface SubscriptionStatus {
  event:
    | 'stream-open'
    | 'stream-dropped'
    | 'reconnect-wait'
    | 'token-refresh'
    | 'fallback-poll'
    | 'poll'
    | 'poll-failed'
    | 'stream-restored'
    | 'rejected'
    | 'end';
  operation: string;
  kind: 'subscription';
  /** The mode after this entry. */
  mode: 'stream' | 'poll';
  /** Consecutive stream failures so far. */
  failures: number;
  /** The last sequence handled, if any. */
  lastSeq?: number;
  reason?: DropReason | 'failures' | 'streams-off';
  status?: number;
  code?: string;
  /** reconnect-wait: the wait before the next connection. */
  delayMs?: number;
  /** stream-dropped: how long the stream was open; poll: the round's duration. */
  latencyMs?: number;
  /** stream-dropped / poll: new events delivered; duplicates dropped. */
  events?: number;
  duplicates?: number;
  /** rejected: the sequence refused. */
  seq?: number;
}

export interface SubscriptionLogger {
  log(entry: SubscriptionStatus): void;
}

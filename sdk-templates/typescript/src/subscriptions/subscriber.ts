/**
 * Subscriptions over graphql-sse (distinct connections) that survive a bad network: `subscribe()` returns an
 * AsyncIterable of events in strictly increasing sequence, each sequence once.
 *
 * The loop (one per iteration of the iterable; nothing runs until the consumer asks for an item):
 *   1. Stream: POST the subscription to `<baseUrl>/stream` with the token, the privacy-gated variables and the
 *      resume variable set to the last sequence handled (event-stream.ts). Every `next` event is selected, its
 *      sequence read, duplicates and out-of-order events dropped (sequence.ts), verified (optional) and yielded.
 *   2. A stream that breaks, ends, completes, goes silent for `idleTimeoutMs` or is refused with a retryable error
 *      is a failure (failure.ts): wait the runtime's decorrelated-jitter backoff (retry index = consecutive failures
 *      − 1; a server-requested wait replaces it, up to `maxRetryAfterMs`), then reconnect. UNAUTHENTICATED refreshes
 *      the token once and reconnects at once. A stream that delivered an event, or stayed open for `idleTimeoutMs`,
 *      resets the failure count. Non-retryable refusals end the iteration with the typed error.
 *   3. After `maxStreamFailures` consecutive failures, or at once when the server does not stream here, poll the
 *      backlog query (poller.ts) every `pollIntervalMs` (the server's capabilities, else the option), and try the
 *      stream again every `streamRetryMs`. A stream that opens takes over; it resumes after the last sequence
 *      handled, so the switch has no gap and no duplicate.
 * Statuses go to `onEvent` and the logger (metadata only). Consumer slowness is not silence: the idle timer runs
 * only while the loop waits for bytes.
 */
import { DecorrelatedJitterBackoff } from '../backoff.js';
import type { AgentGraphClient, TokenProvider } from '../client.js';
import { type Clock, systemClock } from '../clock.js';
import type { Detector } from '../detectors.js';
import { AbortError, AgentGraphError, NetworkError, TimeoutError } from '../errors.js';
import { applyPrivacyGate } from '../privacy.js';
import { DEFAULT_PRIVACY_POLICY, type PrivacyPolicy } from '../privacy-types.js';
import type { FetchLike } from '../transport.js';
import { EVENT_STREAM, type EventStream, openEventStream } from './event-stream.js';
import {
  connectFailure,
  dropFailure,
  eventErrorFailure,
  failureAction,
  protocolFailure,
  refusalFailure,
  type StreamFailure,
} from './failure.js';
import { pollRound } from './poller.js';
import { SequenceGate } from './sequence.js';
import type {
  ItemSource,
  SubscribeOptions,
  SubscriptionItem,
  SubscriptionLogger,
  SubscriptionSpec,
  SubscriptionStatus,
} from './types.js';

export const DEFAULT_IDLE_TIMEOUT_MS = 45_000;
export const DEFAULT_MAX_STREAM_FAILURES = 3;
export const DEFAULT_STREAM_RETRY_MS = 30_000;
export const DEFAULT_POLL_INTERVAL_MS = 5_000;

export interface SubscriptionsOptions {
  /** The GraphQL endpoint (default: the client's); streams are at `<baseUrl>/stream` unless `streamUrl` says otherwise. */
  baseUrl?: string;
  streamUrl?: string;
  fetch?: FetchLike;
  /** Extra headers on every stream request (not logged; default: the client's). */
  headers?: Record<string, string>;
  /** Asked for a token on every (re)connect (default: the client's token provider). */
  tokenProvider?: TokenProvider;
  clock?: Clock;
  /** Random numbers in [0, 1) for the backoff jitter (default Math.random). */
  random?: () => number;
  logger?: SubscriptionLogger;
  privacyPolicy?: PrivacyPolicy;
  detectors?: readonly Detector[];
}

export interface Subscriptions {
  subscribe<TEvent, TVerified = undefined, TData = unknown>(
    op: SubscriptionSpec,
    variables: Record<string, unknown>,
    options: SubscribeOptions<TEvent, TVerified, TData>,
  ): AsyncIterable<SubscriptionItem<TEvent, TVerified>>;
}

/** The stream endpoint for a GraphQL endpoint: `https://api/graphql` → `https://api/graphql/stream`. */
export function streamUrlFor(baseUrl: string): string {
  const url = new URL(baseUrl);
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/stream`;
  return url.href;
}

function positive(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value <= 0) {
    throw new TypeError(
      `subscribe: ${name} must be a positive number of milliseconds, got ${String(value)}.`,
    );
  }
  return value;
}

/**
 * Subscriptions for a client: polls go through `client.execute` (its retries, errors and privacy gate), the error
 * table and retry settings are the client's. Every option defaults to the client's own (`client.connection`): the
 * stream URL is `<client baseUrl>/stream`, and the fetch, extra headers, token provider, clock, privacy policy and
 * detectors are the ones the client was built with, so `createSubscriptions(sdk.client)` subscribes as the client's
 * caller, asking its token provider for a token on every (re)connect. An option given here wins.
 */
export function createSubscriptions(
  client: AgentGraphClient,
  options: SubscriptionsOptions = {},
): Subscriptions {
  const conn = client.connection;
  const tokenProvider = options.tokenProvider ?? conn.tokenProvider;
  const detectors = options.detectors ?? conn.detectors;
  const resolved: SubscriptionsOptions = {
    ...options,
    fetch: options.fetch ?? conn.fetch,
    headers: options.headers ?? conn.headers,
    clock: options.clock ?? conn.clock,
    privacyPolicy: options.privacyPolicy ?? conn.privacyPolicy,
    ...(tokenProvider ? { tokenProvider } : {}),
    ...(detectors ? { detectors } : {}),
  };
  const streamUrl = options.streamUrl ?? streamUrlFor(options.baseUrl ?? conn.baseUrl);
  return {
    subscribe<TEvent, TVerified = undefined, TData = unknown>(
      op: SubscriptionSpec,
      variables: Record<string, unknown>,
      subscribeOptions: SubscribeOptions<TEvent, TVerified, TData>,
    ): AsyncIterable<SubscriptionItem<TEvent, TVerified>> {
      if (op.kind !== 'subscription') {
        throw new TypeError(
          `subscribe: ${op.name} is a ${String(op.kind)}, not a subscription; use execute().`,
        );
      }
      if (!subscribeOptions?.resume?.cursorVariable || typeof subscribeOptions.resume.seqOf !== 'function') {
        throw new TypeError(
          'subscribe: resume { cursorVariable, seqOf } is required to resume without gaps.',
        );
      }
      return {
        [Symbol.asyncIterator]: () =>
          new SubscriptionRun<TEvent, TVerified, TData>(
            client,
            resolved,
            streamUrl,
            op,
            variables,
            subscribeOptions,
          ).items(),
      };
    },
  };
}

type Outcome = { kind: 'failure'; failure: StreamFailure; openedAt?: number } | { kind: 'completed' };

class SubscriptionRun<TEvent, TVerified, TData> {
  private readonly clock: Clock;
  private readonly fetchFn: FetchLike;
  private readonly random: () => number;
  private readonly gate: SequenceGate;
  private readonly idleTimeoutMs: number;
  private readonly maxFailures: number;
  private readonly streamRetryMs: number;
  private readonly select: (data: TData) => TEvent;
  private readonly controller = new AbortController();
  private mode: 'stream' | 'poll' = 'stream';
  private failures = 0;
  private backoff: DecorrelatedJitterBackoff;
  private refreshed = false;
  private refreshedToken: string | undefined;
  private lastEventId = '';
  private pollCursor: string | undefined;
  private nextProbeAt = 0;
  /** False until the subscription knows where it stands (resume.after, an event, or a first poll round). */
  private positioned: boolean;

  constructor(
    private readonly client: AgentGraphClient,
    private readonly options: SubscriptionsOptions,
    private readonly streamUrl: string,
    private readonly op: SubscriptionSpec,
    private readonly variables: Record<string, unknown>,
    private readonly sub: SubscribeOptions<TEvent, TVerified, TData>,
  ) {
    this.clock = options.clock ?? systemClock;
    this.fetchFn = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.random = options.random ?? Math.random;
    this.gate = new SequenceGate(sub.resume.after);
    this.positioned = sub.resume.after !== undefined;
    this.idleTimeoutMs = positive('idleTimeoutMs', sub.idleTimeoutMs, DEFAULT_IDLE_TIMEOUT_MS);
    this.streamRetryMs = positive('streamRetryMs', sub.streamRetryMs, DEFAULT_STREAM_RETRY_MS);
    this.maxFailures = Math.floor(
      positive('maxStreamFailures', sub.maxStreamFailures, DEFAULT_MAX_STREAM_FAILURES),
    );
    positive('pollIntervalMs', sub.pollIntervalMs, DEFAULT_POLL_INTERVAL_MS);
    this.select = sub.select ?? ((data: TData) => data as unknown as TEvent);
    this.backoff = this.newBackoff();
  }

  private newBackoff(): DecorrelatedJitterBackoff {
    const { baseDelayMs, maxDelayMs } = this.client.settings.retry;
    return new DecorrelatedJitterBackoff(baseDelayMs, maxDelayMs, this.random);
  }

  private get signal(): AbortSignal {
    return this.controller.signal;
  }

  private status(
    entry: Omit<SubscriptionStatus, 'operation' | 'kind' | 'mode' | 'failures' | 'lastSeq'>,
  ): void {
    const status: SubscriptionStatus = {
      ...entry,
      operation: this.op.name,
      kind: 'subscription',
      mode: this.mode,
      failures: this.failures,
      ...(this.gate.last !== undefined ? { lastSeq: this.gate.last } : {}),
    };
    this.options.logger?.log(status);
    this.sub.onEvent?.(status);
  }

  private throwIfAborted(): void {
    if (this.signal.aborted) throw new AbortError(this.sub.signal?.reason);
  }

  async *items(): AsyncGenerator<SubscriptionItem<TEvent, TVerified>, void, undefined> {
    const outer = this.sub.signal;
    const onAbort = () => this.controller.abort(outer?.reason);
    if (outer?.aborted) throw new AbortError(outer.reason);
    outer?.addEventListener('abort', onAbort, { once: true });
    try {
      const gated = applyPrivacyGate(
        this.op.name,
        this.variables,
        this.op.privacy,
        this.options.privacyPolicy ?? DEFAULT_PRIVACY_POLICY,
        this.options.detectors,
      ).variables;
      for (;;) {
        this.throwIfAborted();
        if (this.mode === 'stream' || this.clock.now() >= this.nextProbeAt) {
          const outcome = yield* this.streamOnce(gated);
          if (outcome.kind === 'completed') {
            this.status({ event: 'end', reason: 'complete' });
            return;
          }
          const waitMs = await this.onFailure(outcome.failure, outcome.openedAt);
          if (waitMs !== undefined) {
            await this.sleep(waitMs);
            continue;
          }
          if (this.mode === 'stream') continue; // reconnect at once (token refreshed)
        }
        // Polling.
        yield* this.pollOnce();
        await this.sleep(this.pollIntervalMs());
      }
    } finally {
      outer?.removeEventListener('abort', onAbort);
      this.controller.abort();
    }
  }

  private pollIntervalMs(): number {
    return this.client.settings.pollIntervalMs ?? this.sub.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS;
  }

  private async sleep(ms: number): Promise<void> {
    try {
      await this.clock.sleep(ms, this.signal);
    } catch (err) {
      if (this.signal.aborted) throw new AbortError(this.sub.signal?.reason);
      throw err;
    }
  }

  /** Records a failure and decides: a wait before reconnecting, undefined to reconnect/poll now. Throws if fatal. */
  private async onFailure(failure: StreamFailure, openedAt: number | undefined): Promise<number | undefined> {
    const action = failureAction(failure);
    if (action === 'fatal') {
      this.status({ event: 'end', reason: failure.reason, code: failure.error.code, ...statusOf(failure) });
      throw failure.error;
    }
    if (action === 'refresh') {
      const provider = this.options.tokenProvider;
      if (this.refreshed || !provider) {
        this.status({ event: 'end', reason: failure.reason, code: failure.error.code, ...statusOf(failure) });
        throw failure.error;
      }
      this.refreshed = true;
      this.status({ event: 'token-refresh', code: failure.error.code });
      try {
        this.refreshedToken = await provider.refresh();
      } catch {
        this.status({ event: 'end', reason: failure.reason, code: failure.error.code, ...statusOf(failure) });
        throw failure.error;
      }
      return undefined;
    }
    if (action === 'streams-off') {
      if (!this.sub.poll) {
        this.status({ event: 'end', reason: 'streams-off', code: failure.error.code, ...statusOf(failure) });
        throw failure.error;
      }
      this.nextProbeAt = this.clock.now() + this.streamRetryMs;
      if (this.mode === 'stream') {
        this.mode = 'poll';
        this.status({ event: 'fallback-poll', reason: 'streams-off', ...statusOf(failure) });
      }
      return undefined;
    }
    // retry
    if (openedAt !== undefined && this.clock.now() - openedAt >= this.idleTimeoutMs) this.progress();
    this.failures += 1;
    if (this.mode === 'poll') {
      this.nextProbeAt = this.clock.now() + this.streamRetryMs;
      return undefined;
    }
    if (this.sub.poll && this.failures >= this.maxFailures) {
      this.mode = 'poll';
      this.nextProbeAt = this.clock.now() + this.streamRetryMs;
      this.status({ event: 'fallback-poll', reason: 'failures', code: failure.error.code });
      return undefined;
    }
    const { maxRetryAfterMs } = this.client.settings.retry;
    const requested = failure.error.retryAfterMs;
    const delayMs =
      requested !== undefined ? Math.min(requested, maxRetryAfterMs) : this.backoff.next(this.failures - 1);
    this.status({ event: 'reconnect-wait', reason: failure.reason, code: failure.error.code, delayMs });
    return delayMs;
  }

  /** The stream made progress: failures, backoff and the one token refresh start over. */
  private progress(): void {
    if (this.failures === 0 && !this.refreshed) return;
    this.failures = 0;
    this.refreshed = false;
    this.backoff = this.newBackoff();
  }

  private async *streamOnce(
    variables: Record<string, unknown>,
  ): AsyncGenerator<SubscriptionItem<TEvent, TVerified>, Outcome, undefined> {
    const token = this.refreshedToken ?? (await this.options.tokenProvider?.getToken());
    this.refreshedToken = undefined;
    const headers: Record<string, string> = {
      ...this.options.headers,
      'content-type': 'application/json',
      accept: EVENT_STREAM,
    };
    if (token !== undefined) headers['authorization'] = `Bearer ${token}`;
    if (this.lastEventId) headers['last-event-id'] = this.lastEventId;
    const after = this.gate.last;
    const body = JSON.stringify({
      query: this.op.document,
      operationName: this.op.name,
      variables: after === undefined ? variables : { ...variables, [this.sub.resume.cursorVariable]: after },
    });

    let stream: EventStream;
    try {
      const opened = await openEventStream(
        this.fetchFn,
        { url: this.streamUrl, headers, body },
        {
          clock: this.clock,
          connectTimeoutMs: this.client.settings.timeoutMs,
          idleTimeoutMs: this.idleTimeoutMs,
          signal: this.signal,
        },
      );
      if (opened.kind === 'refused') {
        return {
          kind: 'failure',
          failure: refusalFailure(this.client.errors, opened, this.streamUrl, this.clock.now()),
        };
      }
      stream = opened;
    } catch (err) {
      if (err instanceof NetworkError || err instanceof TimeoutError) {
        return { kind: 'failure', failure: connectFailure(err) };
      }
      throw err;
    }

    const openedAt = this.clock.now();
    if (this.mode === 'poll') {
      this.mode = 'stream';
      this.status({ event: 'stream-restored', status: stream.status });
    }
    this.status({ event: 'stream-open', status: stream.status });
    let delivered = 0;
    let duplicates = 0;
    const dropped = (failure: StreamFailure): Outcome => {
      this.lastEventId = stream.lastEventId;
      stream.close();
      this.status({
        event: 'stream-dropped',
        reason: failure.reason,
        code: failure.error.code,
        latencyMs: this.clock.now() - openedAt,
        events: delivered,
        duplicates,
      });
      return { kind: 'failure', failure, openedAt };
    };
    try {
      for (;;) {
        let batch: Awaited<ReturnType<EventStream['read']>>;
        try {
          batch = await stream.read();
        } catch (err) {
          if (err instanceof NetworkError) return dropped({ reason: 'network', error: err });
          throw err;
        }
        if (batch === 'ended' || batch === 'idle') return dropped(dropFailure(batch, this.idleTimeoutMs));
        for (const item of batch) {
          if (item.kind === 'comment') continue;
          if (item.type === 'complete') {
            if (this.sub.completeEnds) return { kind: 'completed' };
            return dropped(dropFailure('complete', this.idleTimeoutMs));
          }
          if (item.type !== 'next') continue; // not graphql-sse's; ignored for forward compatibility
          let result: { data?: unknown; errors?: unknown };
          try {
            result = JSON.parse(item.data) as typeof result;
          } catch {
            return dropped(protocolFailure('a next event whose data is not JSON'));
          }
          if (typeof result !== 'object' || result === null) {
            return dropped(protocolFailure('a next event whose data is not an object'));
          }
          if (result.data === undefined || result.data === null) {
            if (Array.isArray(result.errors) && result.errors.length > 0) {
              return dropped(eventErrorFailure(this.client.errors, result, this.clock.now()));
            }
            return dropped(protocolFailure('a next event with neither data nor errors'));
          }
          const event = this.select(result.data as TData);
          const seq = this.sub.resume.seqOf(event);
          if (!this.gate.admit(seq)) {
            duplicates += 1;
            continue;
          }
          delivered += 1;
          this.progress();
          yield await this.item(event, seq, 'stream');
        }
      }
    } finally {
      stream.close();
    }
  }

  private async *pollOnce(): AsyncGenerator<SubscriptionItem<TEvent, TVerified>, void, undefined> {
    const poll = this.sub.poll!;
    const startedAt = this.clock.now();
    const round = pollRound({
      client: this.client,
      poll,
      gate: this.gate,
      cursor: this.pollCursor,
      seqOf: this.sub.resume.seqOf,
      positionOnly: !this.positioned && this.gate.last === undefined,
      signal: this.signal,
    });
    let delivered = 0;
    for (;;) {
      const step = await round.next();
      if (step.done) {
        const result = step.value;
        this.pollCursor = result.cursor;
        if (!result.error) this.positioned = true;
        if (result.error) {
          this.status({
            event: 'poll-failed',
            code: result.error.code,
            latencyMs: this.clock.now() - startedAt,
            ...(result.error.status !== undefined ? { status: result.error.status } : {}),
          });
        } else {
          this.status({
            event: 'poll',
            latencyMs: this.clock.now() - startedAt,
            events: delivered,
            duplicates: result.duplicates,
          });
        }
        return;
      }
      delivered += 1;
      const { event, seq } = step.value;
      yield await this.item(event, seq, 'poll');
    }
  }

  private async item(
    event: TEvent,
    seq: number,
    source: ItemSource,
  ): Promise<SubscriptionItem<TEvent, TVerified>> {
    if (!this.sub.verify) return { type: 'event', seq, event, verified: undefined as TVerified, source };
    try {
      const verified = await this.sub.verify(event);
      return { type: 'event', seq, event, verified, source };
    } catch (err) {
      if (err instanceof AbortError) throw err;
      const error =
        err instanceof AgentGraphError
          ? err
          : new AgentGraphError({
              code: 'VERIFICATION_FAILED',
              retryable: false,
              message: `The event at sequence ${seq} failed verification: ${err instanceof Error ? err.message : String(err)}`,
              cause: err,
            });
      this.status({ event: 'rejected', seq, code: error.code });
      return { type: 'rejected', seq, event, error, source };
    }
  }
}

function statusOf(failure: StreamFailure): { status?: number } {
  return failure.error.status !== undefined ? { status: failure.error.status } : {};
}

/**
 * AgentGraphClient: the small core every generated method goes through (the Stainless/openai-node shape).
 *
 * `execute(op, variables, options)` runs one logical call:
 *   1. idempotency key — mutations marked `idempotent` get one key, made once (or the caller's), sent on every
 *      attempt as the `idempotencyKey` variable and the `Idempotency-Key` header;
 *   2. privacy gate — drops or refuses variables by data class and content (privacy.ts), before serialization;
 *   3. payload cap — a body above `maxPayloadBytes` fails locally with PAYLOAD_TOO_LARGE; nothing is sent;
 *   4. attempts — POST with a fresh token from the token provider, classify the answer (classify.ts), and:
 *      UNAUTHENTICATED → refresh the token once and resend at once (safe for every operation: the request was
 *      rejected before it ran); a retryable failure → wait and resend, if the operation may be retried (queries,
 *      and mutations carrying an idempotency key; nothing else); otherwise throw.
 *   Waits: every retry draws one random number for the decorrelated-jitter delay (backoff.ts, attempt = retries
 *   so far); a server-requested wait (`extensions.retryAfterMs`, else `Retry-After`) replaces that delay exactly
 *   (as Polly's DelayGenerator does, the random number is still drawn). The retry loop gives up, throwing the
 *   last error with `attempts` and `giveUpReason` set, when: the error is not retryable (`not-retryable`) or the
 *   operation is not (`not-idempotent`); `maxAttempts` requests were sent (`attempts`); the
 *   server asks for more than `maxRetryAfterMs` (`retry-after-cap`, no wait); or the wait would end more than
 *   `budgetMs` after the call started (`budget`, no wait). The token refresh resend counts as an attempt but
 *   neither waits nor draws a random number.
 */
import { DecorrelatedJitterBackoff } from './backoff.js';
import { errorFromAnswer, graphQLErrorsOf } from './classify.js';
import { type Clock, systemClock } from './clock.js';
import type { Detector } from './detectors.js';
import { AbortError, AgentGraphError, ErrorRegistry, type ErrorTable, type GiveUpReason } from './errors.js';
import {
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENCY_KEY_VARIABLE,
  randomKey,
  resolveIdempotencyKey,
} from './idempotency.js';
import { type LogEntry, type Logger, silentLogger } from './logger.js';
import { type Connection, paginate } from './pagination.js';
import { applyPrivacyGate } from './privacy.js';
import { decideRetry } from './retry.js';
import { DEFAULT_PRIVACY_POLICY, type PrivacyPolicy, type PrivacyTable } from './privacy-types.js';
import {
  applyCapabilities,
  CAPABILITIES_DOCUMENT,
  type Capabilities,
  type EffectiveSettings,
  resolveSettings,
  type RetrySettings,
} from './settings.js';
import { ACCEPT, type FetchLike, type HttpResponse, sendHttp, utf8Length } from './transport.js';

/** What generated code passes for each operation. */
export interface OperationSpec {
  /** The operation name (operationName in the request). */
  name: string;
  /** The GraphQL document (exactly one operation). */
  document: string;
  kind: 'query' | 'mutation';
  /** A mutation that takes an idempotency key, and may therefore be retried. Ignored for queries. */
  idempotent: boolean;
  /** Data class of each input path (privacy-types.ts). */
  privacy: PrivacyTable;
}

export interface TokenProvider {
  /** The current access token (the provider caches and renews it). */
  getToken(): Promise<string>;
  /** A new access token after the server said UNAUTHENTICATED; called at most once per logical call. */
  refresh(): Promise<string>;
}

export interface AgentGraphClientOptions {
  /** The GraphQL endpoint, e.g. `https://api.example.com/graphql` (streams live at `<baseUrl>/stream`). */
  baseUrl: string;
  /** schemas/errors.json, from the generated code. */
  errorTable: ErrorTable;
  fetch?: FetchLike;
  /** Extra headers on every request (not logged). */
  headers?: Record<string, string>;
  tokenProvider?: TokenProvider;
  clock?: Clock;
  /** Random numbers in [0, 1) for the backoff jitter (default Math.random). */
  random?: () => number;
  /** Makes idempotency keys (default crypto.randomUUID). */
  newKey?: () => string;
  /** Per-attempt timeout in milliseconds (default 10 000). */
  timeoutMs?: number;
  retry?: Partial<RetrySettings>;
  /** Local payload cap in bytes (default 5 MiB; the server's `limits.maxPayloadBytes` replaces it). */
  maxPayloadBytes?: number;
  privacyPolicy?: PrivacyPolicy;
  /** Replace the content detectors (default: detectors.ts DETECTORS). */
  detectors?: readonly Detector[];
  logger?: Logger;
  /** Capabilities already known (e.g. cached); same effect as `applyCapabilities`. */
  capabilities?: Capabilities;
}

export interface CallOptions {
  signal?: AbortSignal;
  /** Use this idempotency key (e.g. one persisted with an outbox entry) instead of making one. */
  idempotencyKey?: string;
  /** Per-attempt timeout for this call. */
  timeoutMs?: number;
}

export interface ExecuteResult<TData> {
  data: TData;
  extensions?: Record<string, unknown>;
  /** The server answered with the stored result of an earlier attempt (`extensions.idempotentReplay`). */
  replayed: boolean;
  /** Requests sent for this call. */
  attempts: number;
  /** The key sent, for idempotent mutations. */
  idempotencyKey?: string;
  /** The HTTP answer that carried the result: status, headers, parsed body and its size. */
  response: HttpResponse;
}

/** What requests outside `execute` (e.g. `uploadPackage`) are sent with: the client's own endpoint and plumbing. */
export interface ClientConnection {
  baseUrl: string;
  fetch: FetchLike;
  tokenProvider?: TokenProvider;
  /** Extra headers on every request (not logged). */
  headers: Readonly<Record<string, string>>;
  clock: Clock;
  logger: Logger;
  /** The privacy policy and detectors the client gates variables with (subscriptions gate theirs the same way). */
  privacyPolicy: PrivacyPolicy;
  detectors?: readonly Detector[];
}

export class AgentGraphClient {
  readonly errors: ErrorRegistry;
  private settingsValue: EffectiveSettings;
  private readonly fetchFn: FetchLike;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly newKey: () => string;
  private readonly logger: Logger;
  private readonly policy: PrivacyPolicy;

  constructor(private readonly options: AgentGraphClientOptions) {
    if (typeof options.baseUrl !== 'string' || options.baseUrl.length === 0) {
      throw new TypeError('AgentGraphClient: baseUrl is required (the GraphQL endpoint URL).');
    }
    if (!options.errorTable || !Array.isArray(options.errorTable.codes)) {
      throw new TypeError(
        'AgentGraphClient: errorTable is required (schemas/errors.json, from the generated code).',
      );
    }
    this.errors = new ErrorRegistry(options.errorTable);
    this.settingsValue = resolveSettings(options.retry, options.maxPayloadBytes, options.timeoutMs);
    if (options.capabilities)
      this.settingsValue = applyCapabilities(this.settingsValue, options.capabilities);
    this.fetchFn = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.clock = options.clock ?? systemClock;
    this.random = options.random ?? Math.random;
    this.newKey = options.newKey ?? randomKey;
    this.logger = options.logger ?? silentLogger;
    this.policy = options.privacyPolicy ?? DEFAULT_PRIVACY_POLICY;
  }

  /** The endpoint, fetch, token provider, headers, clock, logger and privacy gate this client sends with. */
  get connection(): ClientConnection {
    return {
      baseUrl: this.options.baseUrl,
      fetch: this.fetchFn,
      ...(this.options.tokenProvider ? { tokenProvider: this.options.tokenProvider } : {}),
      headers: { ...this.options.headers },
      clock: this.clock,
      logger: this.logger,
      privacyPolicy: this.policy,
      ...(this.options.detectors ? { detectors: this.options.detectors } : {}),
    };
  }

  /** The settings in effect (defaults ← options ← capabilities). */
  get settings(): Readonly<EffectiveSettings> {
    return this.settingsValue;
  }

  applyCapabilities(capabilities: Capabilities): void {
    this.settingsValue = applyCapabilities(this.settingsValue, capabilities);
  }

  /** Reads the server's `capabilities` and applies them; returns what the server sent. */
  async refreshCapabilities(options: CallOptions = {}): Promise<Capabilities> {
    const result = await this.execute<{ capabilities: Capabilities }>(
      {
        name: 'Capabilities',
        document: CAPABILITIES_DOCUMENT,
        kind: 'query',
        idempotent: false,
        privacy: {},
      },
      {},
      options,
    );
    this.applyCapabilities(result.data.capabilities);
    return result.data.capabilities;
  }

  /** Every node of a connection, page after page (`after` is set from each page's endCursor). */
  paginate<TNode, TData = unknown>(
    op: OperationSpec,
    variables: Record<string, unknown>,
    select: (data: TData) => Connection<TNode>,
    options: { signal?: AbortSignal; timeoutMs?: number } = {},
  ): AsyncIterable<TNode> {
    return paginate<TNode>(
      async (after, signal) => {
        const vars = after === undefined ? variables : { ...variables, after };
        const result = await this.execute<TData>(op, vars, {
          ...(signal ? { signal } : {}),
          ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
        });
        return select(result.data);
      },
      options.signal ? { signal: options.signal } : {},
    );
  }

  async execute<TData = unknown>(
    op: OperationSpec,
    variables: Record<string, unknown> = {},
    options: CallOptions = {},
  ): Promise<ExecuteResult<TData>> {
    const { signal } = options;
    if (signal?.aborted) throw new AbortError(signal.reason);
    const settings = this.settingsValue;
    const startedAt = this.clock.now();

    // 1. Idempotency key, once per logical call.
    let idempotencyKey: string | undefined;
    let vars: Record<string, unknown> = variables;
    if (op.kind === 'mutation' && op.idempotent) {
      idempotencyKey = resolveIdempotencyKey(
        options.idempotencyKey,
        variables[IDEMPOTENCY_KEY_VARIABLE],
        this.newKey,
      );
      vars = { ...variables, [IDEMPOTENCY_KEY_VARIABLE]: idempotencyKey };
    }
    const mayRetry = op.kind === 'query' || idempotencyKey !== undefined;

    const base = { method: 'POST' as const, operation: op.name, kind: op.kind };

    let bytes = 0;
    let response: HttpResponse | undefined;
    /** Marks the error with how the call ended, logs the call, and returns the error to throw. */
    const giveUp = (error: AgentGraphError, attempts: number, reason: GiveUpReason): AgentGraphError => {
      error.attempts = attempts;
      error.giveUpReason = reason;
      this.logger.log({
        ...this.entry(base, 'call', attempts, this.clock.now() - startedAt, bytes, response),
        code: error.code,
        giveUpReason: reason,
      });
      return error;
    };

    // 2. Privacy gate, before serialization.
    let gated: ReturnType<typeof applyPrivacyGate>;
    try {
      gated = applyPrivacyGate(op.name, vars, op.privacy, this.policy, this.options.detectors);
    } catch (err) {
      if (err instanceof AgentGraphError) throw giveUp(err, 0, 'not-retryable');
      throw err;
    }
    if (gated.dropped.length > 0) {
      this.logger.log({
        ...base,
        event: 'privacy-drop',
        attempts: 0,
        latencyMs: 0,
        bytes: 0,
        dropped: gated.dropped,
      });
    }

    // 3. Serialize and check the payload cap.
    const body = JSON.stringify({ query: op.document, operationName: op.name, variables: gated.variables });
    bytes = utf8Length(body);
    if (bytes > settings.maxPayloadBytes) {
      const error = this.errors.create({
        code: 'PAYLOAD_TOO_LARGE',
        retryable: false,
        message:
          `The request for ${op.name} is ${bytes} bytes, above the ${settings.maxPayloadBytes}-byte payload limit. ` +
          `Nothing was sent; send less data per call.`,
      });
      throw giveUp(error, 0, 'not-retryable');
    }

    // 4. Attempts.
    const backoff = new DecorrelatedJitterBackoff(
      settings.retry.baseDelayMs,
      settings.retry.maxDelayMs,
      this.random,
    );
    let attempts = 0;
    let retries = 0;
    let refreshedToken: string | undefined;
    let refreshed = false;
    for (;;) {
      if (signal?.aborted) throw new AbortError(signal.reason);
      const token = refreshedToken ?? (await this.options.tokenProvider?.getToken());
      refreshedToken = undefined;
      const headers: Record<string, string> = {
        ...this.options.headers,
        'content-type': 'application/json',
        accept: ACCEPT,
      };
      if (token !== undefined) headers['authorization'] = `Bearer ${token}`;
      if (idempotencyKey !== undefined) headers[IDEMPOTENCY_KEY_HEADER] = idempotencyKey;

      attempts += 1;
      const attemptStart = this.clock.now();
      response = undefined;
      let error: AgentGraphError;
      try {
        response = await sendHttp(this.fetchFn, {
          url: this.options.baseUrl,
          headers,
          body,
          ...(signal ? { signal } : {}),
          timeoutMs: options.timeoutMs ?? settings.timeoutMs,
        });
        const success = this.successOf<TData>(response);
        if (success) {
          const latencyMs = this.clock.now() - startedAt;
          this.logger.log(
            this.entry(base, 'attempt', attempts, this.clock.now() - attemptStart, bytes, response),
          );
          this.logger.log(this.entry(base, 'call', attempts, latencyMs, bytes, response));
          return {
            ...success,
            attempts,
            ...(idempotencyKey !== undefined ? { idempotencyKey } : {}),
            response,
          };
        }
        error = errorFromAnswer(this.errors, response, this.clock.now());
      } catch (err) {
        if (err instanceof AbortError || !(err instanceof AgentGraphError)) throw err;
        error = err;
      }
      this.logger.log({
        ...this.entry(base, 'attempt', attempts, this.clock.now() - attemptStart, bytes, response),
        code: error.code,
      });

      const decision = decideRetry(
        error,
        {
          attempts,
          retries,
          refreshed,
          canRefresh: this.options.tokenProvider !== undefined,
          mayRetry,
          startedAt,
        },
        settings.retry,
        backoff,
        this.clock.now(),
      );
      if (decision.action === 'give-up') throw giveUp(error, attempts, decision.reason);
      if (decision.action === 'refresh') {
        refreshed = true;
        try {
          refreshedToken = await this.options.tokenProvider!.refresh();
        } catch {
          throw giveUp(error, attempts, 'unauthenticated');
        }
        continue;
      }
      const { delayMs } = decision;
      retries += 1;
      this.logger.log({
        ...base,
        event: 'retry',
        attempts,
        latencyMs: this.clock.now() - startedAt,
        bytes,
        code: error.code,
        delayMs,
        ...(response ? { status: response.status } : {}),
      });
      try {
        await this.clock.sleep(delayMs, signal);
      } catch (err) {
        if (signal?.aborted) throw new AbortError(signal.reason);
        throw err;
      }
    }
  }

  private successOf<TData>(
    response: HttpResponse,
  ): { data: TData; extensions?: Record<string, unknown>; replayed: boolean } | undefined {
    if (response.status < 200 || response.status > 299) return undefined;
    const body = response.body;
    if (typeof body !== 'object' || body === null || graphQLErrorsOf(body)) return undefined;
    const { data, extensions } = body as { data?: unknown; extensions?: unknown };
    if (data === undefined || data === null) return undefined;
    const ext =
      typeof extensions === 'object' && extensions !== null
        ? (extensions as Record<string, unknown>)
        : undefined;
    return {
      data: data as TData,
      ...(ext ? { extensions: ext } : {}),
      replayed: ext?.['idempotentReplay'] === true,
    };
  }

  private entry(
    base: Pick<LogEntry, 'method' | 'operation' | 'kind'>,
    event: LogEntry['event'],
    attempts: number,
    latencyMs: number,
    bytes: number,
    response: HttpResponse | undefined,
  ): LogEntry {
    return {
      ...base,
      event,
      attempts,
      latencyMs,
      bytes,
      ...(response ? { status: response.status, responseBytes: response.bytes } : {}),
    };
  }
}

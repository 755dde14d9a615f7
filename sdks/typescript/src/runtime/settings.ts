/**
 * Client settings: defaults, the caller's options, and what the server publishes in its `capabilities` query
 * (operators lower retries there during an incident). Capabilities, once applied, replace the retry budget and
 * the payload cap whatever the defaults or options said: the server's word wins.
 */

export interface RetrySettings {
  /** Requests per logical call, the first included (default 5). */
  maxAttempts: number;
  /** Time from the start of a call after which no wait may end (default 30 000 ms). */
  budgetMs: number;
  /** Median first backoff delay `f` of the decorrelated-jitter formula (default 200 ms, whole milliseconds). */
  baseDelayMs: number;
  /** Upper bound of one backoff delay, Polly's MaxDelay (default 30 000 ms). */
  maxDelayMs: number;
  /**
   * Longest server-requested wait (Retry-After / retryAfterMs) the client obeys (default 60 000 ms). A longer one
   * ends the call at once with the server's error (retryable, with retryAfterMs), so the caller — or the outbox —
   * can schedule the retry instead of a call that hangs for minutes.
   */
  maxRetryAfterMs: number;
}

export const DEFAULT_RETRY_SETTINGS: RetrySettings = {
  maxAttempts: 5,
  budgetMs: 30_000,
  baseDelayMs: 200,
  maxDelayMs: 30_000,
  maxRetryAfterMs: 60_000,
};

export const DEFAULT_MAX_PAYLOAD_BYTES = 5 * 1024 * 1024;
export const DEFAULT_TIMEOUT_MS = 10_000;

/** The part of the `capabilities` query the runtime reads. */
export interface Capabilities {
  limits?: { maxPayloadBytes?: number | null } | null;
  client?: {
    retryMaxAttempts?: number | null;
    retryBudgetMs?: number | null;
    pollIntervalMs?: number | null;
    telemetryEnabled?: boolean | null;
  } | null;
}

export const CAPABILITIES_DOCUMENT =
  'query Capabilities { capabilities { limits { maxPayloadBytes } ' +
  'client { retryMaxAttempts retryBudgetMs pollIntervalMs telemetryEnabled } } }';

export interface EffectiveSettings {
  retry: RetrySettings;
  maxPayloadBytes: number;
  timeoutMs: number;
  /** From capabilities; used by the stream fallback (polling). */
  pollIntervalMs?: number;
  telemetryEnabled?: boolean;
}

function check(name: string, value: number, min: number): number {
  if (!Number.isFinite(value) || value < min) {
    throw new TypeError(`AgentGraphClient: ${name} must be a number ≥ ${min}, got ${String(value)}.`);
  }
  return value;
}

export function resolveSettings(
  retry: Partial<RetrySettings> | undefined,
  maxPayloadBytes: number | undefined,
  timeoutMs: number | undefined,
): EffectiveSettings {
  const merged = { ...DEFAULT_RETRY_SETTINGS, ...retry };
  return {
    retry: {
      maxAttempts: Math.floor(check('retry.maxAttempts', merged.maxAttempts, 1)),
      budgetMs: check('retry.budgetMs', merged.budgetMs, 0),
      baseDelayMs: Math.floor(check('retry.baseDelayMs', merged.baseDelayMs, 0)),
      maxDelayMs: check('retry.maxDelayMs', merged.maxDelayMs, 0),
      maxRetryAfterMs: check('retry.maxRetryAfterMs', merged.maxRetryAfterMs, 0),
    },
    maxPayloadBytes: check('maxPayloadBytes', maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES, 1),
    timeoutMs: check('timeoutMs', timeoutMs ?? DEFAULT_TIMEOUT_MS, 1),
  };
}

/** Settings after applying the server's capabilities (values absent or invalid there are left alone). */
export function applyCapabilities(
  settings: EffectiveSettings,
  capabilities: Capabilities,
): EffectiveSettings {
  const positive = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v > 0;
  const next: EffectiveSettings = { ...settings, retry: { ...settings.retry } };
  const client = capabilities.client;
  if (positive(client?.retryMaxAttempts)) next.retry.maxAttempts = Math.floor(client.retryMaxAttempts);
  if (positive(client?.retryBudgetMs)) next.retry.budgetMs = client.retryBudgetMs;
  if (positive(client?.pollIntervalMs)) next.pollIntervalMs = client.pollIntervalMs;
  if (typeof client?.telemetryEnabled === 'boolean') next.telemetryEnabled = client.telemetryEnabled;
  if (positive(capabilities.limits?.maxPayloadBytes))
    next.maxPayloadBytes = capabilities.limits.maxPayloadBytes;
  return next;
}

/**
 * The bounds of a new intent, as the schema documents them (CreateIntentInput in schemas/api.graphql; the server
 * checks the same and answers BAD_USER_INPUT), and the form's check of its values before anything is sent.
 */
export const LIMITS = {
  /** `action`: 1-100 characters. */
  actionMax: 100,
  /** `params`: JSON object text, at most 16 KB. */
  paramsMaxBytes: 16 * 1024,
  /** `expiresInSeconds`: 10-3600. */
  expiresMin: 10,
  expiresMax: 3600,
  /** `executionTimeoutSeconds`: 10-86400, default 300. */
  executionMin: 10,
  executionMax: 86_400,
} as const;

export interface IntentDraft {
  deviceId: string;
  action: string;
  params: string;
  expiresInSeconds: string;
  executionTimeoutSeconds: string;
}

export type DraftErrors = Partial<Record<keyof IntentDraft, string>>;

export interface CheckedIntent {
  deviceId: string;
  action: string;
  params: string;
  expiresInSeconds: number;
  executionTimeoutSeconds: number;
}

function wholeNumberIn(text: string, min: number, max: number, what: string): number | string {
  const n = Number(text.trim());
  if (text.trim() === '' || !Number.isInteger(n)) return `${what} must be a whole number of seconds.`;
  if (n < min || n > max) return `${what} must be between ${min} and ${max} seconds; ${n} is outside.`;
  return n;
}

/** The draft as the API takes it, or what is wrong with each field (in the form's order). */
export function checkDraft(
  d: IntentDraft,
): { ok: true; value: CheckedIntent } | { ok: false; errors: DraftErrors } {
  const errors: DraftErrors = {};
  if (!d.deviceId) errors.deviceId = 'Choose the device that should act.';
  const action = d.action.trim();
  if (action.length < 1 || action.length > LIMITS.actionMax) {
    errors.action = `The action must be 1 to ${LIMITS.actionMax} characters.`;
  }
  let params = '{}';
  const text = d.params.trim() || '{}';
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      errors.params = 'The parameters must be a JSON object, e.g. {"app": "notes"}.';
    } else if (new TextEncoder().encode(text).length > LIMITS.paramsMaxBytes) {
      errors.params = `The parameters must be at most ${LIMITS.paramsMaxBytes / 1024} KB.`;
    } else {
      params = JSON.stringify(parsed);
    }
  } catch (err) {
    errors.params = `The parameters are not valid JSON: ${err instanceof Error ? err.message : String(err)}.`;
  }
  const expires = wholeNumberIn(d.expiresInSeconds, LIMITS.expiresMin, LIMITS.expiresMax, 'The expiry');
  if (typeof expires === 'string') errors.expiresInSeconds = expires;
  const execution = wholeNumberIn(
    d.executionTimeoutSeconds,
    LIMITS.executionMin,
    LIMITS.executionMax,
    'The time to report an outcome',
  );
  if (typeof execution === 'string') errors.executionTimeoutSeconds = execution;
  if (Object.keys(errors).length > 0 || typeof expires === 'string' || typeof execution === 'string') {
    return { ok: false, errors };
  }
  return {
    ok: true,
    value: {
      deviceId: d.deviceId,
      action,
      params,
      expiresInSeconds: expires,
      executionTimeoutSeconds: execution,
    },
  };
}

/**
 * Which fields of the record form an error is about: the SDK privacy gate's refusals (PRIVACY_REFUSED: variable
 * paths and detector ids) and the server's BAD_USER_INPUT (`extensions.field`, plus `detector` from the secret
 * filter). Only paths and rule names, never values: nothing here can echo a secret back.
 */
import { AgentGraphError, PrivacyError } from '@agentgraph/sdk';

export type RecordField = 'content' | 'kind' | 'tags' | 'metadata' | 'expiresAt';

/** A field's problem as a person reads it. */
export type FieldProblems = Partial<Record<RecordField, string>>;

/** `input.tags.2` / `input.tags[2]` / `input.metadata.source` → the form field, or undefined. */
export function recordFieldOf(path: string): RecordField | undefined {
  const m = /^input\.(content|kind|tags|metadata|expiresAt)(?:$|[.[])/.exec(path);
  return m ? (m[1] as RecordField) : undefined;
}

function ruleText(rule: string): string {
  if (rule.startsWith('class:')) return `its data class (${rule.slice(6)}) may not leave this browser`;
  return `it looks like a secret or personal data (${rule})`;
}

export function fieldProblemsOf(err: unknown): FieldProblems {
  const out: FieldProblems = {};
  if (err instanceof PrivacyError) {
    for (const r of err.refusals) {
      const field = recordFieldOf(r.path);
      if (field && !out[field]) out[field] = `Not sent: ${ruleText(r.reason)} in ${r.path}. Remove it.`;
    }
    return out;
  }
  if (err instanceof AgentGraphError && err.code === 'BAD_USER_INPUT') {
    const ext = err.errors[0]?.extensions ?? {};
    const path = typeof ext['field'] === 'string' ? ext['field'] : '';
    const field = recordFieldOf(path);
    if (field) {
      const detector = typeof ext['detector'] === 'string' ? ext['detector'] : undefined;
      out[field] = detector
        ? `Refused by the server: ${ruleText(detector)} in ${path}. Remove it.`
        : `Refused by the server: ${path} is not valid (see the message above).`;
    }
  }
  return out;
}

/** The version a VERSION_CONFLICT says the record is at now (`extensions.currentVersion`), if it says. */
export function currentVersionOf(err: unknown): number | undefined {
  if (!(err instanceof AgentGraphError) || err.code !== 'VERSION_CONFLICT') return undefined;
  const v = err.errors[0]?.extensions?.['currentVersion'];
  return typeof v === 'number' ? v : undefined;
}

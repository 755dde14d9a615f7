/**
 * The server-side secret and personal-data filter on every memory write (defence in depth behind the SDK's
 * privacy gate): content, kind, tags and every string in metadata (keys and values, at any depth). The
 * workspace's policy decides what a hit does:
 *  - REJECT: BAD_USER_INPUT naming the field path and the detector, never the value;
 *  - REDACT: the match is replaced by `[REDACTED:<detector>]` and the write goes on.
 * Either way the stored row never holds the secret. `kind` is an identifier and cannot be redacted: a hit there
 * is refused under both policies. Metadata keys are redacted like values (a key that collides after redaction is
 * refused).
 */
import { badInput, type AppError } from '@agentgraph/runtime';
import { redact, scan } from './scan.js';

export type SecretPolicy = 'REJECT' | 'REDACT';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export interface FilterableWrite {
  content: string;
  kind: string;
  tags: string[];
  metadata: Record<string, Json>;
}

export interface FilterOutcome<T> {
  value: T;
  /** Detectors that redacted something, with the field paths (for logs and metrics; never values). */
  redactions: { field: string; detector: string }[];
}

function refused(field: string, detector: string, policy: SecretPolicy): AppError {
  return badInput(
    policy === 'REJECT'
      ? `${field} looks like it holds a secret or personal data (${detector}). This workspace refuses such writes: remove it (store a reference to where the secret lives instead) and send the write again.`
      : `${field} looks like it holds a secret or personal data (${detector}), and it cannot be redacted there. Remove it and send the write again.`,
    { field, detector },
  );
}

export function filterWrite<T extends FilterableWrite>(
  write: T,
  policy: SecretPolicy,
  fieldPrefix = 'input',
): FilterOutcome<T> {
  const redactions: FilterOutcome<T>['redactions'] = [];
  const clean = (text: string, field: string, redactable = true): string => {
    const findings = scan(text);
    if (findings.length === 0) return text;
    if (policy === 'REJECT' || !redactable) throw refused(field, findings[0]!.detector, policy);
    for (const f of findings) redactions.push({ field, detector: f.detector });
    return redact(text, findings);
  };
  const walk = (value: Json, field: string): Json => {
    if (typeof value === 'string') return clean(value, field);
    if (Array.isArray(value)) return value.map((v, i) => walk(v, `${field}.${i}`));
    if (value && typeof value === 'object') {
      const out: Record<string, Json> = {};
      for (const [k, v] of Object.entries(value)) {
        // A key that holds a secret must not appear in the error's field path either.
        const label = k.length > 64 || scan(k).length > 0 ? '<key>' : k;
        const key = clean(k, `${field}.${label}`);
        if (key !== k && Object.hasOwn(value, key))
          throw refused(`${field} (a key)`, 'redaction collision', policy);
        out[key] = walk(v, `${field}.${key}`);
      }
      return out;
    }
    return value;
  };
  const kind = clean(write.kind, `${fieldPrefix}.kind`, false);
  const content = clean(write.content, `${fieldPrefix}.content`);
  const tags = write.tags.map((t, i) => clean(t, `${fieldPrefix}.tags.${i}`));
  const metadata = walk(write.metadata, `${fieldPrefix}.metadata`) as Record<string, Json>;
  return { value: { ...write, kind, content, tags, metadata }, redactions };
}

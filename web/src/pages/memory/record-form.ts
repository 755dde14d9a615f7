/**
 * The record form's draft and its conversions: a record → the draft the form edits, the draft → `PutMemoryInput`
 * (with the checks the browser can make: metadata is a JSON object, the expiry a valid time), and what the
 * server's redaction changed.
 */
import type { PutMemoryInput } from '@agentgraph/sdk';
import type { FieldProblems, RecordField } from './field-problems.js';

export interface RecordDraft {
  content: string;
  kind: string;
  /** Comma-separated. */
  tags: string;
  /** JSON object text. */
  metadata: string;
  /** `<input type="datetime-local">` value (local time), '' for never. */
  expiresAt: string;
}

/** What the form needs of a stored record (MemoryRecord and PutMemory's record both fit). */
export interface StoredRecord {
  id: string;
  version: number;
  kind: string;
  content: string;
  tags: readonly string[];
  metadata: string;
  expiresAt: string | null;
  updatedAt: string;
  author: { id: string; displayName?: string };
}

export const NEW_DRAFT: RecordDraft = { content: '', kind: 'note', tags: '', metadata: '{}', expiresAt: '' };

/** An ISO instant as a datetime-local value in the browser's time zone (minutes). */
export function toLocalInput(iso: string): string {
  const d = new Date(iso);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}

/** Metadata text as the form shows it: pretty-printed when it is JSON. */
function prettyJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

export function draftOf(r: StoredRecord): RecordDraft {
  return {
    content: r.content,
    kind: r.kind,
    tags: r.tags.join(', '),
    metadata: prettyJson(r.metadata),
    expiresAt: r.expiresAt ? toLocalInput(r.expiresAt) : '',
  };
}

export function tagsOf(text: string): string[] {
  return text
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t !== '');
}

/**
 * The draft as the mutation's input, or the problems the browser can see already. `base` keeps an unchanged
 * expiry exact (the form shows minutes only); `embedding` is the stored one, sent back so an edit keeps it.
 */
export function inputOf(
  draft: RecordDraft,
  workspaceId: string,
  base: StoredRecord | null,
  embedding: readonly number[] | null,
): { input: PutMemoryInput } | { problems: FieldProblems } {
  const problems: Partial<Record<RecordField, string>> = {};
  let metadata = draft.metadata.trim() || '{}';
  try {
    const parsed: unknown = JSON.parse(metadata);
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
      problems.metadata = 'Must be a JSON object, e.g. {"source": "chat"} (not an array or a single value).';
    } else metadata = JSON.stringify(parsed);
  } catch {
    problems.metadata = 'Is not valid JSON. Check quotes, commas and braces, e.g. {"source": "chat"}.';
  }
  let expiresAt: string | null = null;
  if (draft.expiresAt) {
    if (base?.expiresAt && toLocalInput(base.expiresAt) === draft.expiresAt) expiresAt = base.expiresAt;
    else {
      const t = new Date(draft.expiresAt);
      if (Number.isNaN(t.getTime())) problems.expiresAt = 'Is not a valid date and time.';
      else expiresAt = t.toISOString();
    }
  }
  if (Object.keys(problems).length > 0) return { problems };
  return {
    input: {
      workspaceId,
      kind: draft.kind.trim(),
      content: draft.content,
      tags: tagsOf(draft.tags),
      metadata,
      expiresAt,
      ...(embedding ? { embedding: [...embedding] } : {}),
    },
  };
}

/** Fields whose stored value carries a redaction marker the draft did not have, with the detectors named. */
export function redactionsOf(draft: RecordDraft, saved: StoredRecord): string[] {
  const marker = /\[REDACTED:([a-z0-9-]+)\]/g;
  const found = (stored: string, sent: string, field: string): string[] => {
    const before = new Set([...sent.matchAll(marker)].map((m) => m[0]));
    const hits = [...stored.matchAll(marker)].filter((m) => !before.has(m[0])).map((m) => m[1]!);
    return hits.length ? [`${field} (${[...new Set(hits)].join(', ')})`] : [];
  };
  return [
    ...found(saved.content, draft.content, 'content'),
    ...found(saved.tags.join(','), draft.tags, 'tags'),
    ...found(saved.metadata, draft.metadata, 'metadata'),
  ];
}

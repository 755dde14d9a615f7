/** The data classes of `@privacy(class:)` (docs/architecture.md#schema-conventions) and the shapes the generated code hands the gate. */

export type DataClass = 'PUBLIC' | 'INTERNAL' | 'PERSONAL' | 'SECRET' | 'BIOMETRIC';

export const DATA_CLASSES: readonly DataClass[] = ['PUBLIC', 'INTERNAL', 'PERSONAL', 'SECRET', 'BIOMETRIC'];

/** The class of one input field and whether the operation needs it (a non-null GraphQL type). */
export interface PrivacyRule {
  class: DataClass;
  required: boolean;
}

/**
 * Per operation, generated from the schema: variable path → rule. Paths start at the variable name, use `.` for
 * input-object fields and `[]` for "each element of a list": `input.body`, `input.tags`, `inputs[].note`.
 * A rule covers the value at its path and everything inside it, unless a deeper path has its own rule.
 * Variables with no rule on their path (ids, cursors, page sizes, the idempotency key) are neither dropped nor
 * scanned: they are identifiers and opaque tokens, not user content.
 */
export type PrivacyTable = Readonly<Record<string, PrivacyRule>>;

/** Which classes may leave the process. BIOMETRIC never does, even when listed. */
export interface PrivacyPolicy {
  allow: readonly DataClass[];
}

export const DEFAULT_PRIVACY_POLICY: PrivacyPolicy = { allow: ['PUBLIC', 'INTERNAL'] };

export function classAllowed(policy: PrivacyPolicy, dataClass: DataClass): boolean {
  return dataClass !== 'BIOMETRIC' && policy.allow.includes(dataClass);
}

/**
 * The privacy gate, run on the variables before they are serialized and before any transport call:
 *
 * 1. Class check. A value whose rule's class the policy forbids (BIOMETRIC always) is dropped from the variables
 *    when the field is optional, and refuses the whole call when it is required. null/absent values carry nothing
 *    and pass.
 * 2. Content check. Every string under a rule (after drops) is scanned by the detectors (detectors.ts); a value
 *    in which a detector finds a class the policy does not allow refuses the call — so a secret pasted into a
 *    PUBLIC field is refused, and a PERSONAL field sends an SSN only when the policy allows PERSONAL.
 *
 * Refusals name the variable path and the rule or detector, never the value: one per value (the class rule, or
 * the first detector in DETECTORS order that finds a forbidden class), all of a call collected into one
 * PrivacyError in document order. The input object is not modified; the gate returns a filtered copy.
 */
import { detect, DETECTORS, type Detector } from './detectors.js';
import { PrivacyError, type PrivacyRefusal } from './errors.js';
import { classAllowed, type PrivacyPolicy, type PrivacyRule, type PrivacyTable } from './privacy-types.js';

export interface PrivacyGateResult {
  variables: Record<string, unknown>;
  /** Concrete paths of the optional values removed because their class is not allowed. */
  dropped: string[];
}

const DROP = Symbol('drop');

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

export function applyPrivacyGate(
  operation: string,
  variables: Readonly<Record<string, unknown>>,
  table: PrivacyTable,
  policy: PrivacyPolicy,
  detectors: readonly Detector[] = DETECTORS,
): PrivacyGateResult {
  const refusals: PrivacyRefusal[] = [];
  const dropped: string[] = [];

  const walk = (
    value: unknown,
    path: string,
    pattern: string,
    inherited: PrivacyRule | undefined,
  ): unknown => {
    const own = Object.prototype.hasOwnProperty.call(table, pattern) ? table[pattern] : undefined;
    const rule = own ?? inherited;
    if (value === null || value === undefined) return value;
    if (own && !classAllowed(policy, own.class)) {
      if (own.required) {
        refusals.push({ path, reason: `class:${own.class}` });
        return value;
      }
      dropped.push(path);
      return DROP;
    }
    if (typeof value === 'string') {
      if (rule) {
        // One refusal per value: the first detector (in DETECTORS order) that finds a class the policy forbids.
        const hit = detect(value, detectors).find((d) => !classAllowed(policy, d.dataClass));
        if (hit) refusals.push({ path, reason: hit.id });
      }
      return value;
    }
    if (Array.isArray(value)) {
      const out: unknown[] = [];
      value.forEach((item, i) => {
        const kept = walk(item, `${path}[${i}]`, `${pattern}[]`, rule);
        // A list element cannot be dropped without shifting the others: a forbidden element refuses the call.
        if (kept === DROP)
          refusals.push({ path: `${path}[${i}]`, reason: `class:${table[`${pattern}[]`]!.class}` });
        else out.push(kept);
      });
      return out;
    }
    if (isPlainObject(value)) {
      const out: Record<string, unknown> = {};
      for (const [key, field] of Object.entries(value)) {
        const kept = walk(field, `${path}.${key}`, `${pattern}.${key}`, rule);
        if (kept !== DROP) out[key] = kept;
      }
      return out;
    }
    return value;
  };

  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(variables)) {
    const kept = walk(value, name, name, undefined);
    if (kept !== DROP) out[name] = kept;
  }
  if (refusals.length > 0) throw new PrivacyError(operation, refusals);
  return { variables: out, dropped };
}

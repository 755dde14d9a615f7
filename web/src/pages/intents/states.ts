/** The honest states of an intent (docs/architecture.md#intent-states) as the console words them, and which ones end it. */
import type { IntentState } from '@agentgraph/sdk';

export const TERMINAL: ReadonlySet<string> = new Set<IntentState>([
  'DENIED_BY_POLICY',
  'COMPLETED',
  'FAILED',
  'CANCELLED',
  'EXPIRED',
  'OUTCOME_UNKNOWN',
]);

/** The requester may cancel while the device has not approved it yet. */
export const CANCELLABLE: ReadonlySet<string> = new Set<IntentState>(['QUEUED', 'DELIVERED']);

export const STATE_MEANING: Record<IntentState, string> = {
  QUEUED: 'stored and signed, waiting for the device',
  DELIVERED: 'the device received it',
  LOCALLY_APPROVED: "the device's local user or policy approved it",
  DENIED_BY_POLICY: "the device's local policy refused it",
  EXECUTING: 'the device is performing the action',
  COMPLETED: 'the device reports the action done',
  FAILED: 'the device reports the action failed',
  CANCELLED: 'the requester cancelled it',
  EXPIRED: 'nobody acted on it before it expired',
  OUTCOME_UNKNOWN: 'the device did not report an outcome in time: it may or may not have happened',
};

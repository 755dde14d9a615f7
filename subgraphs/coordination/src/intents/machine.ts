/**
 * The intent state machine (docs/architecture.md#intent-states): the one place that says which state may follow which, and who may
 * make the move. Everything that changes an intent's state goes through `transition` (store.ts), which asks
 * `checkTransition` first.
 */
export const INTENT_STATES = [
  'QUEUED',
  'DELIVERED',
  'LOCALLY_APPROVED',
  'DENIED_BY_POLICY',
  'EXECUTING',
  'COMPLETED',
  'FAILED',
  'CANCELLED',
  'EXPIRED',
  'OUTCOME_UNKNOWN',
] as const;

export type IntentState = (typeof INTENT_STATES)[number];

/** Who asks for a change: the intent's device (a signed report), its requester (cancel), or the server (sweeper). */
export type TransitionSource = 'device' | 'requester' | 'server';

/** Legal next states; a state absent from the table (or with no entry) is terminal. */
export const TRANSITIONS: Readonly<Record<IntentState, readonly IntentState[]>> = {
  QUEUED: ['DELIVERED', 'CANCELLED', 'EXPIRED'],
  DELIVERED: ['LOCALLY_APPROVED', 'DENIED_BY_POLICY', 'CANCELLED', 'EXPIRED'],
  LOCALLY_APPROVED: ['EXECUTING', 'EXPIRED'],
  EXECUTING: ['COMPLETED', 'FAILED', 'OUTCOME_UNKNOWN'],
  DENIED_BY_POLICY: [],
  COMPLETED: [],
  FAILED: [],
  CANCELLED: [],
  EXPIRED: [],
  OUTCOME_UNKNOWN: [],
};

/** Which source may move an intent INTO each state. */
const SETTERS: Readonly<Record<IntentState, TransitionSource | null>> = {
  QUEUED: null, // only creation
  DELIVERED: 'device',
  LOCALLY_APPROVED: 'device',
  DENIED_BY_POLICY: 'device',
  EXECUTING: 'device',
  COMPLETED: 'device',
  FAILED: 'device',
  CANCELLED: 'requester',
  EXPIRED: 'server',
  OUTCOME_UNKNOWN: 'server',
};

export function isTerminal(state: IntentState): boolean {
  return TRANSITIONS[state].length === 0;
}

/** null when the move is legal for this source; otherwise why not (a sentence for the error message). */
export function checkTransition(from: IntentState, to: IntentState, source: TransitionSource): string | null {
  if (!TRANSITIONS[from].includes(to)) {
    return isTerminal(from)
      ? `the intent is ${from}, which is final`
      : `an intent in ${from} can only move to ${TRANSITIONS[from].join(', ')}, not ${to}`;
  }
  const setter = SETTERS[to];
  if (setter !== source) {
    return `${to} is set by ${setter === 'server' ? 'the server alone' : `the ${setter ?? 'creation'}`}, not by the ${source}`;
  }
  return null;
}

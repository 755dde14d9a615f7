/** The intent state machine table (docs/architecture.md#intent-states): every pair of states, every source. */
import { describe, expect, it } from 'vitest';
import {
  INTENT_STATES,
  TRANSITIONS,
  checkTransition,
  isTerminal,
  type IntentState,
  type TransitionSource,
} from '../src/intents/machine.js';

const LEGAL: Array<[IntentState, IntentState, TransitionSource]> = [
  ['QUEUED', 'DELIVERED', 'device'],
  ['QUEUED', 'CANCELLED', 'requester'],
  ['QUEUED', 'EXPIRED', 'server'],
  ['DELIVERED', 'LOCALLY_APPROVED', 'device'],
  ['DELIVERED', 'DENIED_BY_POLICY', 'device'],
  ['DELIVERED', 'CANCELLED', 'requester'],
  ['DELIVERED', 'EXPIRED', 'server'],
  ['LOCALLY_APPROVED', 'EXECUTING', 'device'],
  ['LOCALLY_APPROVED', 'EXPIRED', 'server'],
  ['EXECUTING', 'COMPLETED', 'device'],
  ['EXECUTING', 'FAILED', 'device'],
  ['EXECUTING', 'OUTCOME_UNKNOWN', 'server'],
];
const SOURCES: TransitionSource[] = ['device', 'requester', 'server'];

describe('intent state machine', () => {
  it('allows exactly the moves of the table, each only from its source', () => {
    const allowed: string[] = [];
    for (const from of INTENT_STATES)
      for (const to of INTENT_STATES)
        for (const source of SOURCES)
          if (checkTransition(from, to, source) === null) allowed.push(`${from}>${to}:${source}`);
    expect(allowed.sort()).toEqual(LEGAL.map(([f, t, s]) => `${f}>${t}:${s}`).sort());
  });

  it('keeps terminal states final and lets only the server set EXPIRED and OUTCOME_UNKNOWN', () => {
    for (const s of [
      'DENIED_BY_POLICY',
      'COMPLETED',
      'FAILED',
      'CANCELLED',
      'EXPIRED',
      'OUTCOME_UNKNOWN',
    ] as const) {
      expect(isTerminal(s)).toBe(true);
      expect(TRANSITIONS[s]).toEqual([]);
      expect(checkTransition(s, 'DELIVERED', 'device')).toMatch(/final/);
    }
    expect(checkTransition('QUEUED', 'EXPIRED', 'device')).toMatch(/server alone/);
    expect(checkTransition('EXECUTING', 'OUTCOME_UNKNOWN', 'device')).toMatch(/server alone/);
    expect(checkTransition('QUEUED', 'CANCELLED', 'device')).toMatch(/requester/);
    expect(checkTransition('LOCALLY_APPROVED', 'CANCELLED', 'requester')).toMatch(
      /only move to EXECUTING, EXPIRED/,
    );
  });
});

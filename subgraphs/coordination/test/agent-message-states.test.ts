/** The acknowledgement table of agent messages (src/messages/states.ts): every pair of states. */
import { describe, expect, it } from 'vitest';
import { ACK_STATES, checkAck, type AgentMessageState } from '../src/messages/states.js';

const STATES: AgentMessageState[] = [
  'QUEUED',
  'DELIVERED',
  'READ',
  'HANDLED',
  'ACKNOWLEDGED',
  'FAILED',
  'EXPIRED',
];

describe('acknowledgement table', () => {
  it('moves forward only (skipping allowed), FAILED from any open state, nothing out of a final state', () => {
    const legal: string[] = [];
    for (const from of STATES)
      for (const to of ACK_STATES) if (checkAck(from, to) === null) legal.push(`${from}>${to}`);
    expect(legal.sort()).toEqual(
      [
        'QUEUED>DELIVERED',
        'QUEUED>READ',
        'QUEUED>HANDLED',
        'QUEUED>ACKNOWLEDGED',
        'QUEUED>FAILED',
        'DELIVERED>READ',
        'DELIVERED>HANDLED',
        'DELIVERED>ACKNOWLEDGED',
        'DELIVERED>FAILED',
        'READ>HANDLED',
        'READ>ACKNOWLEDGED',
        'READ>FAILED',
        'HANDLED>ACKNOWLEDGED',
        'HANDLED>FAILED',
      ].sort(),
    );
  });
});

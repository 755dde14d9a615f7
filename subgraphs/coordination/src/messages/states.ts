/**
 * The acknowledgement states of an agent message and the one rule for moving between them. Stored states go
 * forward only: QUEUED → DELIVERED → READ → HANDLED → ACKNOWLEDGED (skipping forward allowed), or from any open
 * state to FAILED (a poison message, with a reason). ACKNOWLEDGED and FAILED are terminal. EXPIRED is never
 * stored: a message still QUEUED at its expiry time reads as EXPIRED (the recipient never confirmed delivery).
 */

export type StoredAgentMessageState = 'QUEUED' | 'DELIVERED' | 'READ' | 'HANDLED' | 'ACKNOWLEDGED' | 'FAILED';
export type AgentMessageState = StoredAgentMessageState | 'EXPIRED';

/** Forward order of the stored states; FAILED is reachable from every open state. */
export const ORDER: readonly StoredAgentMessageState[] = [
  'QUEUED',
  'DELIVERED',
  'READ',
  'HANDLED',
  'ACKNOWLEDGED',
];

/** States the recipient may acknowledge (QUEUED is where a message starts, EXPIRED only the server's reading). */
export const ACK_STATES = ['DELIVERED', 'READ', 'HANDLED', 'ACKNOWLEDGED', 'FAILED'] as const;
export type AckState = (typeof ACK_STATES)[number];

export function isTerminal(state: AgentMessageState): boolean {
  return state === 'ACKNOWLEDGED' || state === 'FAILED' || state === 'EXPIRED';
}

/** The state a reader sees at `now`: QUEUED past its expiry reads EXPIRED. */
export function effectiveState(
  state: StoredAgentMessageState,
  expiresAt: string | null,
  now: Date,
): AgentMessageState {
  return state === 'QUEUED' && expiresAt !== null && Date.parse(expiresAt) <= now.getTime()
    ? 'EXPIRED'
    : state;
}

/** Why `from` cannot move to `to`, or null when the move is legal. */
export function checkAck(from: AgentMessageState, to: AckState): string | null {
  if (isTerminal(from)) return `the message is ${from}, which is final`;
  if (to === 'FAILED') return null;
  const a = ORDER.indexOf(from as StoredAgentMessageState);
  const b = ORDER.indexOf(to);
  if (b <= a)
    return `the message is already ${from}; acknowledgements only move forward (${ORDER.join(' → ')})`;
  return null;
}

/** The timestamp column each acknowledged state sets. */
export const STATE_COLUMN: Record<AckState, string> = {
  DELIVERED: 'delivered_at',
  READ: 'read_at',
  HANDLED: 'handled_at',
  ACKNOWLEDGED: 'acknowledged_at',
  FAILED: 'failed_at',
};

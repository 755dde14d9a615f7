/**
 * The agent-message models resolvers pass around (codegen mappers, ../../codegen.json) and how rows become them.
 * Plain JSON (dates as ISO strings): mutation payloads are stored as the idempotent replay.
 */
import { effectiveState, type AgentMessageState, type StoredAgentMessageState } from './states.js';

export type AddressKind = 'DEVICE' | 'USER';

/** An inbox owner or a sender: an enrolled device of the tenant, or a user. */
export interface AgentAddressModel {
  kind: AddressKind;
  id: string;
}

export interface AgentMessageModel {
  id: string;
  tenantId: string;
  to: AgentAddressModel;
  from: AgentAddressModel;
  /** Position in the recipient's inbox, 1, 2, 3… without gaps. */
  seq: number;
  body: string;
  contentType: string;
  correlationId: string | null;
  /** The message this one answers (in the sender's inbox), if any. */
  replyTo: string | null;
  /** As read at the time the model was made (QUEUED past expiry reads EXPIRED). */
  state: AgentMessageState;
  failureReason: string | null;
  createdAt: string;
  expiresAt: string | null;
  deliveredAt: string | null;
  readAt: string | null;
  handledAt: string | null;
  acknowledgedAt: string | null;
  failedAt: string | null;
}

export interface AgentMessageRow {
  tenant_id: string;
  id: string;
  recipient_kind: 'device' | 'user';
  recipient_id: string;
  seq: number;
  sender_kind: 'device' | 'user';
  sender_id: string;
  body: string;
  content_type: string;
  correlation_id: string | null;
  reply_to: string | null;
  state: StoredAgentMessageState;
  failure_reason: string | null;
  created_at: Date | string;
  expires_at: Date | string | null;
  delivered_at: Date | string | null;
  read_at: Date | string | null;
  handled_at: Date | string | null;
  acknowledged_at: Date | string | null;
  failed_at: Date | string | null;
}

export const AGENT_MESSAGE_COLUMNS =
  'tenant_id, id, recipient_kind, recipient_id, seq, sender_kind, sender_id, body, content_type, correlation_id, ' +
  'reply_to, state, failure_reason, created_at, expires_at, delivered_at, read_at, handled_at, acknowledged_at, ' +
  'failed_at';

export const kindToDb = (kind: AddressKind): 'device' | 'user' => (kind === 'DEVICE' ? 'device' : 'user');
const kindFromDb = (kind: 'device' | 'user'): AddressKind => (kind === 'device' ? 'DEVICE' : 'USER');

function iso(value: Date | string): string {
  return (value instanceof Date ? value : new Date(value)).toISOString();
}
const isoOrNull = (value: Date | string | null): string | null => (value === null ? null : iso(value));

/** A row as a model; `now` decides whether a QUEUED message has expired. */
export function toAgentMessage(row: AgentMessageRow, now: Date): AgentMessageModel {
  const expiresAt = isoOrNull(row.expires_at);
  return {
    id: row.id,
    tenantId: row.tenant_id,
    to: { kind: kindFromDb(row.recipient_kind), id: row.recipient_id },
    from: { kind: kindFromDb(row.sender_kind), id: row.sender_id },
    seq: Number(row.seq),
    body: row.body,
    contentType: row.content_type,
    correlationId: row.correlation_id,
    replyTo: row.reply_to,
    state: effectiveState(row.state, expiresAt, now),
    failureReason: row.failure_reason,
    createdAt: iso(row.created_at),
    expiresAt,
    deliveredAt: isoOrNull(row.delivered_at),
    readAt: isoOrNull(row.read_at),
    handledAt: isoOrNull(row.handled_at),
    acknowledgedAt: isoOrNull(row.acknowledged_at),
    failedAt: isoOrNull(row.failed_at),
  };
}

export function sameAddress(a: AgentAddressModel, b: AgentAddressModel): boolean {
  return a.kind === b.kind && a.id === b.id;
}

/** The emergency stop as resolvers pass it around (plain JSON: payloads are stored for idempotent replay). */
import type { RequestOrigin } from '@agentgraph/runtime';

export type EmergencyScope = 'TENANT' | 'GLOBAL';

export interface EmergencyStopModel {
  scope: EmergencyScope;
  reason: string;
  engagedAt: string;
  engagedBy: string;
}

export interface EmergencyStatusModel {
  engaged: boolean;
  tenant: EmergencyStopModel | null;
  global: EmergencyStopModel | null;
}

/** What an audit record says about where a request came from (no secrets: addresses, agents, ids). */
export interface AuditOrigin extends Partial<RequestOrigin> {
  clientId?: string;
  deviceId?: string;
  correlationId?: string;
}

export interface EmergencyEventModel {
  id: string;
  action: 'ENGAGED' | 'LIFTED';
  scope: EmergencyScope;
  actor: string;
  at: string;
  reason: string | null;
  origin: AuditOrigin;
}

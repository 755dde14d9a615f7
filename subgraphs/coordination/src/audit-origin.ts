/**
 * The "from where" of coordination's audit records (intent state changes, emergency stop events): the request's
 * origin (runtime/src/origin.ts), the OAuth client, the device and the correlation id. Never a token or a secret.
 */
import type { AuthContext, SubgraphContext } from '@agentgraph/runtime';
import type { AuditOrigin } from './emergency/models.js';

export function auditOriginOf(
  ctx: Pick<SubgraphContext, 'origin' | 'correlationId'>,
  auth: AuthContext | null,
): AuditOrigin {
  const o = ctx.origin;
  return {
    ...(o.ip ? { ip: o.ip } : {}),
    ...(o.forwardedFor ? { forwardedFor: o.forwardedFor } : {}),
    ...(o.userAgent ? { userAgent: o.userAgent } : {}),
    ...(o.peer ? { peer: o.peer } : {}),
    ...(auth?.clientId ? { clientId: auth.clientId } : {}),
    ...(auth?.deviceId ? { deviceId: auth.deviceId } : {}),
    correlationId: ctx.correlationId,
  };
}

/** The GraphQL RequestOrigin of a stored origin; null when the record has none (the server's own changes). */
export function requestOriginOf(origin: AuditOrigin | null | undefined) {
  if (!origin || Object.keys(origin).length === 0) return null;
  return {
    ip: origin.ip ?? null,
    forwardedFor: origin.forwardedFor ?? null,
    userAgent: origin.userAgent ?? null,
    clientId: origin.clientId ?? null,
    deviceId: origin.deviceId ?? null,
    correlationId: origin.correlationId ?? null,
  };
}

/**
 * Resolvers of the emergency stop (schemas/coordination.graphql): the status any member may read, the audit events
 * ADMIN and OWNER may read, and engage/lift by ADMIN or OWNER with a user's own token (not a device's, not an
 * exchanged one). Ending the streams is the watch's job (watch.ts), refusing new intents createIntent's.
 */
import {
  AppError,
  idempotentMutation,
  pageRequest,
  requireAuth,
  roleCovers,
  tenantRead,
  toConnection,
  type AuthContext,
} from '@agentgraph/runtime';
import { z } from 'zod';
import { auditOriginOf, requestOriginOf } from '../audit-origin.js';
import type { Resolvers } from '../generated/resolvers.js';
import { parseArg } from '../input.js';
import { seqKey } from '../seq-cursor.js';
import { emergencyEvents, emergencyStatus, engageStop, liftStop } from './store.js';

export interface EmergencyResolverDeps {
  now: () => Date;
}

type EmergencyResolvers = Pick<
  Resolvers,
  'Query' | 'Mutation' | 'EmergencyStopStatus' | 'EmergencyStopEvent'
>;

const Reason = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(500, 'must be at most 500 characters')
  .refine((s) => !s.includes('\u0000'), 'must not contain NUL characters');

export function isAdmin(auth: AuthContext): boolean {
  return roleCovers(auth.role, 'ADMIN');
}

function requireSwitchHolder(auth: AuthContext, action: string): void {
  if (!isAdmin(auth)) {
    throw new AppError('FORBIDDEN', `Your role (${auth.role}) cannot ${action}; it needs ADMIN or OWNER.`, {
      requiredRole: 'ADMIN',
    });
  }
  if (auth.deviceId || auth.actor) {
    throw new AppError(
      'FORBIDDEN',
      `Only a user's own token (the console, not a device's or a delegated token) can ${action}.`,
    );
  }
}

export function createEmergencyResolvers(deps: EmergencyResolverDeps): EmergencyResolvers {
  return {
    Query: {
      async emergencyStop(_parent, _args, ctx) {
        requireAuth(ctx.auth);
        return tenantRead(ctx, (tx) => emergencyStatus(tx));
      },
    },
    Mutation: {
      engageEmergencyStop(_parent, args, ctx) {
        const auth = requireAuth(ctx.auth);
        requireSwitchHolder(auth, 'engage the emergency stop');
        const reason = parseArg(Reason, args.reason, 'reason');
        const origin = auditOriginOf(ctx, auth);
        return idempotentMutation(ctx, 'Mutation.engageEmergencyStop', { ...args, reason }, async (tx, a) => {
          await engageStop(tx, {
            tenantId: a.tenantId,
            actor: a.principalId,
            at: deps.now(),
            reason,
            origin,
          });
          return { status: await emergencyStatus(tx) };
        });
      },
      liftEmergencyStop(_parent, args, ctx) {
        const auth = requireAuth(ctx.auth);
        requireSwitchHolder(auth, 'lift the emergency stop');
        const origin = auditOriginOf(ctx, auth);
        return idempotentMutation(ctx, 'Mutation.liftEmergencyStop', args, async (tx, a) => {
          await liftStop(tx, { tenantId: a.tenantId, actor: a.principalId, at: deps.now(), origin });
          return { status: await emergencyStatus(tx) };
        });
      },
    },
    EmergencyStopStatus: {
      async events(_status, args, ctx) {
        const auth = requireAuth(ctx.auth);
        if (!isAdmin(auth)) {
          throw new AppError(
            'FORBIDDEN',
            `Your role (${auth.role}) cannot read the emergency stop's audit; it needs ADMIN or OWNER.`,
          );
        }
        const scope = `EmergencyStopStatus.events:${auth.tenantId}`;
        const req = pageRequest(ctx.cursors, scope, args, {
          maxPageSize: ctx.config.limits.maxPageSize,
          defaultPageSize: 20,
        });
        const before = req.from ? seqKey(req.from) : null;
        const rows = await tenantRead(ctx, (tx) => emergencyEvents(tx, before, req.limit + 1));
        return toConnection(ctx.cursors, scope, req, rows, (e) => [Number(e.id)]);
      },
    },
    EmergencyStopEvent: {
      origin: (event, _args, ctx) => (ctx.auth && isAdmin(ctx.auth) ? requestOriginOf(event.origin) : null),
    },
  };
}

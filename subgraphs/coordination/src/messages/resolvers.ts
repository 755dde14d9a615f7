/**
 * Resolvers of the agent-message part of schemas/coordination.graphql. Built by a factory so the clock and the
 * identity client are injected (tests run on exact times); `agentMessageResolvers` is the default instance
 * (system clock, identity over globalThis.fetch). Reads use tenantRead, writes idempotentMutation; RLS scopes both.
 *
 * Recipients are checked with identity (with the caller's own token, through ../intents/device-directory.ts) before
 * anything is stored: a device address must be a device of the caller's tenant (unknown or foreign → NOT_FOUND) that
 * is ENROLLED (else FORBIDDEN); a user address a member of the caller's tenant (unknown or foreign → the same
 * NOT_FOUND, so the answer tells nothing of other tenants).
 */
import { randomUUID } from 'node:crypto';
import {
  AppError,
  badInput,
  idempotentMutation,
  keysetPage,
  notFound,
  pageRequest,
  requireAuth,
  tenantRead,
  timeKey,
  toConnection,
  type AuthContext,
  type SubgraphContext,
} from '@agentgraph/runtime';
import type { Resolvers } from '../generated/resolvers.js';
import { parseArg } from '../input.js';
import { userRef } from '../models.js';
import { createDeviceDirectory, type DeviceDirectory } from '../intents/device-directory.js';
import {
  AckStateArg,
  AgentAddressArg,
  AgentMessageBody,
  ContentType,
  CorrelationId,
  FailureReason,
  InboxAfterSeq,
  MessageExpiresIn,
  MessageId,
  addressOf,
  callerAddress,
  requireSender,
} from './input.js';
import { sameAddress, type AgentAddressModel, type AgentMessageModel } from './models.js';
import {
  acknowledge,
  agentMessagesById,
  inboxPage,
  inboxPosition,
  insertAgentMessage,
  sentPage,
} from './store.js';
import { takeRateToken } from '../limits/rate-limiter.js';
import { inboxStream } from './stream.js';
import type { AgentMessageState } from './states.js';
import { seqKey } from '../seq-cursor.js';

export interface AgentMessageResolverDeps {
  now: () => Date;
  devices: DeviceDirectory;
}

export type AgentMessageResolvers = Required<
  Pick<Resolvers, 'Query' | 'Mutation' | 'Subscription' | 'AgentMessage' | 'AgentAddress'>
>;

const DEFAULT_PAGE_SIZE = 20;

const ALL_STATES = new Set<string>([
  'QUEUED',
  'DELIVERED',
  'READ',
  'HANDLED',
  'ACKNOWLEDGED',
  'FAILED',
  'EXPIRED',
]);

/** The caller may see a message it sent or received; anything else does not exist for it. */
function visibleTo(auth: AuthContext, m: AgentMessageModel | null | undefined): AgentMessageModel | null {
  const me = addressOf(auth);
  if (!m || !me) return null;
  return sameAddress(m.to, me) || sameAddress(m.from, me) ? m : null;
}

function inboxScope(list: string, auth: AuthContext, inbox: AgentAddressModel, filter: string): string {
  return `${list}:${auth.tenantId}:${inbox.kind}:${inbox.id}:${filter}`;
}

export function createAgentMessageResolvers(deps: AgentMessageResolverDeps): AgentMessageResolvers {
  const load = (ctx: SubgraphContext, id: string) =>
    tenantRead(ctx, (tx) => agentMessagesById(tx, [id], deps.now())).then((m) => m.get(id) ?? null);

  /** A user recipient must be a member of the caller's tenant; an unknown id and another tenant's get one answer. */
  async function checkUser(ctx: SubgraphContext, userId: string): Promise<void> {
    if (!(await deps.devices.member(ctx, userId))) throw notFound('The recipient (input.to.userId)');
  }

  /** A device recipient must be an ENROLLED device identity shows the caller. */
  async function checkDevice(ctx: SubgraphContext, deviceId: string): Promise<void> {
    const device = await deps.devices.device(ctx, deviceId);
    if (!device) throw notFound(`Device ${deviceId}`);
    if (device.status !== 'ENROLLED') {
      throw new AppError(
        'FORBIDDEN',
        `Device ${deviceId} is ${device.status}; agent messages go only to ENROLLED devices.`,
        { reason: 'DEVICE_NOT_ENROLLED' },
      );
    }
  }

  return {
    Query: {
      async agentInbox(_parent, args, ctx) {
        const auth = requireAuth(ctx.auth);
        const inbox = callerAddress(auth);
        const state = args.state ?? null;
        if (state !== null && !ALL_STATES.has(state)) {
          throw badInput('"state" must be an AgentMessageState.', { argument: 'state' });
        }
        const scope = inboxScope('Query.agentInbox', auth, inbox, state ?? '*');
        const req = pageRequest(ctx.cursors, scope, args, {
          maxPageSize: ctx.config.limits.maxPageSize,
          defaultPageSize: DEFAULT_PAGE_SIZE,
        });
        const from = req.from ? seqKey(req.from) : 0;
        const now = deps.now();
        const [rows, position] = await Promise.all([
          tenantRead(ctx, (tx) =>
            inboxPage(tx, inbox, from, state as AgentMessageState | null, req.limit + 1, now),
          ),
          tenantRead(ctx, (tx) => inboxPosition(tx, inbox, now)),
        ]);
        return { ...toConnection(ctx.cursors, scope, req, rows, (m) => [m.seq]), ...position };
      },

      async sentAgentMessages(_parent, args, ctx) {
        const auth = requireAuth(ctx.auth);
        const sender = callerAddress(auth);
        const correlationId =
          args.correlationId == null ? null : parseArg(CorrelationId, args.correlationId, 'correlationId');
        const scope = inboxScope('Query.sentAgentMessages', auth, sender, correlationId ?? '*');
        const now = deps.now();
        return keysetPage(ctx, scope, args, timeKey, (limit, after) =>
          tenantRead(ctx, (tx) => sentPage(tx, sender, correlationId, after, limit, now)),
        );
      },

      async agentMessage(_parent, args, ctx) {
        const auth = requireAuth(ctx.auth);
        const id = parseArg(MessageId, args.id, 'id');
        return visibleTo(auth, await load(ctx, id));
      },
    },

    Mutation: {
      async sendAgentMessage(_parent, args, ctx) {
        const auth = requireAuth(ctx.auth);
        const sender = requireSender(auth);
        const input = args.input;
        const to = input.to == null ? null : parseArg(AgentAddressArg, input.to, 'input.to');
        const replyTo = input.replyTo == null ? null : parseArg(MessageId, input.replyTo, 'input.replyTo');
        if (!to && !replyTo) {
          throw badInput('"input.to" is required unless "input.replyTo" names the message you answer.', {
            argument: 'input.to',
          });
        }
        const body = parseArg(AgentMessageBody, input.body, 'input.body');
        const contentType = parseArg(ContentType, input.contentType ?? 'text/plain', 'input.contentType');
        const correlationId =
          input.correlationId == null
            ? null
            : parseArg(CorrelationId, input.correlationId, 'input.correlationId');
        const expiresIn =
          input.expiresInSeconds == null
            ? null
            : parseArg(MessageExpiresIn, input.expiresInSeconds, 'input.expiresInSeconds');
        // Agent messages share the posting buckets with room posts (one token per attempt).
        await takeRateToken(ctx.db, ctx.config, auth, 'post', deps.now(), ctx.metrics);
        // A reply's address comes from the message it answers (its sender was checked when it sent).
        if (to?.kind === 'DEVICE' && !replyTo) await checkDevice(ctx, to.id);
        if (to?.kind === 'USER' && !replyTo) await checkUser(ctx, to.id);
        const normalized = {
          idempotencyKey: args.idempotencyKey,
          input: { to, body, contentType, correlationId, replyTo, expiresInSeconds: expiresIn },
        };
        return idempotentMutation(ctx, 'Mutation.sendAgentMessage', normalized, async (tx, a) => {
          let recipient = to;
          let correlation = correlationId;
          if (replyTo) {
            const original = (await agentMessagesById(tx, [replyTo], deps.now())).get(replyTo);
            // Only a message of the caller's own inbox can be answered.
            if (!original || !sameAddress(original.to, sender))
              throw notFound(`Agent message ${replyTo} in your inbox`);
            if (recipient && !sameAddress(recipient, original.from)) {
              throw badInput(
                '"input.to" must be the sender of the message in "input.replyTo" (or be omitted).',
                {
                  argument: 'input.to',
                },
              );
            }
            if (
              correlation !== null &&
              original.correlationId !== null &&
              correlation !== original.correlationId
            ) {
              throw badInput(
                '"input.correlationId" must match the one of the message you answer (or be omitted).',
                {
                  argument: 'input.correlationId',
                },
              );
            }
            recipient = original.from;
            correlation ??= original.correlationId;
          }
          const createdAt = deps.now();
          const message = await insertAgentMessage(tx, {
            tenantId: a.tenantId,
            id: randomUUID(),
            to: recipient!,
            from: sender,
            body,
            contentType,
            correlationId: correlation,
            replyTo,
            createdAt,
            expiresAt: expiresIn === null ? null : new Date(createdAt.getTime() + expiresIn * 1000),
          });
          return { message };
        });
      },

      async acknowledgeAgentMessage(_parent, args, ctx) {
        const auth = requireAuth(ctx.auth);
        const me = callerAddress(auth);
        const id = parseArg(MessageId, args.id, 'id');
        const state = parseArg(AckStateArg, args.state, 'state');
        let reason: string | null = null;
        if (state === 'FAILED') {
          reason = parseArg(FailureReason, args.reason ?? '', 'reason');
        } else if (args.reason != null) {
          throw badInput('"reason" is only for FAILED (why the message cannot be handled). Omit it.', {
            argument: 'reason',
          });
        }
        return idempotentMutation(
          ctx,
          'Mutation.acknowledgeAgentMessage',
          { idempotencyKey: args.idempotencyKey, id, state, reason },
          async (tx) => {
            const current = visibleTo(auth, (await agentMessagesById(tx, [id], deps.now())).get(id));
            if (!current) throw notFound(`Agent message ${id}`);
            if (!sameAddress(current.to, me)) {
              throw new AppError(
                'FORBIDDEN',
                'Only the recipient of an agent message can acknowledge it; you sent this one.',
              );
            }
            return { message: await acknowledge(tx, { id, recipient: me, state, reason, at: deps.now() }) };
          },
        );
      },
    },

    Subscription: {
      agentMessages: {
        // Checks run here, before the stream starts, so a refusal reaches the client as a coded GraphQL error.
        async subscribe(_parent, args, ctx) {
          const auth = requireAuth(ctx.auth);
          const inbox = callerAddress(auth);
          const requested = args.afterSeq == null ? null : parseArg(InboxAfterSeq, args.afterSeq, 'afterSeq');
          const position = await tenantRead(ctx, (tx) => inboxPosition(tx, inbox, deps.now()));
          if (requested !== null && requested > position.lastSeq) {
            throw badInput(
              `"afterSeq" is beyond the end of your inbox (last seq ${position.lastSeq}). Resume from the last seq you handled, or omit it to start at the server-side cursor.`,
              { argument: 'afterSeq', lastSeq: position.lastSeq },
            );
          }
          return inboxStream({
            db: ctx.db,
            auth,
            log: ctx.log,
            signal: ctx.signal,
            inbox,
            afterSeq: requested ?? position.cursorSeq,
            now: deps.now,
          });
        },
        resolve: (message: AgentMessageModel) => message,
      },
    },

    AgentMessage: {
      async __resolveReference(ref, ctx) {
        if (!ctx.auth || !MessageId.safeParse(ref.id).success) return null;
        return visibleTo(ctx.auth, await load(ctx, ref.id));
      },
      async replyTo(message, _args, ctx) {
        if (!message.replyTo) return null;
        return visibleTo(requireAuth(ctx.auth), await load(ctx, message.replyTo));
      },
    },

    AgentAddress: {
      deviceId: (a) => (a.kind === 'DEVICE' ? a.id : null),
      userId: (a) => (a.kind === 'USER' ? a.id : null),
      device: (a) => (a.kind === 'DEVICE' ? { __typename: 'Device' as const, id: a.id } : null),
      user: (a) => (a.kind === 'USER' ? userRef(a.id) : null),
    },
  };
}

/** The default instance: the system clock, identity asked over globalThis.fetch. */
export const agentMessageResolvers: AgentMessageResolvers = createAgentMessageResolvers({
  now: () => new Date(),
  devices: createDeviceDirectory(),
});

/**
 * Resolvers of the intent part of schemas/coordination.graphql. Built by a factory so the clock and the identity
 * client are injected (tests run on exact times). Reads use tenantRead, writes idempotentMutation; RLS scopes both.
 */
import { randomUUID } from 'node:crypto';
import {
  keyVault,
  AppError,
  badInput,
  idempotentMutation,
  notFound,
  pageRequest,
  principalKindOf,
  requireAuth,
  roleCovers,
  tenantRead,
  toConnection,
  type AuthContext,
  type Database,
  type Logger,
  type Queryable,
  type SubgraphContext,
} from '@agentgraph/runtime';
import { auditOriginOf, requestOriginOf } from '../audit-origin.js';
import { emergencyStopError } from '../emergency/watch.js';
import type { Resolvers } from '../generated/resolvers.js';
import { takeRateToken } from '../limits/rate-limiter.js';
import { parseArg } from '../input.js';
import { userRef } from '../models.js';
import type { ChannelRouter } from '../notification-hub.js';
import { sequencedStream, type SequencedStreamOptions } from '../seq-stream.js';
import type { DeviceDirectory } from './device-directory.js';
import {
  AfterSeqArg,
  ExecutionTimeout,
  ExpiresIn,
  IntentAction,
  IntentId,
  IntentParams,
  requireOperator,
} from './input.js';
import { intentIssuer, peekReportIntent, signIntent, verifyReport } from './jws.js';
import { activeIntentKey } from './keys.js';
import { isTerminal } from './machine.js';
import type { IntentEventModel, IntentModel } from './models.js';
import {
  INTENTS_CHANNEL,
  eventsAfter,
  insertIntent,
  intentsAfter,
  intentsAfterOnce,
  intentsById,
  lastIntentSeq,
  rememberReport,
  transition,
} from './store.js';
import { seqKey } from '../seq-cursor.js';

/**
 * Metrics of a committed state change (a replay changed nothing): the transition, and for the device's first moves
 * the dispatch latency from the intent's creation (DELIVERED: delivered; its local decision: acknowledged).
 */
function countTransition(ctx: SubgraphContext, intent: IntentModel, now: Date): void {
  if (!ctx.metrics || ctx.responseExtensions['idempotentReplay']) return;
  ctx.metrics.intentTransition(intent.state);
  const stage =
    intent.state === 'DELIVERED'
      ? 'delivered'
      : intent.state === 'LOCALLY_APPROVED' || intent.state === 'DENIED_BY_POLICY'
        ? 'acknowledged'
        : undefined;
  if (stage)
    ctx.metrics.intentDispatched(stage, Math.max(0, now.getTime() - Date.parse(intent.createdAt)) / 1000);
}

export interface IntentResolverDeps {
  now: () => Date;
  devices: DeviceDirectory;
}

type IntentResolvers = Pick<
  Resolvers,
  'Query' | 'Mutation' | 'Subscription' | 'Intent' | 'IntentStateChange'
>;

function loadIntent(ctx: SubgraphContext, id: string): Promise<IntentModel | null> {
  return tenantRead(ctx, (tx) => intentsById(tx, [id])).then((m) => m.get(id) ?? null);
}

/** A device token sees only its own device's intents; users see every intent of their tenant. */
function visible(auth: AuthContext, intent: IntentModel | null): IntentModel | null {
  if (!intent) return null;
  return auth.deviceId && auth.deviceId !== intent.deviceId ? null : intent;
}

/**
 * Intent notifications ({tenantId, deviceId, intentId, n}): a new intent (n = 1) goes to its device's streams,
 * every change to the streams of that intent.
 */
const intentRouter: ChannelRouter = (n) => {
  const tenant = String(n['tenantId']);
  const forIntent = `intent:${tenant}:${String(n['intentId'])}`;
  return n['n'] === 1 ? [`device:${tenant}:${String(n['deviceId'])}`, forIntent] : [forIntent];
};

/**
 * What a device's intent stream reads (Subscription.deviceIntents): methods on the prototype, not closures, so an
 * idle stream (thousands per process) holds only these fields.
 */
class DeviceIntentFeed implements SequencedStreamOptions<IntentModel> {
  readonly db: Database;
  readonly log: Logger;
  readonly signal: AbortSignal;

  constructor(
    ctx: Pick<SubgraphContext, 'db' | 'log' | 'signal'>,
    readonly auth: AuthContext,
    private readonly deviceId: string,
    readonly afterSeq: number,
  ) {
    this.db = ctx.db;
    this.log = ctx.log;
    this.signal = ctx.signal;
  }

  /** Made when the stream (un)subscribes, not kept: the hub holds one copy per device. */
  get routeKey(): string {
    return `device:${this.auth.tenantId}:${this.deviceId}`;
  }

  get channel(): string {
    return INTENTS_CHANNEL;
  }

  get router(): ChannelRouter {
    return intentRouter;
  }

  get logFields(): Record<string, unknown> {
    return { deviceId: this.deviceId };
  }

  read(tx: Queryable, after: number, limit: number): Promise<IntentModel[]> {
    return intentsAfter(tx, this.deviceId, after, limit);
  }

  readOnce(db: Queryable, after: number, limit: number): Promise<IntentModel[]> {
    return intentsAfterOnce(db, this.auth, this.deviceId, after, limit);
  }

  seqOf(intent: IntentModel): number {
    return intent.seq;
  }
}

function requireDeviceToken(auth: AuthContext, what: string): string {
  if (!auth.deviceId) {
    throw new AppError(
      'FORBIDDEN',
      `Only a device's own access token can ${what}; sign in on the device (device authorization grant).`,
    );
  }
  return auth.deviceId;
}

export function createIntentResolvers(deps: IntentResolverDeps): IntentResolvers {
  return {
    Query: {
      async intent(_parent, args, ctx) {
        const auth = requireAuth(ctx.auth);
        const id = parseArg(IntentId, args.id, 'id');
        return visible(auth, await loadIntent(ctx, id));
      },

      async deviceIntents(_parent, args, ctx) {
        const auth = requireAuth(ctx.auth);
        const deviceId = parseArg(IntentId, args.deviceId, 'deviceId');
        if (auth.deviceId && auth.deviceId !== deviceId) {
          throw new AppError('FORBIDDEN', "A device token may read only its own device's intents.");
        }
        const afterSeq = parseArg(AfterSeqArg, args.afterSeq ?? 0, 'afterSeq');
        const scope = `Query.deviceIntents:${auth.tenantId}:${deviceId}`;
        const req = pageRequest(
          ctx.cursors,
          scope,
          { first: args.first },
          {
            maxPageSize: ctx.config.limits.maxPageSize,
            defaultPageSize: 20,
          },
        );
        const rows = await tenantRead(ctx, (tx) => intentsAfter(tx, deviceId, afterSeq, req.limit + 1));
        return toConnection(ctx.cursors, scope, req, rows, (i) => [i.seq]);
      },
    },

    Mutation: {
      async createIntent(_parent, args, ctx) {
        const auth = requireAuth(ctx.auth);
        requireOperator(auth);
        const deviceId = parseArg(IntentId, args.input.deviceId, 'input.deviceId');
        const action = parseArg(IntentAction, args.input.action, 'input.action');
        const params = parseArg(IntentParams, args.input.params ?? '{}', 'input.params');
        const expiresIn = parseArg(ExpiresIn, args.input.expiresInSeconds, 'input.expiresInSeconds');
        const execTimeout = parseArg(
          ExecutionTimeout,
          args.input.executionTimeoutSeconds ?? 300,
          'input.executionTimeoutSeconds',
        );
        // The rate limit before asking identity (one token per attempt, replays included).
        await takeRateToken(ctx.db, ctx.config, auth, 'intent', deps.now(), ctx.metrics);
        const device = await deps.devices.device(ctx, deviceId);
        if (!device) throw notFound(`Device ${deviceId}`);
        if (device.status !== 'ENROLLED') {
          throw new AppError(
            'FORBIDDEN',
            `Device ${deviceId} is ${device.status}; intents go only to ENROLLED devices.`,
            { reason: 'DEVICE_NOT_ENROLLED' },
          );
        }
        if (!device.remoteActionsEnabled) {
          throw new AppError(
            'FORBIDDEN',
            `Remote actions are disabled on device ${deviceId}; its local user must enable them first.`,
            { reason: 'REMOTE_ACTIONS_DISABLED' },
          );
        }
        const issuer = intentIssuer(ctx.config);
        const normalized = {
          ...args,
          input: {
            deviceId,
            action,
            params: JSON.stringify(params),
            expiresInSeconds: expiresIn,
            execTimeout,
          },
        };
        // Read outside the mutation's transaction: the embedded database has one connection.
        const key = await activeIntentKey(ctx.db, keyVault(ctx.config), deps.now().getTime());
        const origin = auditOriginOf(ctx, auth);
        const result = await idempotentMutation(ctx, 'Mutation.createIntent', normalized, async (tx, a) => {
          const createdAt = deps.now();
          const expiresAt = new Date(createdAt.getTime() + expiresIn * 1000);
          const id = randomUUID();
          // insertIntent checks the emergency stops in the creating transaction (with the seq, one round trip).
          const created = await insertIntent(tx, {
            tenantId: a.tenantId,
            id,
            deviceId,
            requester: a.principalId,
            action,
            params,
            createdAt,
            expiresAt,
            executionTimeoutSeconds: execTimeout,
            origin,
            sign: (seq) =>
              signIntent(key, {
                issuer,
                id,
                tenantId: a.tenantId,
                deviceId,
                requester: a.principalId,
                action,
                params,
                seq,
                issuedAt: createdAt,
                expiresAt,
              }),
          });
          if ('stopped' in created) throw emergencyStopError(created.stopped.global);
          return { intent: created };
        });
        countTransition(ctx, result.intent, deps.now());
        return result;
      },

      async cancelIntent(_parent, args, ctx) {
        const auth = requireAuth(ctx.auth);
        const id = parseArg(IntentId, args.id, 'id');
        const result = await idempotentMutation(
          ctx,
          'Mutation.cancelIntent',
          { ...args, id },
          async (tx, a) => {
            const current = visible(a, (await intentsById(tx, [id])).get(id) ?? null);
            if (!current) throw notFound(`Intent ${id}`);
            if (current.requester !== a.principalId || auth.deviceId) {
              throw new AppError('FORBIDDEN', 'Only the user who requested an intent can cancel it.');
            }
            const intent = await transition(tx, {
              intentId: id,
              to: 'CANCELLED',
              source: 'requester',
              actor: a.principalId,
              at: deps.now(),
              origin: auditOriginOf(ctx, auth),
            });
            return { intent };
          },
        );
        countTransition(ctx, result.intent, deps.now());
        return result;
      },

      async reportIntentState(_parent, args, ctx) {
        const auth = requireAuth(ctx.auth);
        const deviceId = requireDeviceToken(auth, 'report the state of an intent');
        if (typeof args.report !== 'string' || args.report.length > 16_384) {
          throw badInput('"report" must be a compact JWS of at most 16384 characters.', {
            argument: 'report',
          });
        }
        const intentId = peekReportIntent(args.report);
        const target = await loadIntent(ctx, intentId);
        if (!target) throw notFound(`Intent ${intentId}`);
        if (target.deviceId !== deviceId) {
          throw new AppError(
            'FORBIDDEN',
            'The report was refused (WRONG_DEVICE): the intent is for another device.',
            {
              reason: 'WRONG_DEVICE',
            },
          );
        }
        const device = await deps.devices.device(ctx, deviceId);
        if (!device || device.status !== 'ENROLLED' || !device.publicJwk) {
          throw new AppError('FORBIDDEN', 'The report was refused: the device is not enrolled.', {
            reason: 'DEVICE_NOT_ENROLLED',
          });
        }
        const now = deps.now();
        const report = await verifyReport(args.report, {
          publicJwk: device.publicJwk,
          deviceId,
          audience: intentIssuer(ctx.config),
          now,
        });
        const result = await idempotentMutation(ctx, 'Mutation.reportIntentState', args, async (tx, a) => {
          if (!(await rememberReport(tx, a.tenantId, deviceId, report.jti))) {
            throw new AppError(
              'BAD_USER_INPUT',
              'The report was refused (REPLAYED): this report (jti) was already received. Sign a new report for a new state.',
              { reason: 'REPLAYED' },
            );
          }
          const intent = await transition(tx, {
            intentId: report.intentId,
            to: report.state,
            source: 'device',
            actor: `device:${deviceId}`,
            reason: report.reason,
            at: now,
            origin: auditOriginOf(ctx, auth),
          });
          return { intent };
        });
        countTransition(ctx, result.intent, now);
        return result;
      },
    },

    Subscription: {
      deviceIntents: {
        async subscribe(_parent, args, ctx) {
          const auth = requireAuth(ctx.auth);
          const deviceId = requireDeviceToken(auth, 'open its intent stream');
          const afterSeq = parseArg(AfterSeqArg, args.afterSeq ?? 0, 'afterSeq');
          const lastSeq = await tenantRead(ctx, (tx) => lastIntentSeq(tx, deviceId));
          if (afterSeq > lastSeq) {
            throw badInput(
              `"afterSeq" is beyond the device's last intent (seq ${lastSeq}). Resume from the last seq you handled.`,
              { argument: 'afterSeq', lastSeq },
            );
          }
          return sequencedStream(new DeviceIntentFeed(ctx, auth, deviceId, afterSeq));
        },
        resolve: (intent: IntentModel) => intent,
      },

      intentUpdates: {
        async subscribe(_parent, args, ctx) {
          const auth = requireAuth(ctx.auth);
          const intentId = parseArg(IntentId, args.intentId, 'intentId');
          const intent = visible(auth, await loadIntent(ctx, intentId));
          if (!intent) throw notFound(`Intent ${intentId}`);
          return sequencedStream<IntentEventModel>({
            db: ctx.db,
            auth,
            log: ctx.log,
            signal: ctx.signal,
            channel: INTENTS_CHANNEL,
            router: intentRouter,
            routeKey: `intent:${auth.tenantId}:${intentId}`,
            read: (tx, after, limit) => eventsAfter(tx, intentId, after, limit),
            seqOf: (e) => e.n,
            afterSeq: 0,
            isLast: (e) => isTerminal(e.state),
            logFields: { intentId },
          });
        },
        resolve: (event: IntentEventModel) => event,
      },
    },

    Intent: {
      async __resolveReference(ref, ctx) {
        if (!ctx.auth || !IntentId.safeParse(ref.id).success) return null;
        return visible(ctx.auth, await loadIntent(ctx, ref.id));
      },
      device: (intent) => ({ __typename: 'Device' as const, id: intent.deviceId }),
      requester: (intent) => userRef(intent.requester),
      async history(intent, args, ctx) {
        const auth = requireAuth(ctx.auth);
        const scope = `Intent.history:${auth.tenantId}:${intent.id}`;
        const req = pageRequest(ctx.cursors, scope, args, {
          maxPageSize: ctx.config.limits.maxPageSize,
          defaultPageSize: 20,
        });
        const from = req.from ? seqKey(req.from, 'after') : 0;
        const rows = await tenantRead(ctx, (tx) => eventsAfter(tx, intent.id, from, req.limit + 1));
        return toConnection(ctx.cursors, scope, req, rows, (e) => [e.n]);
      },
    },

    IntentStateChange: {
      // An ADMIN's read of the audit: a person's token only (a device's carries its owner's role).
      origin: (event, _args, ctx) =>
        ctx.auth && principalKindOf(ctx.auth) === 'PERSON' && roleCovers(ctx.auth.role, 'ADMIN')
          ? requestOriginOf(event.origin)
          : null,
      async intent(event, _args, ctx) {
        const intent = await loadIntent(ctx, event.intentId);
        if (!intent) throw notFound(`Intent ${event.intentId}`);
        return intent;
      },
    },
  };
}

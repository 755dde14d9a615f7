/**
 * Resolvers of schemas/catalog.graphql, typed by the generated Resolvers. Reads run in tenantRead (one shared transaction per turn of a request), writes in
 * idempotentMutation; both go through Row-Level Security, so another tenant's rows are simply not there.
 */
import {
  DateTimeScalar,
  anyKey,
  idempotentMutation,
  keyVault,
  keysetPage,
  timeKey,
  loaderFor,
  tenantRead,
  type SubgraphContext,
} from '@agentgraph/runtime';
import type { Channel, Resolvers, TufRole } from './generated/resolvers.js';
import {
  CreatePluginArgs,
  DeclareReleaseArgs,
  ReleaseIdArgs,
  ReleaseReasonArgs,
  isUuid,
  parseArgs,
  requirePublisher,
  requireReader,
  requireReviewer,
} from './input.js';
import type { AnalysisModel, ChannelName, PluginModel, ReleaseModel } from './models.js';
import * as pipeline from './pipeline-store.js';
import * as review from './review.js';
import * as store from './store.js';
import { TUF_PREFIX } from './tuf/serve-route.js';

const user = (id: string) => ({ __typename: 'User' as const, id });

/**
 * By-id reads, batched per request (one query for all of an `_entities` call's references). A malformed id
 * cannot exist, so it is null like an unknown one or another tenant's.
 */
async function pluginById(ctx: SubgraphContext, id: unknown): Promise<PluginModel | null> {
  requireReader(ctx.auth);
  if (!isUuid(id)) return null;
  return loaderFor(ctx, 'catalog.pluginById', (ids: readonly string[]) =>
    tenantRead(ctx, (tx) => store.findPlugins(tx, ids)),
  ).load(id.toLowerCase());
}

async function releaseById(ctx: SubgraphContext, id: unknown): Promise<ReleaseModel | null> {
  requireReader(ctx.auth);
  if (!isUuid(id)) return null;
  return loaderFor(ctx, 'catalog.releaseById', (ids: readonly string[]) =>
    tenantRead(ctx, (tx) => store.findReleases(tx, ids)),
  ).load(id.toLowerCase());
}

async function analysisOf(ctx: SubgraphContext, releaseId: string): Promise<AnalysisModel | null> {
  return loaderFor(ctx, 'catalog.analysisByRelease', (ids: readonly string[]) =>
    tenantRead(ctx, (tx) => pipeline.findAnalyses(tx, ids)),
  ).load(releaseId);
}

async function targetPathOf(ctx: SubgraphContext, releaseId: string): Promise<string | null> {
  return loaderFor(ctx, 'catalog.targetPathByRelease', (ids: readonly string[]) =>
    tenantRead(ctx, (tx) => pipeline.targetPaths(tx, ids)),
  ).load(releaseId);
}

const upper = (c: ChannelName | null): Channel | null => (c ? (c.toUpperCase() as Channel) : null);
const lowerRole = (r: TufRole) => r.toLowerCase() as Lowercase<TufRole>;

export function createResolvers(settings: Omit<review.ReviewDeps, 'vault'>): Resolvers {
  /** What a review decision needs: the settings of now, and the server's key-encryption keys for the TUF keys. */
  const reviewDeps = (ctx: SubgraphContext): review.ReviewDeps => ({
    now: settings.now,
    tuf: settings.tuf,
    vault: keyVault(ctx.config),
  });
  return {
    DateTime: DateTimeScalar,

    Query: {
      release: (_parent, { id }, ctx) => releaseById(ctx, id),
      reviewQueue: (_parent, args, ctx) => {
        const auth = requireReader(ctx.auth);
        return keysetPage(ctx, `Query.reviewQueue:${auth.tenantId}:`, args, timeKey, (limit, after) =>
          tenantRead(ctx, (tx) => pipeline.listReviewQueue(tx, limit, after)),
        );
      },
      analyzerJwks: async (_parent, _args, ctx) => {
        requireReader(ctx.auth);
        const r = await tenantRead(ctx, (tx) =>
          tx.query<{ public_key: string }>(
            `SELECT public_key FROM catalog.signing_keys WHERE role = 'analyzer' ORDER BY created_at, key_id`,
          ),
        );
        return JSON.stringify({ keys: r.rows.map((k) => JSON.parse(k.public_key) as unknown) });
      },
      tufRepository: async (_parent, _args, ctx) => {
        const auth = requireReader(ctx.auth);
        const r = await tenantRead(ctx, (tx) =>
          tx.query<{ versions: Record<string, number> }>(`SELECT versions FROM catalog.tuf_repositories`),
        );
        const v = r.rows[0]?.versions;
        if (!v) return null;
        const base = `${TUF_PREFIX}${auth.tenantId}`;
        return {
          metadataPath: `${base}/metadata`,
          targetsPath: `${base}/targets`,
          rootVersion: v['root'] ?? 1,
          timestampVersion: v['timestamp'] ?? 1,
          snapshotVersion: v['snapshot'] ?? 1,
        };
      },
      plugin: (_parent, { id }, ctx) => pluginById(ctx, id),
      plugins: (_parent, args, ctx) => {
        const auth = requireReader(ctx.auth);
        return keysetPage(ctx, `Query.plugins:${auth.tenantId}:`, args, anyKey, (limit, after) =>
          tenantRead(ctx, (tx) => store.listPlugins(tx, limit, after)),
        );
      },
    },

    Mutation: {
      createPlugin: (_parent, args, ctx) => {
        requirePublisher(ctx.auth, 'create plugins');
        const { input } = parseArgs(CreatePluginArgs, args);
        return idempotentMutation(ctx, 'Mutation.createPlugin', args, async (tx, auth) => ({
          plugin: await store.createPlugin(tx, auth, input),
        }));
      },
      declareRelease: (_parent, args, ctx) => {
        requirePublisher(ctx.auth, 'declare releases');
        const { pluginId, input } = parseArgs(DeclareReleaseArgs, args);
        return idempotentMutation(ctx, 'Mutation.declareRelease', args, async (tx, auth) => ({
          release: await store.declareRelease(tx, auth, pluginId, input.version),
        }));
      },
      approveRelease: (_parent, args, ctx) => {
        requireReviewer(ctx.auth, 'approve releases');
        const { releaseId } = parseArgs(ReleaseIdArgs, args);
        return idempotentMutation(ctx, 'Mutation.approveRelease', args, async (tx, auth) => ({
          release: await review.approve(tx, auth, releaseId, reviewDeps(ctx)),
        }));
      },
      rejectRelease: (_parent, args, ctx) => {
        requireReviewer(ctx.auth, 'reject releases');
        const { releaseId, reason } = parseArgs(ReleaseReasonArgs, args);
        return idempotentMutation(ctx, 'Mutation.rejectRelease', args, async (tx, auth) => ({
          release: await review.reject(tx, auth, releaseId, reason, reviewDeps(ctx)),
        }));
      },
      appealRelease: (_parent, args, ctx) => {
        requireReader(ctx.auth);
        const { releaseId, reason } = parseArgs(ReleaseReasonArgs, args);
        return idempotentMutation(ctx, 'Mutation.appealRelease', args, async (tx, auth) => ({
          release: await review.appeal(tx, auth, releaseId, reason, reviewDeps(ctx)),
        }));
      },
      promoteRelease: (_parent, args, ctx) => {
        requireReviewer(ctx.auth, 'promote releases');
        const { releaseId } = parseArgs(ReleaseIdArgs, args);
        return idempotentMutation(ctx, 'Mutation.promoteRelease', args, async (tx, auth) => ({
          release: await review.promote(tx, auth, releaseId, reviewDeps(ctx)),
        }));
      },
      revokeRelease: (_parent, args, ctx) => {
        requireReviewer(ctx.auth, 'revoke releases');
        const { releaseId, reason } = parseArgs(ReleaseReasonArgs, args);
        return idempotentMutation(ctx, 'Mutation.revokeRelease', args, async (tx, auth) => ({
          release: await review.revoke(tx, auth, releaseId, reason, reviewDeps(ctx)),
        }));
      },
      rotateTufKey: (_parent, args, ctx) => {
        requireReviewer(ctx.auth, 'rotate signing keys');
        return idempotentMutation(ctx, 'Mutation.rotateTufKey', args, async (tx, auth) => {
          const r = await review.rotate(tx, auth, lowerRole(args.role), reviewDeps(ctx));
          return { role: args.role, rootVersion: r.rootVersion };
        });
      },
    },

    Plugin: {
      __resolveReference: (ref, ctx) => pluginById(ctx, ref.id),
      publisher: (p) => user(p.publisherId),
      releases: (p, args, ctx) => {
        const auth = requireReader(ctx.auth);
        return keysetPage(ctx, `Plugin.releases:${auth.tenantId}:${p.id}`, args, timeKey, (limit, after) =>
          tenantRead(ctx, (tx) => store.listReleases(tx, p, limit, after)),
        );
      },
    },

    Release: {
      __resolveReference: (ref, ctx) => releaseById(ctx, ref.id),
      createdBy: (r) => user(r.createdById),
      channel: (r) => upper(r.channel),
      analysis: (r, _args, ctx) => analysisOf(ctx, r.id),
      targetPath: (r, _args, ctx) => (r.state === 'APPROVED' ? targetPathOf(ctx, r.id) : null),
      decisions: (r, args, ctx) => {
        const auth = requireReader(ctx.auth);
        return keysetPage(ctx, `Release.decisions:${auth.tenantId}:${r.id}`, args, anyKey, (limit, after) =>
          tenantRead(ctx, (tx) => pipeline.listDecisions(tx, r.id, limit, after)),
        );
      },
    },

    AnalysisReport: {
      findings: (a, args, ctx) => {
        const auth = requireReader(ctx.auth);
        return keysetPage(
          ctx,
          `AnalysisReport.findings:${auth.tenantId}:${a.id}`,
          args,
          anyKey,
          (limit, after) => {
            const from = after ? Number(after.value) + 1 : 0;
            return Promise.resolve(
              a.findings.slice(from, from + limit).map((f, i) => ({
                node: { rule: f.rule, path: f.path ?? null, message: f.message },
                key: { value: String(from + i), id: a.id },
              })),
            );
          },
        );
      },
    },

    ReleasePackage: {
      uploadedBy: (p) => user(p.uploadedById),
    },

    ReviewDecision: {
      actor: (d) => (d.actorId === 'system' ? null : user(d.actorId)),
      channel: (d) => upper(d.channel),
    },
  };
}

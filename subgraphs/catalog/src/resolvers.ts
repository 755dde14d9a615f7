/**
 * Resolvers of schemas/catalog.graphql, typed by the generated Resolvers. Reads run in tenantRead (one shared transaction per turn of a request), writes in
 * idempotentMutation; both go through Row-Level Security, so another tenant's rows are simply not there.
 */
import {
  DateTimeScalar,
  anyKey,
  idempotentMutation,
  keysetPage,
  timeKey,
  loaderFor,
  tenantRead,
  type SubgraphContext,
} from '@agentgraph/runtime';
import type { Resolvers } from './generated/resolvers.js';
import {
  CreatePluginArgs,
  DeclareReleaseArgs,
  isUuid,
  parseArgs,
  requireReader,
  requireWriter,
} from './input.js';
import type { PluginModel, ReleaseModel } from './models.js';
import * as store from './store.js';

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

export const resolvers: Resolvers = {
  DateTime: DateTimeScalar,

  Query: {
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
      requireWriter(ctx.auth);
      const { input } = parseArgs(CreatePluginArgs, args);
      return idempotentMutation(ctx, 'Mutation.createPlugin', args, async (tx, auth) => ({
        plugin: await store.createPlugin(tx, auth, input),
      }));
    },
    declareRelease: (_parent, args, ctx) => {
      requireWriter(ctx.auth);
      const { pluginId, input } = parseArgs(DeclareReleaseArgs, args);
      return idempotentMutation(ctx, 'Mutation.declareRelease', args, async (tx, auth) => ({
        release: await store.declareRelease(tx, auth, pluginId, input.version),
      }));
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
  },
};

/**
 * Resolvers of schemas/memory.graphql, typed by the generated Resolvers. Reads run in tenantRead (one shared
 * transaction per turn of a request), writes in idempotentMutation; both go through Row-Level Security, so another
 * tenant's rows are simply not there. A factory: the clock (expiry, job times) is injected.
 */
import { createHash } from 'node:crypto';
import {
  AppError,
  canonicalJson,
  DateTimeScalar,
  idempotentMutation,
  keysetPage,
  timeKey,
  loaderFor,
  notFound,
  tenantRead,
  type SubgraphContext,
} from '@agentgraph/runtime';
import { prepareBatch, putRecords } from './batch.js';
import type { Resolvers } from './generated/resolvers.js';
import {
  contentTooLarge,
  CreateWorkspaceArgs,
  DeleteArgs,
  isUuid,
  JobsArgs,
  parseArgs,
  PutMemoriesArgs,
  PutMemoryArgs,
  RecordsArgs,
  requireAdmin,
  requireReader,
  requireWriter,
  SearchArgs,
  type RecordFilter,
} from './input.js';
import type { MemoryRecordModel, WorkspaceModel } from './models.js';
import { hnswDimensions, scoreKey, searchCapabilities, searchRecords } from './search.js';
import * as store from './store.js';
import type { VectorCache } from './vector-index/cache.js';
import { checkWorkspaceLimits, DEFAULT_WORKSPACE_LIMITS, type WorkspaceLimits } from './workspace-limits.js';

export interface ResolverOptions {
  /** The server clock: expiry is compared with it, jobs and new workspaces are stamped with it. */
  now: () => Date;
  /** Limits on creating workspaces per tenant (workspace-limits.ts); default DEFAULT_WORKSPACE_LIMITS. */
  workspaceLimits?: WorkspaceLimits;
  /** In-process copies of workspaces' embeddings (EXACT_IN_MEMORY search); absent: vector search stays in SQL. */
  vectors?: VectorCache;
}

/** The part of a cursor scope that binds it to a filter (empty for no filter, so old cursors stay valid). */
function filterScope(filter: RecordFilter): string {
  const set = Object.fromEntries(
    Object.entries(filter)
      .filter(([, v]) => v != null)
      .map(([k, v]) => [k, v instanceof Date ? v.toISOString() : v]),
  );
  return Object.keys(set).length === 0 ? '' : `:${canonicalJson(set)}`;
}

const user = (id: string) => ({ __typename: 'User' as const, id });

/**
 * The mutations whose stored idempotent answers eraseTenantMemory tombstones (they can hold names and record
 * content): every memory mutation but the erase itself, whose answer holds counts only. A test keeps the list
 * equal to `Mutation` below.
 */
export const TENANT_ERASE_OPERATIONS: readonly string[] = [
  'Mutation.createWorkspace',
  'Mutation.deleteMemory',
  'Mutation.deleteWorkspace',
  'Mutation.putMemories',
  'Mutation.putMemory',
];

/**
 * By-id reads, batched per request (one query for all of an `_entities` call's references). A malformed id
 * cannot exist, so it is null like an unknown one or another tenant's.
 */
async function workspaceById(ctx: SubgraphContext, id: unknown): Promise<WorkspaceModel | null> {
  requireReader(ctx.auth);
  if (!isUuid(id)) return null;
  return loaderFor(ctx, 'memory.workspaceById', (ids: readonly string[]) =>
    tenantRead(ctx, (tx) => store.findWorkspaces(tx, ids)),
  ).load(id.toLowerCase());
}

export function createResolvers(opts: ResolverOptions): Resolvers {
  const { now, vectors } = opts;
  const workspaceLimits = opts.workspaceLimits ?? DEFAULT_WORKSPACE_LIMITS;

  async function recordById(ctx: SubgraphContext, id: unknown): Promise<MemoryRecordModel | null> {
    requireReader(ctx.auth);
    if (!isUuid(id)) return null;
    return loaderFor(ctx, 'memory.recordById', (ids: readonly string[]) =>
      tenantRead(ctx, (tx) => store.findRecords(tx, ids, now())),
    ).load(id.toLowerCase());
  }

  return {
    DateTime: DateTimeScalar,

    Query: {
      workspace: (_parent, { id }, ctx) => workspaceById(ctx, id),
      memoryRecord: (_parent, { id }, ctx) => recordById(ctx, id),
      workspaces: (_parent, args, ctx) => {
        const auth = requireReader(ctx.auth);
        return keysetPage(ctx, `Query.workspaces:${auth.tenantId}:`, args, timeKey, (limit, after) =>
          tenantRead(ctx, (tx) => store.listWorkspaces(tx, limit, after)),
        );
      },
      searchMemory: async (_parent, args, ctx) => {
        const auth = requireReader(ctx.auth);
        const { workspaceId, query } = parseArgs(SearchArgs, args);
        const workspace = await workspaceById(ctx, workspaceId);
        if (!workspace) throw notFound('The workspace (workspaceId)');
        if (query.embedding && workspace.embeddingDimensions !== query.embedding.length) {
          throw new AppError(
            'BAD_USER_INPUT',
            workspace.embeddingDimensions == null
              ? 'query.embedding: this workspace has no embeddings yet. Search by text, or write records with embeddings first.'
              : `query.embedding has ${query.embedding.length} dimensions, but this workspace's embeddings have ${workspace.embeddingDimensions}.`,
            {
              field: 'query.embedding',
              expected: workspace.embeddingDimensions,
              got: query.embedding.length,
            },
          );
        }
        // The cursor is bound to the whole query (text, embedding, weight, filter), by digest.
        const digest = createHash('sha256')
          .update(canonicalJson({ ...query, filter: filterScope(query.filter) }))
          .digest('base64url');
        const page = await keysetPage(
          ctx,
          `Query.searchMemory:${auth.tenantId}:${workspace.id}:${digest}`,
          args,
          scoreKey,
          (limit, after) =>
            tenantRead(ctx, (tx) =>
              searchRecords(tx, workspace, query, limit, after, now(), {
                vectors: vectors && { cache: vectors, tenantId: auth.tenantId },
              }),
            ),
        );
        return {
          pageInfo: page.pageInfo,
          edges: page.edges.map((e) => ({
            get cursor() {
              return e.cursor;
            },
            node: e.node.record,
            score: e.node.score,
            textScore: e.node.textScore,
            vectorScore: e.node.vectorScore,
          })),
        };
      },
      memoryJobs: (_parent, args, ctx) => {
        const auth = requireAdmin(ctx.auth);
        const { state } = parseArgs(JobsArgs, args);
        return keysetPage(
          ctx,
          `Query.memoryJobs:${auth.tenantId}:${state ?? ''}`,
          args,
          timeKey,
          (limit, after) => tenantRead(ctx, (tx) => store.listJobs(tx, state ?? null, limit, after)),
        );
      },
    },

    Mutation: {
      createWorkspace: (_parent, args, ctx) => {
        requireWriter(ctx.auth);
        const { input } = parseArgs(CreateWorkspaceArgs, args);
        return idempotentMutation(ctx, 'Mutation.createWorkspace', args, async (tx, auth) => {
          const createdAt = now();
          await checkWorkspaceLimits(tx, auth, workspaceLimits, createdAt);
          return { workspace: await store.createWorkspace(tx, auth, input.name, { ...input, createdAt }) };
        });
      },
      deleteMemory: (_parent, args, ctx) => {
        requireWriter(ctx.auth);
        const { id } = parseArgs(DeleteArgs, args);
        return idempotentMutation(ctx, 'Mutation.deleteMemory', args, async (tx) => {
          if (!(await store.deleteRecord(tx, id, now()))) throw notFound('The memory record (id)');
          return { deletedId: id };
        });
      },
      deleteWorkspace: (_parent, args, ctx) => {
        const auth = requireWriter(ctx.auth);
        const { id } = parseArgs(DeleteArgs, args);
        return idempotentMutation(ctx, 'Mutation.deleteWorkspace', args, async (tx) => {
          const done = await store.deleteWorkspace(tx, id, now());
          if (!done) throw notFound('The workspace (id)');
          return { deletedId: id, recordsDeleted: done.recordsDeleted };
        }).finally(() => vectors?.drop(auth.tenantId, id.toLowerCase()));
      },
      eraseTenantMemory: (_parent, args, ctx) => {
        const admin = requireAdmin(ctx.auth);
        return idempotentMutation(ctx, 'Mutation.eraseTenantMemory', args, (tx, auth) =>
          store.eraseTenantMemory(tx, auth, now(), TENANT_ERASE_OPERATIONS),
        ).finally(() => vectors?.drop(admin.tenantId));
      },
      putMemory: (_parent, args, ctx) => {
        requireWriter(ctx.auth);
        const { id, input, expectedVersion } = parseArgs(PutMemoryArgs, args);
        const tooLarge = contentTooLarge(input.content, 'input.content', ctx.config.limits.maxPayloadBytes);
        if (tooLarge) throw tooLarge;
        return idempotentMutation(ctx, 'Mutation.putMemory', args, (tx, auth) =>
          store.putRecord(
            tx,
            auth,
            { id, ...input, expectedVersion: expectedVersion ?? null },
            { now: now() },
          ),
        );
      },
      putMemories: (_parent, args, ctx) => {
        requireWriter(ctx.auth);
        const { input } = parseArgs(PutMemoriesArgs, args);
        // Each record is validated on its own (a bad one is that record's error), before the transaction opens.
        const items = prepareBatch(input.records, ctx.config.limits.maxPayloadBytes);
        return idempotentMutation(ctx, 'Mutation.putMemories', args, (tx, auth) =>
          putRecords(tx, auth, items, now()),
        );
      },
    },

    Workspace: {
      __resolveReference: (ref, ctx) => workspaceById(ctx, ref.id),
      createdBy: (w) => user(w.createdById),
      // One catalog query per request for every workspace listed (batched by dimension).
      searchCapabilities: async (w, _args, ctx) => {
        requireReader(ctx.auth);
        const dims = w.embeddingDimensions;
        const hnsw =
          dims != null &&
          (await loaderFor(ctx, 'memory.hnswDimensions', (keys: readonly number[]) =>
            tenantRead(ctx, (tx) => hnswDimensions(tx, keys)),
          ).load(dims)) === true;
        return searchCapabilities(hnsw, vectors?.enabled ?? false);
      },
      records: (w, args, ctx) => {
        const auth = requireReader(ctx.auth);
        const { filter } = parseArgs(RecordsArgs, { filter: args.filter });
        return keysetPage(
          ctx,
          `Workspace.records:${auth.tenantId}:${w.id}${filterScope(filter)}`,
          args,
          timeKey,
          (limit, after) => tenantRead(ctx, (tx) => store.listRecords(tx, w, limit, after, filter, now())),
        );
      },
    },

    MemoryJob: {
      // Jobs are for admins: a reference from anyone else is FORBIDDEN, like the list; another tenant's is null.
      __resolveReference: (ref, ctx) => {
        requireAdmin(ctx.auth);
        if (!isUuid(ref.id)) return null;
        return loaderFor(ctx, 'memory.jobById', (ids: readonly string[]) =>
          tenantRead(ctx, (tx) => store.findJobs(tx, ids)),
        ).load(ref.id.toLowerCase());
      },
    },

    MemoryRecord: {
      __resolveReference: (ref, ctx) => recordById(ctx, ref.id),
      author: (r) => user(r.authorId),
    },
  };
}

/**
 * Resolvers of schemas/memory.graphql, typed by the generated Resolvers. Reads run in tenantRead (one shared transaction per turn of a request), writes in
 * idempotentMutation; both go through Row-Level Security, so another tenant's rows are simply not there.
 */
import {
  AppError,
  DateTimeScalar,
  idempotentMutation,
  keysetPage,
  timeKey,
  loaderFor,
  tenantRead,
  type SubgraphContext,
} from '@agentgraph/runtime';
import type { Resolvers } from './generated/resolvers.js';
import {
  CreateWorkspaceArgs,
  isUuid,
  parseArgs,
  PutMemoryArgs,
  requireReader,
  requireWriter,
} from './input.js';
import type { MemoryRecordModel, WorkspaceModel } from './models.js';
import * as store from './store.js';

const user = (id: string) => ({ __typename: 'User' as const, id });

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

async function recordById(ctx: SubgraphContext, id: unknown): Promise<MemoryRecordModel | null> {
  requireReader(ctx.auth);
  if (!isUuid(id)) return null;
  return loaderFor(ctx, 'memory.recordById', (ids: readonly string[]) =>
    tenantRead(ctx, (tx) => store.findRecords(tx, ids)),
  ).load(id.toLowerCase());
}

export const resolvers: Resolvers = {
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
  },

  Mutation: {
    createWorkspace: (_parent, args, ctx) => {
      requireWriter(ctx.auth);
      const { input } = parseArgs(CreateWorkspaceArgs, args);
      return idempotentMutation(ctx, 'Mutation.createWorkspace', args, async (tx, auth) => ({
        workspace: await store.createWorkspace(tx, auth, input.name),
      }));
    },
    putMemory: (_parent, args, ctx) => {
      requireWriter(ctx.auth);
      const { id, input, expectedVersion } = parseArgs(PutMemoryArgs, args);
      const maxBytes = ctx.config.limits.maxPayloadBytes;
      if (Buffer.byteLength(input.content, 'utf8') > maxBytes) {
        throw new AppError(
          'PAYLOAD_TOO_LARGE',
          `input.content is over the limit of ${maxBytes} bytes (UTF-8). Store less per record, or split it into several records.`,
          { field: 'input.content', maxBytes },
        );
      }
      return idempotentMutation(ctx, 'Mutation.putMemory', args, (tx, auth) =>
        store.putRecord(tx, auth, { id, ...input, expectedVersion: expectedVersion ?? null }),
      );
    },
  },

  Workspace: {
    __resolveReference: (ref, ctx) => workspaceById(ctx, ref.id),
    createdBy: (w) => user(w.createdById),
    records: (w, args, ctx) => {
      const auth = requireReader(ctx.auth);
      return keysetPage(ctx, `Workspace.records:${auth.tenantId}:${w.id}`, args, timeKey, (limit, after) =>
        tenantRead(ctx, (tx) => store.listRecords(tx, w, limit, after)),
      );
    },
  },

  MemoryRecord: {
    __resolveReference: (ref, ctx) => recordById(ctx, ref.id),
    author: (r) => user(r.authorId),
  },
};

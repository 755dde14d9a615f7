/**
 * Resolvers of schemas/identity.graphql, typed by the generated Resolvers. Reads run in tenantRead (one shared transaction per turn of a request), writes in
 * idempotentMutation; both go through Row-Level Security, so another tenant's rows are simply not there.
 * Writes also re-check the caller's membership and role in the database (a token's role claim may be up to
 * 15 minutes old).
 */
import {
  AppError,
  badInput,
  DateTimeScalar,
  idempotentMutation,
  loaderFor,
  notFound,
  pageRequest,
  requireAuth,
  toConnection,
  tenantRead,
  type AuthContext,
  type Connection,
  type PageArgs,
  type SubgraphContext,
} from '@agentgraph/runtime';
import { capabilitiesOf } from './capabilities.js';
import type { Resolvers } from './generated/resolvers.js';
import {
  isUuid,
  parseInput,
  RegisterDeviceInput,
  requireRole,
  UpdateProfileInput,
  userIdOf,
} from './input.js';
import type { DeviceModel, TenantModel, UserModel } from './models.js';
import * as store from './store.js';

const DEFAULT_PAGE_SIZE = 20;

/** Keyset page over (created_at, id); the scope binds cursors to the list, tenant and parent. */
async function timePage<T>(
  ctx: SubgraphContext,
  scope: string,
  args: PageArgs,
  fetch: (limit: number, after: store.TimeKey | null) => Promise<store.Keyed<T>[]>,
): Promise<Connection<T>> {
  const req = pageRequest(ctx.cursors, scope, args, {
    maxPageSize: ctx.config.limits.maxPageSize,
    defaultPageSize: DEFAULT_PAGE_SIZE,
  });
  let after: store.TimeKey | null = null;
  if (req.from) {
    const [time, id] = req.from;
    if (req.from.length !== 2 || typeof time !== 'string' || !isUuid(id)) {
      throw badInput('The cursor in "after" is not valid for this list. Start again without "after".', {
        argument: 'after',
      });
    }
    after = [time, id];
  }
  const rows = await fetch(req.limit + 1, after);
  const conn = toConnection(ctx.cursors, scope, req, rows, (r) => r.key);
  return { edges: conn.edges.map((e) => ({ cursor: e.cursor, node: e.node.node })), pageInfo: conn.pageInfo };
}

/** A Tenant parent is only ever the caller's own (viewer or a checked reference); refuse anything else. */
function ownTenant(auth: AuthContext, tenant: TenantModel): string {
  if (tenant.id !== auth.tenantId) throw notFound('The tenant');
  return tenant.id;
}

/** By id within the caller's tenant, batched per request (one query for all of `_entities` or a page). */
function deviceById(ctx: SubgraphContext, id: string): Promise<DeviceModel | null> {
  requireAuth(ctx.auth);
  if (!isUuid(id)) return Promise.resolve(null);
  return loaderFor(ctx, 'identity.deviceById', (ids: readonly string[]) =>
    tenantRead(ctx, (tx) => store.findDevices(tx, ids)),
  ).load(id.toLowerCase());
}

/** Users the caller may see (members of their tenant, and themself), batched per request. */
function userById(ctx: SubgraphContext, id: string): Promise<UserModel | null> {
  requireAuth(ctx.auth);
  if (!isUuid(id)) return Promise.resolve(null);
  return loaderFor(ctx, 'identity.userById', (ids: readonly string[]) =>
    tenantRead(ctx, (tx) => store.findUsers(tx, ids)),
  ).load(id.toLowerCase());
}

export const resolvers: Resolvers = {
  DateTime: DateTimeScalar,

  Query: {
    capabilities: (_parent, _args, ctx) => capabilitiesOf(ctx.config),
    viewer: async (_parent, _args, ctx) => {
      const auth = requireAuth(ctx.auth);
      const userId = userIdOf(auth);
      const viewer = await tenantRead(ctx, (tx) => store.viewer(tx, userId));
      if (!viewer) {
        throw new AppError(
          'FORBIDDEN',
          'You are no longer a member of the tenant your token is for. Sign in again to get a token for a tenant you belong to.',
        );
      }
      // The role the caller acts with: a down-scoped token never reports more than it grants.
      return { ...viewer, role: requireRole(auth, viewer.role, 'VIEWER', 'read') };
    },
    device: (_parent, { id }, ctx) => deviceById(ctx, id),
  },

  Mutation: {
    registerDevice: (_parent, args, ctx) => {
      const auth = requireAuth(ctx.auth);
      const userId = userIdOf(auth);
      const input = parseInput(RegisterDeviceInput, args.input, 'input');
      return idempotentMutation(ctx, 'Mutation.registerDevice', args, async (tx) => {
        requireRole(auth, await store.roleOf(tx, userId), 'OPERATOR', 'register devices');
        return { device: await store.insertDevice(tx, auth.tenantId, userId, input) };
      });
    },
    updateProfile: (_parent, args, ctx) => {
      const auth = requireAuth(ctx.auth);
      const userId = userIdOf(auth);
      const input = parseInput(UpdateProfileInput, args.input, 'input');
      return idempotentMutation(ctx, 'Mutation.updateProfile', args, async (tx) => {
        requireRole(auth, await store.roleOf(tx, userId), 'VIEWER', 'update your profile');
        const user = await store.updateDisplayName(tx, userId, input.displayName);
        if (!user) throw notFound('Your user');
        return { user };
      });
    },
  },

  Tenant: {
    __resolveReference: async (ref, ctx) => {
      const auth = requireAuth(ctx.auth);
      if (!isUuid(ref.id) || ref.id.toLowerCase() !== auth.tenantId.toLowerCase()) return null;
      return tenantRead(ctx, (tx) => store.findTenant(tx, auth.tenantId));
    },
    members: (tenant, args, ctx) => {
      const auth = requireAuth(ctx.auth);
      const tenantId = ownTenant(auth, tenant);
      return timePage(ctx, `Tenant.members:${tenantId}:${tenantId}`, args, (limit, after) =>
        tenantRead(ctx, (tx) => store.listMembers(tx, tenantId, limit, after)),
      );
    },
    devices: (tenant, args, ctx) => {
      const auth = requireAuth(ctx.auth);
      const tenantId = ownTenant(auth, tenant);
      return timePage(ctx, `Tenant.devices:${tenantId}:${tenantId}`, args, (limit, after) =>
        tenantRead(ctx, (tx) => store.listDevices(tx, tenantId, limit, after)),
      );
    },
  },

  User: {
    __resolveReference: (ref, ctx) => userById(ctx, ref.id),
  },

  Device: {
    __resolveReference: (ref, ctx) => deviceById(ctx, ref.id),
    owner: async (device, _args, ctx) => {
      const owner = await userById(ctx, device.ownerId);
      // The owner is a member of the device's tenant (foreign key), so RLS always shows them.
      if (!owner) throw notFound("The device's owner");
      return owner;
    },
  },
};

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
  roleCovers,
  revokeTokens,
  subjectKey,
  toConnection,
  tenantRead,
  withTenant,
  type AuthContext,
  type Connection,
  type PageArgs,
  type Queryable,
  type Revocation,
  type SubgraphContext,
} from '@agentgraph/runtime';
import { z } from 'zod';
import { capabilitiesOf } from './capabilities.js';
import type { MutationResolvers, Resolvers } from './generated/resolvers.js';
import {
  AddMemberInput,
  DeviceName,
  isUuid,
  parseInput,
  RegisterDeviceInput,
  requireAtLeast,
  requireDeviceManager,
  requireRole,
  RoleInput,
  UpdateProfileInput,
  UserCode,
  userIdOf,
} from './input.js';
import type { DeviceModel, TenantModel, UserModel } from './models.js';
import {
  approveDeviceAuthorization,
  denyDeviceAuthorization,
  findDeviceAuthorization,
  withUserCodeGuard,
} from './oauth/device-approval.js';
import { oauthOptionsFrom } from './oauth/options.js';
import { oauthServiceFor, type OAuthService } from './oauth/service.js';
import * as store from './store.js';

const DEFAULT_PAGE_SIZE = 20;

/**
 * How long a revocation written here refuses tokens: past the 15-minute lifetime of every access token issued
 * before it, with room for clock skew.
 */
export const REVOCATION_TTL_MS = 20 * 60 * 1000;

/** Revocations of tokens issued up to the transaction's time `now`. */
function revocations(now: Date, entries: Omit<Revocation, 'expiresAt'>[]): Revocation[] {
  const expiresAt = new Date(now.getTime() + REVOCATION_TTL_MS);
  return entries.map((e) => ({ ...e, expiresAt }));
}

/** An id argument: a malformed one cannot name anything visible, so it is NOT_FOUND like another tenant's. */
function idOf(value: string, what: string): string {
  if (!isUuid(value)) throw notFound(what);
  return value.toLowerCase();
}

const MEMBER_ARG = 'The member';
const DEVICE_ARG = 'The device';

/** The process's OAuth authority (the same instance identity's HTTP routes use). */
function oauthOf(ctx: SubgraphContext): OAuthService {
  return oauthServiceFor({ config: ctx.config, db: ctx.db, log: ctx.log }, oauthOptionsFrom(ctx.config));
}

/** A tenant keeps at least one OWNER: refuse to demote or remove the last one. */
async function keepAnOwner(tx: Queryable, action: string): Promise<void> {
  if ((await store.ownerCount(tx)) > 1) return;
  throw new AppError(
    'FORBIDDEN',
    `Cannot ${action}: this member is the tenant's only OWNER, and a tenant must keep one. Make another member OWNER first.`,
  );
}

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

/**
 * Identity's mutations change accounts, devices and members. A token obtained by token exchange (the Python
 * sidecar's, carrying `act`) may read through identity but change nothing here.
 */
function refuseExchangedTokens(mutations: MutationResolvers): MutationResolvers {
  const guarded: Record<string, unknown> = {};
  for (const [name, resolve] of Object.entries(mutations)) {
    guarded[name] = (parent: unknown, args: unknown, ctx: SubgraphContext, info: unknown) => {
      if (ctx.auth?.actor !== undefined) {
        throw new AppError(
          'FORBIDDEN',
          `A token obtained by token exchange (e.g. the Python sidecar's) cannot call ${name}: identity's mutations need the user's or the desktop host's own token.`,
        );
      }
      return (resolve as (...a: unknown[]) => unknown)(parent, args, ctx, info);
    };
  }
  return guarded as MutationResolvers;
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
    tenant: async (_parent, _args, ctx) => {
      const auth = requireAuth(ctx.auth);
      const tenant = await tenantRead(ctx, (tx) => store.findTenant(tx, auth.tenantId));
      if (!tenant) throw notFound('The tenant of your token');
      return tenant;
    },
    deviceAuthorization: (_parent, args, ctx) => {
      const auth = requireAuth(ctx.auth);
      const userId = userIdOf(auth);
      const userCode = parseInput(UserCode, args.userCode, 'userCode');
      const oauth = oauthOf(ctx);
      // Its own transaction, not a shared read, inside the guard that counts wrong codes as failed guesses.
      return withUserCodeGuard(oauth, { auth, address: ctx.origin.ip }, () =>
        withTenant(ctx.db, auth, async (tx) => {
          requireRole(auth, await store.roleOf(tx, userId), 'VIEWER', 'look up device requests');
          return findDeviceAuthorization(oauth, tx, auth, userCode);
        }),
      );
    },
  },

  Mutation: refuseExchangedTokens({
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

    approveDeviceAuthorization: (_parent, args, ctx) => {
      const auth = requireAuth(ctx.auth);
      const userId = userIdOf(auth);
      const userCode = parseInput(UserCode, args.userCode, 'userCode');
      const oauth = oauthOf(ctx);
      return withUserCodeGuard(oauth, { auth, address: ctx.origin.ip }, () =>
        idempotentMutation(ctx, 'Mutation.approveDeviceAuthorization', args, async (tx) => {
          requireRole(auth, await store.roleOf(tx, userId), 'OPERATOR', 'approve device requests');
          const { deviceId } = await approveDeviceAuthorization(oauth, tx, auth, userCode);
          const device = (await store.findDevices(tx, [deviceId])).get(deviceId);
          if (!device)
            throw new Error(`the approved device ${deviceId} is not visible in its own transaction`);
          return { device };
        }),
      );
    },
    denyDeviceAuthorization: (_parent, args, ctx) => {
      const auth = requireAuth(ctx.auth);
      const userId = userIdOf(auth);
      const userCode = parseInput(UserCode, args.userCode, 'userCode');
      const oauth = oauthOf(ctx);
      return withUserCodeGuard(oauth, { auth, address: ctx.origin.ip }, () =>
        idempotentMutation(ctx, 'Mutation.denyDeviceAuthorization', args, async (tx) => {
          requireRole(auth, await store.roleOf(tx, userId), 'OPERATOR', 'deny device requests');
          await denyDeviceAuthorization(oauth, tx, auth, userCode);
          return { denied: true };
        }),
      );
    },
    revokeDevice: (_parent, args, ctx) => {
      const auth = requireAuth(ctx.auth);
      const userId = userIdOf(auth);
      const id = idOf(args.id, DEVICE_ARG);
      return idempotentMutation(ctx, 'Mutation.revokeDevice', args, async (tx) => {
        const role = requireRole(auth, await store.roleOf(tx, userId), 'VIEWER', 'revoke devices');
        const current = await store.lockDevice(tx, id);
        if (!current) throw notFound(DEVICE_ARG);
        requireDeviceManager(role, userId, current, 'revoke this device');
        if (current.status === 'REVOKED') return { device: current };
        const device = await store.markDeviceRevoked(tx, id);
        await store.deleteDeviceGrantState(tx, id);
        await revokeTokens(tx, revocations(await store.transactionTime(tx), [{ kind: 'device', value: id }]));
        return { device };
      });
    },
    renameDevice: (_parent, args, ctx) => {
      const auth = requireAuth(ctx.auth);
      const userId = userIdOf(auth);
      const id = idOf(args.id, DEVICE_ARG);
      const name = parseInput(DeviceName, args.name, 'name');
      return idempotentMutation(ctx, 'Mutation.renameDevice', args, async (tx) => {
        const role = requireRole(auth, await store.roleOf(tx, userId), 'VIEWER', 'rename devices');
        const current = await store.lockDevice(tx, id);
        if (!current) throw notFound(DEVICE_ARG);
        requireDeviceManager(role, userId, current, 'rename this device');
        return { device: await store.renameDevice(tx, id, name) };
      });
    },
    setRemoteActionsEnabled: (_parent, args, ctx) => {
      const auth = requireAuth(ctx.auth);
      const userId = userIdOf(auth);
      const enabled = parseInput(z.boolean(), args.enabled, 'enabled');
      const deviceId = auth.deviceId;
      if (deviceId === undefined || !isUuid(deviceId)) {
        throw new AppError(
          'FORBIDDEN',
          "Only the device itself, on its local user's decision, can change this: call it with the device's own access token (the desktop app does when its user flips the switch), not a web user's.",
        );
      }
      if (auth.actor !== undefined) {
        // An exchanged token (e.g. the Python sidecar's) carries the device id but is not the device's own decision.
        throw new AppError(
          'FORBIDDEN',
          "A token obtained by token exchange cannot change remote actions; only the desktop host's own device token can.",
        );
      }
      return idempotentMutation(ctx, 'Mutation.setRemoteActionsEnabled', args, async (tx) => {
        requireRole(auth, await store.roleOf(tx, userId), 'VIEWER', 'change remote actions');
        const device = await store.lockDevice(tx, deviceId.toLowerCase());
        // A device token is issued to the device's owner; anything else is not this device's token.
        if (!device || device.ownerId !== userId) throw notFound('The device of this token');
        if (enabled && device.status !== 'ENROLLED') {
          throw new AppError(
            'FORBIDDEN',
            `This device is ${device.status}; only an ENROLLED device can allow remote actions. Enrol it again.`,
          );
        }
        return { device: await store.setRemoteActionsEnabled(tx, device.id, enabled) };
      });
    },
    addMember: (_parent, args, ctx) => {
      const auth = requireAuth(ctx.auth);
      const userId = userIdOf(auth);
      const input = parseInput(AddMemberInput, args.input, 'input');
      return idempotentMutation(ctx, 'Mutation.addMember', args, async (tx) => {
        await store.lockMemberships(tx, auth.tenantId);
        const role = requireRole(auth, await store.roleOf(tx, userId), 'ADMIN', 'add members');
        if (input.role === 'OWNER') requireAtLeast(role, 'OWNER', 'add an OWNER');
        const target = await store.userIdByEmail(tx, input.email);
        if (!target) {
          throw new AppError(
            'NOT_FOUND',
            'No user has this e-mail address. Users are created with the admin CLI (npm run admin -- create-user) or by signing up; add them to the tenant after that.',
            { field: 'input.email' },
          );
        }
        if (await store.findMembership(tx, target)) {
          throw badInput(
            'This user is already a member of the tenant. Use changeMemberRole to change their role.',
            {
              field: 'input.email',
            },
          );
        }
        return { membership: await store.insertMembership(tx, auth.tenantId, target, input.role) };
      });
    },
    changeMemberRole: (_parent, args, ctx) => {
      const auth = requireAuth(ctx.auth);
      const userId = userIdOf(auth);
      const target = idOf(args.userId, MEMBER_ARG);
      const newRole = parseInput(RoleInput, args.role, 'role');
      return idempotentMutation(ctx, 'Mutation.changeMemberRole', args, async (tx) => {
        await store.lockMemberships(tx, auth.tenantId);
        const role = requireRole(auth, await store.roleOf(tx, userId), 'ADMIN', 'change member roles');
        const member = await store.findMembership(tx, target);
        if (!member) throw notFound(MEMBER_ARG);
        if (member.role === newRole) return { membership: member };
        if (member.role === 'OWNER' || newRole === 'OWNER') {
          requireAtLeast(role, 'OWNER', 'make or unmake an OWNER');
        }
        if (member.role === 'OWNER') await keepAnOwner(tx, 'change the role of this OWNER');
        const updated = await store.updateMemberRole(tx, target, newRole);
        if (!roleCovers(newRole, member.role)) {
          // A demotion (or a move sideways, OPERATOR ↔ PUBLISHER): the member's live tokens carry the old role; refuse them so their next token (a refresh
          // re-reads the role) is the only one in use. Tokens issued after this commit pass.
          await revokeTokens(
            tx,
            revocations(await store.transactionTime(tx), [
              { kind: 'subject', value: subjectKey(auth.tenantId, target) },
            ]),
          );
        }
        return { membership: updated };
      });
    },
    removeMember: (_parent, args, ctx) => {
      const auth = requireAuth(ctx.auth);
      const userId = userIdOf(auth);
      const target = idOf(args.userId, MEMBER_ARG);
      return idempotentMutation(ctx, 'Mutation.removeMember', args, async (tx) => {
        await store.lockMemberships(tx, auth.tenantId);
        const role = requireRole(auth, await store.roleOf(tx, userId), 'ADMIN', 'remove members');
        const member = await store.findMembership(tx, target);
        if (!member) throw notFound(MEMBER_ARG);
        if (target === userId) {
          throw new AppError(
            'FORBIDDEN',
            'You cannot remove yourself from the tenant. Ask another ADMIN or OWNER to remove you.',
          );
        }
        if (member.role === 'OWNER') {
          requireAtLeast(role, 'OWNER', 'remove an OWNER');
          await keepAnOwner(tx, 'remove this OWNER');
        }
        // Order matters: the grants' state goes first (no refresh, no new token), then the devices (a device's
        // owner must be a member), then the membership (its grants cascade), and the live access tokens are refused.
        await store.deleteMemberGrantState(tx, target);
        const devices = await store.revokeAndHandOverDevices(tx, target, userId);
        await store.deleteMembership(tx, target);
        await revokeTokens(
          tx,
          revocations(await store.transactionTime(tx), [
            { kind: 'subject', value: subjectKey(auth.tenantId, target) },
            ...devices.map((id) => ({ kind: 'device' as const, value: id })),
          ]),
        );
        return { userId: target };
      });
    },
  }),

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
    // The key speaks for the device only while it is enrolled.
    publicJwk: (device) => (device.status === 'ENROLLED' ? (device.publicJwk ?? null) : null),
    owner: async (device, _args, ctx) => {
      const owner = await userById(ctx, device.ownerId);
      // The owner is a member of the device's tenant (foreign key), so RLS always shows them.
      if (!owner) throw notFound("The device's owner");
      return owner;
    },
  },
};

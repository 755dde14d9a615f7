/**
 * Resolvers of schemas/coordination.graphql, typed by the generated resolver types (src/generated/resolvers.ts).
 * Reads run in tenantRead (one shared transaction per turn of a request), writes in idempotentMutation; RLS scopes both to the caller's tenant.
 */
import {
  DateTimeScalar,
  badInput,
  idempotentMutation,
  loaderFor,
  notFound,
  pageRequest,
  requireAuth,
  toConnection,
  tenantRead,
  type SortKey,
  type SubgraphContext,
} from '@agentgraph/runtime';
import type { Resolvers } from './generated/resolvers.js';
import { AfterSeq, Id, MessageBody, RoomName, parseArg, requireWriter } from './input.js';
import { userRef, type MessageModel, type RoomModel } from './models.js';
import {
  appendMessage,
  insertRoom,
  lastSeqOf,
  messageById,
  messagesAfterForRooms,
  messagesBefore,
  roomsById,
  roomsPage,
} from './store.js';
import { roomMessageStream } from './stream.js';
import { agentMessageResolvers as agentMessages } from './messages/resolvers.js';
import { takeRateToken } from './limits/rate-limiter.js';
import { seqKey } from './seq-cursor.js';

const DEFAULT_PAGE_SIZE = 20;

/** Rooms asked for during one request (Message.room of many messages), loaded once per id. */
const roomCache = new WeakMap<SubgraphContext, Map<string, Promise<RoomModel | null>>>();

function loadRoom(ctx: SubgraphContext, id: string): Promise<RoomModel | null> {
  requireAuth(ctx.auth);
  let cache = roomCache.get(ctx);
  if (!cache) roomCache.set(ctx, (cache = new Map()));
  let hit = cache.get(id);
  if (!hit) {
    hit = tenantRead(ctx, (tx) => roomsById(tx, [id])).then((m) => m.get(id) ?? null);
    cache.set(id, hit);
  }
  return hit;
}

/** A reference id that is not a UUID cannot exist: answer null rather than a database error. */
function isId(id: unknown): id is string {
  return Id.safeParse(id).success;
}

function roomKey(key: SortKey): [string, string] {
  if (key.length !== 2 || typeof key[0] !== 'string' || typeof key[1] !== 'string') {
    throw badInput('The cursor in "after" is not valid for this list. Start again without "after".', {
      argument: 'after',
    });
  }
  return [key[0], key[1]];
}

export const resolvers: Resolvers = {
  DateTime: DateTimeScalar,
  AgentMessage: agentMessages.AgentMessage,
  AgentAddress: agentMessages.AgentAddress,

  Query: {
    ...agentMessages.Query,
    async room(_parent, args, ctx) {
      requireAuth(ctx.auth);
      const id = parseArg(Id, args.id, 'id');
      return tenantRead(ctx, async (tx) => (await roomsById(tx, [id])).get(id) ?? null);
    },

    async rooms(_parent, args, ctx) {
      const auth = requireAuth(ctx.auth);
      const scope = `Query.rooms:${auth.tenantId}:`;
      const req = pageRequest(ctx.cursors, scope, args, {
        maxPageSize: ctx.config.limits.maxPageSize,
        defaultPageSize: DEFAULT_PAGE_SIZE,
      });
      const from = req.from ? roomKey(req.from) : null;
      const rows = await tenantRead(ctx, (tx) => roomsPage(tx, from, req.limit));
      const conn = toConnection(ctx.cursors, scope, req, rows, (r) => r.key);
      return {
        ...conn,
        edges: conn.edges.map(({ cursor, node: { key: _key, ...room } }) => ({ cursor, node: room })),
      };
    },
  },

  Mutation: {
    ...agentMessages.Mutation,
    async createRoom(_parent, args, ctx) {
      const auth = requireAuth(ctx.auth);
      requireWriter(auth, 'create rooms');
      const name = parseArg(RoomName, args.input.name, 'input.name');
      return idempotentMutation(ctx, 'Mutation.createRoom', { ...args, input: { name } }, async (tx, a) => ({
        room: await insertRoom(tx, a.tenantId, a.principalId, name),
      }));
    },

    async postMessage(_parent, args, ctx) {
      const auth = requireAuth(ctx.auth);
      requireWriter(auth, 'post messages');
      const roomId = parseArg(Id, args.roomId, 'roomId');
      const body = parseArg(MessageBody, args.input.body, 'input.body');
      await takeRateToken(ctx.db, ctx.config, auth, 'post', new Date(), ctx.metrics);
      return idempotentMutation(
        ctx,
        'Mutation.postMessage',
        { ...args, roomId, input: { body } },
        async (tx, a) => {
          const message = await appendMessage(tx, a.tenantId, roomId, a.principalId, body);
          if (!message) throw notFound(`Room ${roomId}`);
          return { message };
        },
      );
    },
  },

  Subscription: {
    ...agentMessages.Subscription,
    roomMessages: {
      // Checks run here, before the stream starts, so a refusal reaches the client as a coded GraphQL error.
      async subscribe(_parent, args, ctx) {
        const auth = requireAuth(ctx.auth);
        const roomId = parseArg(Id, args.roomId, 'roomId');
        const requested = args.afterSeq == null ? null : parseArg(AfterSeq, args.afterSeq, 'afterSeq');
        const lastSeq = await tenantRead(ctx, (tx) => lastSeqOf(tx, roomId));
        if (lastSeq === null) throw notFound(`Room ${roomId}`);
        if (requested !== null && requested > lastSeq) {
          throw badInput(
            `"afterSeq" is beyond the end of the room's log (last seq ${lastSeq}). Resume from the last seq you handled, or omit it for live messages only.`,
            { argument: 'afterSeq', lastSeq },
          );
        }
        return roomMessageStream({
          db: ctx.db,
          auth,
          log: ctx.log,
          signal: ctx.signal,
          roomId,
          afterSeq: requested ?? lastSeq,
        });
      },
      resolve: (message: MessageModel) => message,
    },
  },

  Room: {
    async __resolveReference(ref, ctx) {
      if (!ctx.auth || !isId(ref.id)) return null;
      return loadRoom(ctx, ref.id);
    },
    createdBy: (room) => userRef(room.createdBy),

    async messages(room, args, ctx) {
      const auth = requireAuth(ctx.auth);
      const scope = `Room.messages:${auth.tenantId}:${room.id}`;
      const req = pageRequest(ctx.cursors, scope, args, {
        maxPageSize: ctx.config.limits.maxPageSize,
        defaultPageSize: DEFAULT_PAGE_SIZE,
        allowBackward: true,
      });
      const argument = req.direction === 'forward' ? 'after' : 'before';
      const from = req.from ? seqKey(req.from, argument) : null;
      // Forward pages of sibling rooms asking for the same page are read together (one statement per request).
      const rows =
        req.direction === 'forward'
          ? ((await loaderFor(ctx, `Room.messages:${from ?? 0}:${req.limit + 1}`, (ids: readonly string[]) =>
              tenantRead(ctx, (tx) => messagesAfterForRooms(tx, ids, from ?? 0, req.limit + 1)),
            ).load(room.id)) ?? [])
          : await tenantRead(ctx, (tx) => messagesBefore(tx, room.id, from, req.limit + 1));
      return toConnection(ctx.cursors, scope, req, rows, (m) => [m.seq]);
    },
  },

  Message: {
    async __resolveReference(ref, ctx) {
      if (!ctx.auth || !isId(ref.id)) return null;
      return tenantRead(ctx, (tx) => messageById(tx, ref.id));
    },
    async room(message, _args, ctx) {
      const room = await loadRoom(ctx, message.roomId);
      if (!room) throw notFound(`Room ${message.roomId}`);
      return room;
    },
    author: (message) => userRef(message.author),
  },
};

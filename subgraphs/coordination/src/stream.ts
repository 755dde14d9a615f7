/**
 * The live message stream of a room (Subscription.roomMessages): the backlog after a resume point, then live
 * messages, in sequence order, with no gap and no duplicate (seq-stream.ts says why). postMessage numbers a
 * message under the room's row lock and inserts it in the same transaction, so a room's messages commit in
 * sequence order, which is the promise sequencedStream needs. A room's rows depend on the tenant alone (RLS on
 * `tenant_id`, migrations/001_coordination.sql), not on who asks, so the streams of one room share their reads
 * (`shareKey`): one read per notification for all of them, not one per stream, and their messages are marked
 * `shareEvents`, so the subgraph server executes a message once per subscription document, not once per stream.
 */
import { shareEvents, type AuthContext, type Database, type Logger } from '@agentgraph/runtime';
import type { MessageModel } from './models.js';
import type { ChannelRouter } from './notification-hub.js';
import { sequencedStream } from './seq-stream.js';
import { MESSAGES_CHANNEL, messagesAfter } from './store.js';

export interface RoomStreamOptions {
  db: Database;
  auth: AuthContext;
  log: Logger;
  signal: AbortSignal;
  roomId: string;
  /** Yield messages with seq greater than this (already checked to be within the log). */
  afterSeq: number;
  pageSize?: number;
}

/** Room notifications ({tenantId, roomId, seq}) go to the streams of that room. */
const roomRouter: ChannelRouter = (n) => [`${String(n['tenantId'])}:${String(n['roomId'])}`];

export function roomMessageStream(opts: RoomStreamOptions): AsyncGenerator<MessageModel, void, undefined> {
  const { auth, roomId } = opts;
  return sequencedStream<MessageModel>({
    ...opts,
    channel: MESSAGES_CHANNEL,
    router: roomRouter,
    routeKey: `${auth.tenantId}:${roomId}`,
    shareKey: `${auth.tenantId}:${roomId}`,
    // The same rows go to every stream of the room: the server executes each message once per document.
    read: async (tx, after, limit) => shareEvents(await messagesAfter(tx, roomId, after, limit)),
    seqOf: (m) => m.seq,
    logFields: { roomId },
  });
}

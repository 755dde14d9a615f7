/**
 * The live message stream of a room (Subscription.roomMessages): the backlog after a resume point, then live
 * messages, in sequence order, with no gap and no duplicate, fanned out through PostgreSQL NOTIFY (in-process
 * for PGlite, across processes for a PostgreSQL server).
 *
 * Why it cannot gap, duplicate or reorder:
 *  - postMessage takes the room's row lock to number a message (last_seq + 1) and inserts it in the same
 *    transaction, so a room's messages commit in sequence order: any snapshot that holds seq n holds 1..n-1.
 *  - The listener is registered before the backlog is read, so a message committed after the read raises a
 *    notification we are already listening for; one committed before it is in the read.
 *  - A notification only says "something after seq X exists in room R". The stream never trusts its payload
 *    for content: it marks the room dirty and reads `seq > lastYielded` in pages. A missed or coalesced
 *    notification therefore loses nothing (the next read catches up), a lost listener connection triggers the
 *    same re-read (onReconnect), and reading by `seq > lastYielded` cannot yield a seq twice.
 *  - Notifications wait in a single dirty flag, not a queue: memory per subscriber is constant however fast
 *    the room is written.
 * The stream ends when ctx.signal aborts (client gone, server shutting down) or the consumer returns, and
 * always removes its listener.
 */
import { withTenant, type AuthContext, type Database, type Logger } from '@agentgraph/runtime';
import type { MessageModel } from './models.js';
import { MESSAGES_CHANNEL, messagesAfter, type MessageNotification } from './store.js';

/** Rows read per round trip while catching up. */
export const STREAM_PAGE_SIZE = 100;

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

function parseNotification(payload: string): MessageNotification | null {
  try {
    const n = JSON.parse(payload) as Partial<MessageNotification>;
    return typeof n.tenantId === 'string' && typeof n.roomId === 'string' ? (n as MessageNotification) : null;
  } catch {
    return null;
  }
}

export async function* roomMessageStream(
  opts: RoomStreamOptions,
): AsyncGenerator<MessageModel, void, undefined> {
  const { db, auth, log, signal, roomId } = opts;
  const pageSize = opts.pageSize ?? STREAM_PAGE_SIZE;
  if (signal.aborted) return;

  // One-slot wake-up: `dirty` remembers that something may have arrived while we were busy reading or yielding.
  let dirty = true;
  let wake: (() => void) | null = null;
  const poke = () => {
    dirty = true;
    const w = wake;
    wake = null;
    w?.();
  };
  const onNotify = (payload: string) => {
    const n = parseNotification(payload);
    if (n && n.tenantId === auth.tenantId && n.roomId === roomId) poke();
  };
  const onReconnect = () => {
    log.info('room stream listener reconnected; re-reading', { roomId });
    poke();
  };

  signal.addEventListener('abort', poke);
  // Listen first: from here on no commit can slip between the backlog read and the live phase.
  let unlisten: (() => Promise<void>) | null = null;
  try {
    unlisten = await db.listen(MESSAGES_CHANNEL, onNotify, onReconnect);
    let last = opts.afterSeq;
    while (!signal.aborted) {
      if (!dirty) {
        await new Promise<void>((resolve) => (wake = resolve));
        continue;
      }
      dirty = false;
      // Catch up: read everything after the last yielded seq, page by page.
      for (;;) {
        const from = last;
        const page = await withTenant(db, auth, (tx) => messagesAfter(tx, roomId, from, pageSize));
        for (const message of page) {
          if (signal.aborted) return;
          if (message.seq !== last + 1) {
            // Cannot happen while seqs commit in order (see above); never skip silently if it ever does.
            log.error('room stream found a gap in the log; re-reading', {
              roomId,
              expected: last + 1,
              got: message.seq,
            });
            break;
          }
          last = message.seq;
          yield message;
        }
        if (page.length < pageSize || last !== page.at(-1)?.seq) break;
      }
    }
  } finally {
    signal.removeEventListener('abort', poke);
    wake = null;
    if (unlisten) {
      await unlisten().catch((err: unknown) =>
        log.warn('room stream could not unlisten', { roomId, error: err }),
      );
    }
  }
}

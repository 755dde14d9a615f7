/**
 * The SQL of the coordination subgraph. Every function takes a tenant-scoped transaction (`withTenant` or the one
 * `idempotentMutation` opens), so Row-Level Security limits it to the caller's tenant whatever the arguments say.
 */
import type { Queryable } from '@agentgraph/runtime';
import {
  MESSAGE_COLUMNS,
  ROOM_COLUMNS,
  toMessage,
  toRoom,
  type MessageModel,
  type MessageRow,
  type RoomModel,
  type RoomRow,
} from './models.js';

/** NOTIFY channel of new messages. The payload is {tenantId, roomId, seq} only; listeners read the row. */
export const MESSAGES_CHANNEL = 'coordination_messages';

export interface MessageNotification {
  tenantId: string;
  roomId: string;
  seq: number;
}

export async function insertRoom(
  tx: Queryable,
  tenantId: string,
  createdBy: string,
  name: string,
): Promise<RoomModel> {
  const r = await tx.query<RoomRow>(
    `INSERT INTO coordination.rooms (tenant_id, name, created_by) VALUES ($1, $2, $3) RETURNING ${ROOM_COLUMNS}`,
    [tenantId, name, createdBy],
  );
  return toRoom(r.rows[0]!);
}

export async function roomsById(tx: Queryable, ids: readonly string[]): Promise<Map<string, RoomModel>> {
  if (ids.length === 0) return new Map();
  const r = await tx.query<RoomRow>(
    `SELECT ${ROOM_COLUMNS} FROM coordination.rooms WHERE id = ANY($1::uuid[])`,
    [ids],
  );
  return new Map(r.rows.map((row) => [row.id, toRoom(row)]));
}

/** The room's newest sequence number, or null when the room is not visible in this tenant. */
export async function lastSeqOf(tx: Queryable, roomId: string): Promise<number | null> {
  const r = await tx.query<{ last_seq: number }>('SELECT last_seq FROM coordination.rooms WHERE id = $1', [
    roomId,
  ]);
  return r.rows[0] ? Number(r.rows[0].last_seq) : null;
}

/**
 * A page of rooms, newest first, after the keyset position `from` = [created_at (full precision), id].
 * Returns `limit` rows plus one when there are more.
 */
export async function roomsPage(
  tx: Queryable,
  from: readonly [string, string] | null,
  limit: number,
): Promise<(RoomModel & { key: [string, string] })[]> {
  const r = from
    ? await tx.query<RoomRow>(
        `SELECT ${ROOM_COLUMNS} FROM coordination.rooms
          WHERE (created_at, id) < ($1::timestamptz, $2::uuid)
          ORDER BY created_at DESC, id DESC LIMIT $3`,
        [from[0], from[1], limit + 1],
      )
    : await tx.query<RoomRow>(
        `SELECT ${ROOM_COLUMNS} FROM coordination.rooms ORDER BY created_at DESC, id DESC LIMIT $1`,
        [limit + 1],
      );
  return r.rows.map((row) => ({ ...toRoom(row), key: [row.created_key, row.id] }));
}

/**
 * Appends a message in one statement: takes the room's row lock by incrementing last_seq (so concurrent writers to
 * one room queue here and get consecutive numbers), inserts the row with that seq, and queues the notification
 * ({tenantId, roomId, seq}), which PostgreSQL delivers only when this transaction commits. Returns null when the
 * room is not visible in this tenant (nothing is written then).
 */
export async function appendMessage(
  tx: Queryable,
  tenantId: string,
  roomId: string,
  author: string,
  body: string,
): Promise<MessageModel | null> {
  const r = await tx.query<MessageRow>(
    `WITH s AS (
       UPDATE coordination.rooms SET last_seq = last_seq + 1 WHERE id = $2 RETURNING id, last_seq
     ),
     m AS (
       INSERT INTO coordination.messages (tenant_id, room_id, seq, body, author)
       SELECT $1::uuid, s.id, s.last_seq, $3::text, $4::text FROM s RETURNING ${MESSAGE_COLUMNS}
     )
     SELECT ${MESSAGE_COLUMNS},
            pg_notify($5, json_build_object('tenantId', $1::uuid, 'roomId', m.room_id, 'seq', m.seq)::text)::text
              AS notified
       FROM m`,
    [tenantId, roomId, body, author, MESSAGES_CHANNEL],
  );
  return r.rows[0] ? toMessage(r.rows[0]) : null;
}

export async function messageById(tx: Queryable, id: string): Promise<MessageModel | null> {
  const r = await tx.query<MessageRow>(`SELECT ${MESSAGE_COLUMNS} FROM coordination.messages WHERE id = $1`, [
    id,
  ]);
  return r.rows[0] ? toMessage(r.rows[0]) : null;
}

/** Messages with seq > afterSeq, oldest first, at most `limit`. */
export async function messagesAfter(
  tx: Queryable,
  roomId: string,
  afterSeq: number,
  limit: number,
): Promise<MessageModel[]> {
  const r = await tx.query<MessageRow>(
    `SELECT ${MESSAGE_COLUMNS} FROM coordination.messages
      WHERE room_id = $1 AND seq > $2 ORDER BY seq ASC LIMIT $3`,
    [roomId, afterSeq, limit],
  );
  return r.rows.map(toMessage);
}

/**
 * The first page after `afterSeq` of several rooms in one statement (a LATERAL join per room), so a query that
 * lists rooms with their messages costs one read, not one per room. Every requested room has an entry.
 */
export async function messagesAfterForRooms(
  tx: Queryable,
  roomIds: readonly string[],
  afterSeq: number,
  limit: number,
): Promise<Map<string, MessageModel[]>> {
  const r = await tx.query<MessageRow>(
    `SELECT m.* FROM unnest($1::uuid[]) AS r(id)
       CROSS JOIN LATERAL (
         SELECT ${MESSAGE_COLUMNS} FROM coordination.messages
          WHERE room_id = r.id AND seq > $2 ORDER BY seq ASC LIMIT $3) m`,
    [roomIds, afterSeq, limit],
  );
  const byRoom = new Map<string, MessageModel[]>(roomIds.map((id) => [id, []]));
  for (const row of r.rows) {
    const m = toMessage(row);
    byRoom.get(m.roomId)?.push(m);
  }
  return byRoom;
}

/** Messages with seq < beforeSeq (or the newest when null), newest first, at most `limit`. */
export async function messagesBefore(
  tx: Queryable,
  roomId: string,
  beforeSeq: number | null,
  limit: number,
): Promise<MessageModel[]> {
  const r =
    beforeSeq === null
      ? await tx.query<MessageRow>(
          `SELECT ${MESSAGE_COLUMNS} FROM coordination.messages WHERE room_id = $1 ORDER BY seq DESC LIMIT $2`,
          [roomId, limit],
        )
      : await tx.query<MessageRow>(
          `SELECT ${MESSAGE_COLUMNS} FROM coordination.messages
            WHERE room_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3`,
          [roomId, beforeSeq, limit],
        );
  return r.rows.map(toMessage);
}

/**
 * What the resolvers pass around (codegen mappers, see ../codegen.json) and how rows become them. Models are
 * plain JSON (dates as ISO strings) because mutation payloads are stored as the idempotent replay.
 */

export interface RoomModel {
  id: string;
  name: string;
  /** Principal id (token `sub`) of the creator; exposed as a User reference. */
  createdBy: string;
  createdAt: string;
}

export interface MessageModel {
  id: string;
  roomId: string;
  seq: number;
  body: string;
  /** Principal id (token `sub`) of the author; exposed as a User reference. */
  author: string;
  createdAt: string;
}

export interface RoomRow {
  id: string;
  name: string;
  created_by: string;
  created_at: Date | string;
  /** Full-precision created_at (microseconds), used as the keyset cursor. */
  created_key: string;
}

export interface MessageRow {
  id: string;
  room_id: string;
  seq: number;
  body: string;
  author: string;
  created_at: Date | string;
}

export const ROOM_COLUMNS = `id, name, created_by, created_at, to_json(created_at) #>> '{}' AS created_key`;
export const MESSAGE_COLUMNS = 'id, room_id, seq, body, author, created_at';

function iso(value: Date | string): string {
  return (value instanceof Date ? value : new Date(value)).toISOString();
}

export function toRoom(row: RoomRow): RoomModel {
  return { id: row.id, name: row.name, createdBy: row.created_by, createdAt: iso(row.created_at) };
}

export function toMessage(row: MessageRow): MessageModel {
  return {
    id: row.id,
    roomId: row.room_id,
    seq: Number(row.seq),
    body: row.body,
    author: row.author,
    createdAt: iso(row.created_at),
  };
}

export function userRef(id: string): { __typename: 'User'; id: string } {
  return { __typename: 'User', id };
}

/**
 * Rooms: the list with a create form (`/rooms`), or one room's log, live updates and post form
 * (`/rooms?room=<id>`). Parts live in pages/rooms/.
 */
import { useEffect, useRef } from 'preact/hooks';
import { useRoute } from '../router.js';
import { RoomList } from './rooms/room-list.js';
import { RoomView } from './rooms/room-view.js';

export function RoomsPage() {
  const { query } = useRoute();
  const roomId = query.get('room');
  const first = useRef(true);
  // Switching between the list and a room keeps the path: move focus to the new view's heading ourselves.
  useEffect(() => {
    if (first.current) first.current = false;
    else document.querySelector<HTMLElement>('main h1')?.focus();
  }, [roomId]);
  return roomId ? <RoomView key={roomId} roomId={roomId} /> : <RoomList />;
}

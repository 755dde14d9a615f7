/**
 * One room: its name, the message log (oldest first, newer pages on request), the live status, the post form, and
 * a quiet live region that announces new messages from others at most once per burst.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { RoomData } from '@agentgraph/sdk';
import { sdk } from '../../api.js';
import { ProblemNotice } from '../../ui/problem.js';
import { roleCovers, useViewer } from '../../ui/viewer.js';
import { useAuthorNames } from './author-names.js';
import { PostForm } from './post-form.js';
import { useRoomLog, type LiveState, type Message } from './use-room-log.js';
import { When } from '../../ui/when.js';

/** New messages arriving within this window are announced together ("3 new messages"). */
const ANNOUNCE_AFTER_MS = 1500;

function liveText(live: LiveState): string {
  switch (live.mode) {
    case 'waiting':
      return 'Live updates start once the newest messages are shown: load newer messages.';
    case 'connecting':
      return 'Connecting to live updates…';
    case 'live':
      return 'Live: new messages appear as they are posted.';
    case 'reconnecting':
      return `Connection lost; reconnecting${live.delayMs !== undefined ? ` in ${Math.ceil(live.delayMs / 1000)} s` : ''} (attempt ${live.failures + 1})…`;
    case 'polling':
      return live.failed
        ? 'Live updates are unavailable and the last check for new messages failed; checking again shortly.'
        : 'Live updates are unavailable: checking for new messages regularly instead.';
    case 'stopped':
      return 'Live updates stopped.';
  }
}

/** Announces messages that arrived live, once per burst: "New message from Ada" or "3 new messages". */
function useAnnouncer(nameOf: (authorId: string) => string): [string, (fresh: readonly Message[]) => void] {
  const [text, setText] = useState('');
  const pending = useRef(0);
  const from = useRef('');
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const nameRef = useRef(nameOf);
  nameRef.current = nameOf;
  useEffect(() => () => clearTimeout(timer.current), []);
  const heard = (fresh: readonly Message[]) => {
    pending.current += fresh.length;
    from.current = fresh[fresh.length - 1]?.author.id ?? '';
    if (timer.current !== undefined) return;
    timer.current = setTimeout(() => {
      const n = pending.current;
      pending.current = 0;
      timer.current = undefined;
      setText(n === 1 ? `New message from ${nameRef.current(from.current)}` : `${n} new messages`);
    }, ANNOUNCE_AFTER_MS);
  };
  return [text, heard];
}

export function RoomView({ roomId }: { roomId: string }) {
  const viewer = useViewer();
  const canPost = roleCovers(viewer.role, 'OPERATOR');
  const [room, setRoom] = useState<RoomData['room'] | undefined>(undefined);
  const [roomError, setRoomError] = useState<unknown>(null);
  const names = useRef<(authorId: string) => string>(() => 'A member');
  const [announcement, announce] = useAnnouncer((id) => names.current(id));
  /** The body this page is posting: when the stream brings it first, it is not announced as someone's news. */
  const sending = useRef<string | null>(null);
  const log = useRoomLog(roomId, (fresh) => {
    const news = fresh.filter((m) => !(m.author.id === viewer.user.id && m.body === sending.current));
    if (news.length) announce(news);
  });
  names.current = useAuthorNames(log.messages, viewer);
  const logRef = useRef<HTMLOListElement>(null);
  const stick = useRef(true);

  useEffect(() => {
    sdk.room({ id: roomId }).then((r) => setRoom(r.room), setRoomError);
  }, [roomId]);

  // Keep the newest message in view while the reader is at the bottom of the log.
  useEffect(() => {
    const el = logRef.current;
    if (el && stick.current) el.scrollTop = el.scrollHeight;
  }, [log.messages]);

  const title = room ? room.name : room === null || log.missing ? 'Room not found' : 'Room';
  return (
    <>
      <p>
        <a href="/rooms">← All rooms</a>
      </p>
      <h1 tabIndex={-1}>{title}</h1>
      <ProblemNotice error={roomError} title="Could not load the room" />
      {room === null || log.missing ? (
        <p>This room does not exist or is not visible to you. Go back to the list and pick another.</p>
      ) : (
        <>
          {room ? (
            <p class="muted">
              Created by {room.createdBy.displayName} on <When at={room.createdAt} />
            </p>
          ) : null}
          <section aria-labelledby="room-log-heading">
            <h2 id="room-log-heading">Messages</h2>
            <p role="status" class={`rooms-live rooms-live-${log.live.mode}`}>
              <span class="badge">{log.live.mode === 'live' ? 'LIVE' : log.live.mode.toUpperCase()}</span>{' '}
              {liveText(log.live)}
            </p>
            <ProblemNotice error={log.liveError} title="Live updates stopped" />
            {log.live.mode === 'stopped' ? (
              <button type="button" onClick={log.reconnect}>
                Reconnect live updates
              </button>
            ) : null}
            {log.messages.length > 0 ? (
              <ol
                class="rooms-log"
                ref={logRef}
                tabIndex={0}
                aria-label="Message log, oldest first"
                onScroll={(e) => {
                  const el = e.currentTarget;
                  stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 40;
                }}
              >
                {log.messages.map((m) => (
                  <li key={m.seq} class="rooms-message">
                    <p class="rooms-meta">
                      <strong>{names.current(m.author.id)}</strong> <When at={m.createdAt} />{' '}
                      <span class="muted">#{m.seq}</span>
                    </p>
                    <p class="rooms-body">{m.body}</p>
                  </li>
                ))}
              </ol>
            ) : null}
            {log.loading ? (
              <p role="status" class="muted">
                <span class="spinner" aria-hidden="true" /> Loading messages…
              </p>
            ) : null}
            <ProblemNotice error={log.error} title="Could not load messages" />
            {log.error ? (
              <button type="button" onClick={log.loadNewer}>
                Try again
              </button>
            ) : null}
            {!log.loading && !log.error && log.messages.length === 0 ? (
              <p class="muted">No messages yet.</p>
            ) : null}
            {log.hasNewer ? (
              <button type="button" onClick={log.loadNewer}>
                Load newer messages
              </button>
            ) : null}
            <div class="rooms-sr-only" aria-live="polite" aria-atomic="true">
              {announcement}
            </div>
          </section>
          <section aria-labelledby="room-post-heading">
            <h2 id="room-post-heading">Post a message</h2>
            {canPost ? (
              <PostForm roomId={roomId} onPosted={log.posted} onSending={(b) => (sending.current = b)} />
            ) : (
              <p class="muted">
                Your role ({viewer.role}) can read rooms but not post. Ask an owner or admin for the OPERATOR
                role.
              </p>
            )}
          </section>
        </>
      )}
    </>
  );
}

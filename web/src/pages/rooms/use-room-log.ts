/**
 * One room's message log: the `roomMessages` connection read oldest first a page at a time, then — once the newest
 * message is shown — the live `OnRoomMessage` subscription resumed after it (the SDK reconnects, deduplicates by
 * seq and falls back to polling the same connection). Messages from the log, the stream and the post form are
 * merged by seq, each once; `onLive` hears about messages that arrived live and were not shown yet.
 */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import {
  operations,
  subscriptions,
  type RoomMessagesData,
  type RoomMessagesNode,
  type SubscriptionSpec,
  type SubscriptionStatus,
} from '@agentgraph/sdk';
import { sdk, streams } from '../../api.js';

/** A message of the log; one that arrived on the stream names its author by id only (see ROOM_STREAM). */
export type Message = Omit<RoomMessagesNode, 'author'> & { author: { id: string; displayName?: string } };

/**
 * The SDK's OnRoomMessage. Its events name the author by id only: the gateway streams a subscription from the
 * subgraph that owns its root field (coordination), which cannot resolve identity's User.displayName. Names come
 * from the log's pages and the member list instead (room-view.tsx).
 */
export const ROOM_STREAM: SubscriptionSpec = subscriptions.OnRoomMessage;

type StreamData = { roomMessages: Message };

/** Where the live updates stand, for the stream status line. */
export type LiveState =
  /** Older pages are shown; live updates start once the newest page is loaded. */
  | { mode: 'waiting' }
  | { mode: 'connecting' }
  | { mode: 'live' }
  | { mode: 'reconnecting'; failures: number; delayMs?: number }
  | { mode: 'polling'; failed: boolean }
  /** The subscription ended (its error, if any, is `liveError`). */
  | { mode: 'stopped' };

export interface RoomLog {
  messages: readonly Message[];
  /** A page of the log is loading. */
  loading: boolean;
  error: unknown;
  /** The room does not exist or is not visible to the caller. */
  missing: boolean;
  /** Newer pages exist that are not shown yet. */
  hasNewer: boolean;
  loadNewer: () => void;
  live: LiveState;
  liveError: unknown;
  /** Starts the live updates again after they stopped. */
  reconnect: () => void;
  /** Shows a message the caller just posted (no-op when the stream already delivered it). */
  posted: (message: Message) => void;
}

export const PAGE_SIZE = 50;

/** `list` with the messages of `add` whose seq it lacks, in seq order (the same array when nothing is new). */
export function mergeBySeq(list: readonly Message[], add: readonly Message[]): readonly Message[] {
  const bySeq = new Map(list.map((m) => [m.seq, m] as const));
  let changed = false;
  for (const m of add) {
    if (!bySeq.has(m.seq)) {
      bySeq.set(m.seq, m);
      changed = true;
    }
  }
  return changed ? [...bySeq.values()].sort((a, b) => a.seq - b.seq) : list;
}

/** The status line's state after a subscription status entry. */
export function liveStateAfter(prev: LiveState, s: SubscriptionStatus): LiveState {
  if (s.event === 'end') return { mode: 'stopped' };
  if (s.mode === 'poll') return { mode: 'polling', failed: s.event === 'poll-failed' };
  switch (s.event) {
    case 'stream-open':
    case 'stream-restored':
      return { mode: 'live' };
    case 'stream-dropped':
      return { mode: 'reconnecting', failures: s.failures };
    case 'reconnect-wait':
      return {
        mode: 'reconnecting',
        failures: s.failures,
        ...(s.delayMs !== undefined ? { delayMs: s.delayMs } : {}),
      };
    default:
      return prev;
  }
}

function isAbort(err: unknown): boolean {
  return err instanceof Error && err.name === 'AbortError';
}

export function useRoomLog(roomId: string, onLive: (fresh: readonly Message[]) => void): RoomLog {
  const [messages, setMessages] = useState<readonly Message[]>([]);
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<unknown>(null);
  const [missing, setMissing] = useState(false);
  const [cursor, setCursor] = useState<string | undefined>(undefined);
  const [atEnd, setAtEnd] = useState(false);
  const [live, setLive] = useState<LiveState>({ mode: 'waiting' });
  const [liveError, setLiveError] = useState<unknown>(null);
  const [restarts, setRestarts] = useState(0);
  const seen = useRef(new Set<number>());
  /**
   * The last seq read from the gap-free sources (log pages, the stream): where a (re)started subscription resumes.
   * A posted message does not move it: messages before it may not have arrived yet.
   */
  const resumeAfter = useRef(0);
  const onLiveRef = useRef(onLive);
  onLiveRef.current = onLive;

  const add = useCallback((list: readonly Message[], fromStream: boolean) => {
    const fresh = list.filter((m) => !seen.current.has(m.seq));
    if (fresh.length === 0) return;
    for (const m of fresh) seen.current.add(m.seq);
    setMessages((prev) => mergeBySeq(prev, fresh));
    if (fromStream) onLiveRef.current(fresh);
  }, []);

  const loadPage = useCallback(
    async (after: string | undefined) => {
      setLoading(true);
      setError(null);
      try {
        const data = await sdk.roomMessages({ roomId, first: PAGE_SIZE, after: after ?? null });
        if (!data.room) {
          setMissing(true);
          return;
        }
        const { edges, pageInfo } = data.room.messages;
        const nodes = edges.map((e) => e.node);
        for (const m of nodes) resumeAfter.current = Math.max(resumeAfter.current, m.seq);
        add(nodes, false);
        if (pageInfo.endCursor) setCursor(pageInfo.endCursor);
        if (!pageInfo.hasNextPage) setAtEnd(true);
      } catch (err) {
        setError(err);
      } finally {
        setLoading(false);
      }
    },
    [roomId, add],
  );

  useEffect(() => void loadPage(undefined), [loadPage]);

  useEffect(() => {
    if (!atEnd) return;
    const controller = new AbortController();
    const { signal } = controller;
    setLive({ mode: 'connecting' });
    setLiveError(null);
    void (async () => {
      try {
        const items = streams.subscribe<Message, undefined, StreamData>(
          ROOM_STREAM,
          { roomId },
          {
            resume: { cursorVariable: 'afterSeq', seqOf: (m) => m.seq, after: resumeAfter.current },
            select: (d) => d.roomMessages,
            poll: {
              operation: operations.RoomMessages,
              variables: (p) => ({ roomId, first: PAGE_SIZE, after: p.cursor ?? null }),
              select: (d: RoomMessagesData) => ({
                events: d.room?.messages.edges.map((e) => e.node) ?? [],
                cursor: d.room?.messages.pageInfo.endCursor ?? null,
                hasMore: d.room?.messages.pageInfo.hasNextPage ?? false,
              }),
            },
            signal,
            onEvent: (s) => {
              if (!signal.aborted) setLive((prev) => liveStateAfter(prev, s));
            },
          },
        );
        for await (const item of items) {
          resumeAfter.current = Math.max(resumeAfter.current, item.seq);
          if (item.type === 'event') add([item.event], true);
        }
        if (!signal.aborted) setLive({ mode: 'stopped' });
      } catch (err) {
        if (signal.aborted || isAbort(err)) return;
        setLiveError(err);
        setLive({ mode: 'stopped' });
      }
    })();
    return () => controller.abort();
  }, [atEnd, roomId, add, restarts]);

  return {
    messages,
    loading,
    error,
    missing,
    hasNewer: !atEnd && !loading && !error && !missing,
    loadNewer: () => void loadPage(cursor),
    live,
    liveError,
    reconnect: () => setRestarts((n) => n + 1),
    posted: (m) => add([m], false),
  };
}

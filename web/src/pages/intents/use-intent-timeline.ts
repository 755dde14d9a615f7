/**
 * One intent's state changes, live: `streams.subscribe(subscriptions.IntentUpdates, { intentId })`. The server
 * replays every change from the creation (n = 1) on each connection, then streams new ones; the SDK's sequence gate
 * (keyed by `n`) drops what was already shown, so a reconnect adds no duplicate and leaves no gap. The subscription
 * ends at a final state (the server closes the stream there too) or when the component goes away (AbortController).
 *
 * `intentUpdates` takes no resume argument: the SDK still names one (`afterN`) and sends it on reconnects; GraphQL
 * ignores a variable the document does not declare, and the replay from n = 1 plus the gate gives the same result.
 * No query selects an intent's history, so there is no polling fallback: a broken stream reconnects with backoff.
 */
import { useEffect, useState } from 'preact/hooks';
import { type IntentUpdatesData, subscriptions, type SubscriptionStatus } from '@agentgraph/sdk';
import { streams } from '../../api.js';
import { TERMINAL } from './states.js';

export type Change = IntentUpdatesData['intentUpdates'];

export type StreamState =
  | { kind: 'connecting' }
  | { kind: 'live' }
  | { kind: 'reconnecting'; delayMs?: number; failures: number }
  | { kind: 'polling' }
  | { kind: 'ended' }
  | { kind: 'failed'; error: unknown };

export interface Timeline {
  changes: readonly Change[];
  stream: StreamState;
}

function streamStateOf(s: SubscriptionStatus, previous: StreamState): StreamState {
  switch (s.event) {
    case 'stream-open':
    case 'stream-restored':
      return { kind: 'live' };
    case 'stream-dropped':
    case 'token-refresh':
      return { kind: 'reconnecting', failures: s.failures };
    case 'reconnect-wait':
      return {
        kind: 'reconnecting',
        failures: s.failures,
        ...(s.delayMs !== undefined && { delayMs: s.delayMs }),
      };
    case 'fallback-poll':
    case 'poll':
      return { kind: 'polling' };
    default:
      return previous;
  }
}

export function useIntentTimeline(intentId: string): Timeline {
  const [changes, setChanges] = useState<readonly Change[]>([]);
  const [stream, setStream] = useState<StreamState>({ kind: 'connecting' });

  useEffect(() => {
    setChanges([]);
    setStream({ kind: 'connecting' });
    const controller = new AbortController();
    void (async () => {
      try {
        const items = streams.subscribe<Change, undefined, IntentUpdatesData>(
          subscriptions.IntentUpdates,
          { intentId },
          {
            resume: { cursorVariable: 'afterN', seqOf: (c) => c.n, after: 0 },
            select: (d) => d.intentUpdates,
            signal: controller.signal,
            onEvent: (s) => setStream((prev) => streamStateOf(s, prev)),
          },
        );
        for await (const item of items) {
          if (item.type !== 'event') continue;
          const change = item.event;
          setStream({ kind: 'live' });
          setChanges((prev) => [...prev, change]);
          if (TERMINAL.has(change.state)) break;
        }
        if (!controller.signal.aborted) setStream({ kind: 'ended' });
      } catch (error) {
        if (!controller.signal.aborted) setStream({ kind: 'failed', error });
      }
    })();
    return () => controller.abort();
  }, [intentId]);

  return { changes, stream };
}

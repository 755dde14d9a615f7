/**
 * One intent (`/intents?intent=<id>`): its details, the live timeline of its honest states (time, who, why) with the
 * stream's status, and Cancel while it is QUEUED or DELIVERED.
 */
import { useEffect, useState } from 'preact/hooks';
import type { IntentData, IntentState } from '@agentgraph/sdk';
import { sdk } from '../../api.js';
import { ProblemNotice } from '../../ui/problem.js';
import { useAction } from '../../ui/use-action.js';
import { useViewer } from '../../ui/viewer.js';
import { When } from '../../ui/when.js';
import { RefusalNotice } from './refusal.js';
import { CANCELLABLE, STATE_MEANING } from './states.js';
import { type Change, type StreamState, useIntentTimeline } from './use-intent-timeline.js';

type Intent = NonNullable<IntentData['intent']>;

function pretty(json: string): string {
  try {
    return JSON.stringify(JSON.parse(json), null, 2);
  } catch {
    return json;
  }
}

const capitalized = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

function StreamStatus({ stream }: { stream: StreamState }) {
  switch (stream.kind) {
    case 'connecting':
      return (
        <>
          <span class="spinner" aria-hidden="true" /> Connecting to the live stream…
        </>
      );
    case 'live':
      return (
        <>
          <span class="badge stream-live">Live</span> New states appear here as they happen.
        </>
      );
    case 'reconnecting':
      return (
        <>
          <span class="spinner" aria-hidden="true" /> <span class="badge">Reconnecting</span> The stream broke
          {stream.delayMs !== undefined ? `; trying again in ${Math.ceil(stream.delayMs / 1000)} s` : ''}.
          Nothing is lost: missed states are replayed.
        </>
      );
    case 'polling':
      return (
        <>
          <span class="badge">Polling</span> Streaming is unavailable; checking periodically.
        </>
      );
    case 'ended':
      return (
        <>
          <span class="badge">Final</span> The intent reached a final state; the stream is closed.
        </>
      );
    case 'failed':
      return <>The live stream stopped.</>;
  }
}

function useActorName(intent: Intent | null) {
  const viewer = useViewer();
  return (actor: string): string => {
    if (actor === 'system') return 'the server';
    if (actor === viewer.user.id) return `you (${viewer.user.displayName})`;
    if (intent && actor === intent.requester.id) return intent.requester.displayName;
    if (intent && actor === `device:${intent.device.id}`) return `device “${intent.device.name}”`;
    if (actor.startsWith('device:')) return `device ${actor.slice('device:'.length)}`;
    return `user ${actor}`;
  };
}

function TimelineEntry({ change, actorName }: { change: Change; actorName: (a: string) => string }) {
  const origin = change.origin;
  return (
    <li class={`intent-state intent-state-${change.state.toLowerCase()}`}>
      <p class="intent-state-head">
        <strong>{change.state}</strong> <span class="muted">#{change.n}</span> — <When at={change.at} />
      </p>
      <p>
        {capitalized(STATE_MEANING[change.state as IntentState] ?? '')}. By {actorName(change.actor)}.
        {change.reason ? <> Reason: {change.reason}</> : null}
      </p>
      {origin && (origin.ip || origin.userAgent || origin.clientId) ? (
        <p class="muted">From {[origin.ip, origin.clientId, origin.userAgent].filter(Boolean).join(' · ')}</p>
      ) : null}
    </li>
  );
}

export function IntentDetail({ id }: { id: string }) {
  const viewer = useViewer();
  const [intent, setIntent] = useState<Intent | null>(null);
  const [loadError, setLoadError] = useState<unknown>(null);
  const [loading, setLoading] = useState(true);
  const { changes, stream } = useIntentTimeline(id);
  const actorName = useActorName(intent);

  // Read again whenever the timeline moves on: the server sets executionDeadline at EXECUTING.
  useEffect(() => {
    let live = true;
    sdk.intent({ id }).then(
      (r) => {
        if (!live) return;
        setIntent(r.intent);
        setLoadError(r.intent ? null : new Error(`There is no intent ${id} in this tenant.`));
        setLoading(false);
      },
      (err: unknown) => {
        if (!live) return;
        setLoadError(err);
        setLoading(false);
      },
    );
    return () => {
      live = false;
    };
  }, [id, changes.length]);

  const cancel = useAction(async () => {
    await sdk.cancelIntent({ id });
  });

  const current = changes.at(-1)?.state ?? intent?.state;
  const cancellable = current !== undefined && CANCELLABLE.has(current);

  return (
    <>
      <h1 tabIndex={-1}>Intent{intent ? `: ${intent.action}` : ''}</h1>
      <p>
        <a href="/intents">All intents</a>
        {intent ? (
          <>
            {' · '}
            <a href={`/intents?device=${encodeURIComponent(intent.device.id)}`}>
              Intents of “{intent.device.name}”
            </a>
          </>
        ) : null}
      </p>
      {loading ? (
        <p role="status" class="muted">
          <span class="spinner" aria-hidden="true" /> Loading the intent…
        </p>
      ) : null}
      <ProblemNotice error={loadError} title="Could not load the intent" />

      {intent ? (
        <section aria-labelledby="intent-facts-heading">
          <h2 id="intent-facts-heading">Details</h2>
          <dl class="facts">
            <dt>Current state</dt>
            <dd>
              <strong class="intent-current">{current}</strong>
              {current ? <span class="muted"> — {STATE_MEANING[current as IntentState]}</span> : null}
            </dd>
            <dt>Action</dt>
            <dd>
              <code>{intent.action}</code>
            </dd>
            <dt>Parameters</dt>
            <dd>
              <pre class="intent-params-view">{pretty(intent.params)}</pre>
            </dd>
            <dt>Device</dt>
            <dd>
              {intent.device.name} <span class="muted">({intent.device.platform})</span>
            </dd>
            <dt>Requested by</dt>
            <dd>
              {intent.requester.displayName}
              {intent.requester.id === viewer.user.id ? <span class="muted"> (you)</span> : null}
            </dd>
            <dt>Sequence</dt>
            <dd>#{intent.seq} of the device's intents</dd>
            <dt>Created</dt>
            <dd>
              <When at={intent.createdAt} />
            </dd>
            <dt>Expires</dt>
            <dd>
              <When at={intent.expiresAt} />
            </dd>
            <dt>Outcome due by</dt>
            <dd>
              <When at={intent.executionDeadline} empty="set when the device starts executing" />
            </dd>
          </dl>
          {cancellable ? (
            <div class="row intent-cancel">
              <button type="button" class="danger" disabled={cancel.busy} onClick={() => void cancel.run()}>
                Cancel this intent
              </button>
              {cancel.busy ? (
                <span role="status" class="muted">
                  <span class="spinner" aria-hidden="true" /> Cancelling…
                </span>
              ) : (
                <span class="hint">
                  Possible while it is QUEUED or DELIVERED; only its requester may cancel.
                </span>
              )}
            </div>
          ) : null}
          <RefusalNotice error={cancel.error} fallbackTitle="Could not cancel the intent" />
        </section>
      ) : null}

      <section aria-labelledby="intent-timeline-heading">
        <h2 id="intent-timeline-heading">Timeline</h2>
        <p role="status" class="stream-status">
          <StreamStatus stream={stream} />
        </p>
        {stream.kind === 'failed' ? (
          <ProblemNotice error={stream.error} title="The live timeline stopped" />
        ) : null}
        <ol class="timeline" aria-live="polite" aria-relevant="additions">
          {changes.map((c) => (
            <TimelineEntry key={c.n} change={c} actorName={actorName} />
          ))}
        </ol>
      </section>
    </>
  );
}

/**
 * Emergency stop (ADMIN and OWNER): the status (the tenant's own stop and the deployment-wide one), Engage with a
 * reason after a confirmation step that says what it does, and Lift. The server checks the role; a refusal shows
 * its code. The deployment-wide stop is engaged and lifted by operators only, so it is shown, not controlled.
 */
import { useEffect, useState } from 'preact/hooks';
import type { EmergencyStopData } from '@agentgraph/sdk';
import { sdk } from '../api.js';
import { ProblemNotice } from '../ui/problem.js';
import { useAction } from '../ui/use-action.js';
import { useViewer } from '../ui/viewer.js';
import { When } from '../ui/when.js';
import { Busy } from '../ui/busy.js';

type Status = EmergencyStopData['emergencyStop'];
type Stop = NonNullable<Status['tenant']>;

function StopFacts({ stop, viewerId, empty }: { stop: Stop | null; viewerId: string; empty: string }) {
  if (!stop) return <p>{empty}</p>;
  return (
    <dl class="facts">
      <dt>State</dt>
      <dd>
        <strong class="danger">ENGAGED</strong>
      </dd>
      <dt>Reason</dt>
      <dd>{stop.reason}</dd>
      <dt>Since</dt>
      <dd>
        <When at={stop.engagedAt} />
      </dd>
      <dt>By</dt>
      <dd>{stop.engagedBy === viewerId ? 'you' : stop.engagedBy}</dd>
    </dl>
  );
}

export function EmergencyPage() {
  const viewer = useViewer();
  const [status, setStatus] = useState<Status | null>(null);
  const [loadError, setLoadError] = useState<unknown>(null);
  const [reason, setReason] = useState('');
  const [confirming, setConfirming] = useState(false);
  const [notice, setNotice] = useState('');
  useEffect(() => {
    sdk.emergencyStop().then((r) => setStatus(r.emergencyStop), setLoadError);
  }, []);
  const engage = useAction(async () => {
    const r = await sdk.engageEmergencyStop({ reason: reason.trim() });
    setStatus(r.engageEmergencyStop.status);
    setConfirming(false);
    setReason('');
    setNotice('The emergency stop is engaged for the tenant.');
  });
  const lift = useAction(async () => {
    const r = await sdk.liftEmergencyStop();
    setStatus(r.liftEmergencyStop.status);
    setNotice('The tenant emergency stop is lifted.');
  });
  const tenantStop = status?.tenant ?? null;
  const busy = engage.busy || lift.busy;

  return (
    <>
      <h1 tabIndex={-1}>Emergency stop</h1>
      <p>
        The emergency stop halts every agent of {viewer.tenant.name} at once: within a second it closes every
        open stream of the tenant, and it refuses new streams and intents until an admin or owner lifts it.
      </p>
      <div role="status" class="ok">
        {notice}
      </div>
      {status === null ? (
        loadError ? (
          <ProblemNotice error={loadError} title="Could not read the emergency stop" />
        ) : (
          <p role="status" class="muted">
            <span class="spinner" aria-hidden="true" /> Reading the emergency stop…
          </p>
        )
      ) : (
        <>
          <section aria-labelledby="status-heading" class="panel">
            <h2 id="status-heading">
              Status: {status.engaged ? <strong class="danger">ENGAGED</strong> : <span>not engaged</span>}
            </h2>
            <h3>This tenant</h3>
            <StopFacts stop={tenantStop} viewerId={viewer.user.id} empty="Not engaged." />
            <h3>Deployment-wide</h3>
            <StopFacts
              stop={status.global}
              viewerId={viewer.user.id}
              empty="Not engaged (operators engage and lift it for every tenant)."
            />
          </section>

          {tenantStop ? (
            <section aria-labelledby="lift-heading">
              <h2 id="lift-heading">Lift the stop</h2>
              <p>
                Agents may open streams and receive intents again; intents refused while it was engaged are
                not resent.
              </p>
              <div class="row">
                <button type="button" class="primary" disabled={busy} onClick={() => void lift.run()}>
                  Lift emergency stop
                </button>
                <Busy when={lift.busy}>Lifting…</Busy>
              </div>
              <ProblemNotice error={lift.error} title="Could not lift the emergency stop" />
            </section>
          ) : (
            <section aria-labelledby="engage-heading">
              <h2 id="engage-heading">Engage the stop</h2>
              <form
                class="stack"
                onSubmit={(e) => {
                  e.preventDefault();
                  engage.clear();
                  if (reason.trim()) setConfirming(true);
                }}
              >
                <label for="stop-reason">
                  Reason{' '}
                  <span class="hint" id="stop-reason-hint">
                    (for the audit record and the people affected; 1–500 characters)
                  </span>
                </label>
                <textarea
                  id="stop-reason"
                  required
                  maxLength={500}
                  value={reason}
                  aria-describedby="stop-reason-hint"
                  disabled={confirming}
                  onInput={(e) => setReason(e.currentTarget.value)}
                />
                {confirming ? null : (
                  <button type="submit" class="danger">
                    Engage emergency stop…
                  </button>
                )}
              </form>
              {confirming ? (
                <div class="problem confirm-stop" role="group" aria-labelledby="confirm-stop-q">
                  <p id="confirm-stop-q">
                    <strong>Engage the emergency stop for {viewer.tenant.name} now?</strong> Every open stream
                    of the tenant closes within a second and new intents are refused until it is lifted.
                  </p>
                  <div class="row">
                    <button type="button" class="danger" disabled={busy} onClick={() => void engage.run()}>
                      Yes, engage the stop
                    </button>
                    <button type="button" disabled={busy} onClick={() => setConfirming(false)}>
                      Cancel
                    </button>
                    <Busy when={engage.busy}>Engaging…</Busy>
                  </div>
                </div>
              ) : null}
              <ProblemNotice error={engage.error} title="Could not engage the emergency stop" />
            </section>
          )}
        </>
      )}
    </>
  );
}

/**
 * Enrolment approval (RFC 8628, the person's side): type the code a device shows, see what is asking (its name,
 * platform, key thumbprint, scopes, when the request expires), then approve or deny it. Wrong or expired codes are
 * NOT_FOUND (and count as failed guesses: the server answers RATE_LIMITED after a few).
 */
import { useState } from 'preact/hooks';
import type { DeviceAuthorizationData } from '@agentgraph/sdk';
import { problemOf, sdk } from '../../api.js';
import { ProblemNotice } from '../../ui/problem.js';
import { useAction } from '../../ui/use-action.js';
import { roleCovers, useViewer } from '../../ui/viewer.js';
import { When } from '../../ui/when.js';
import { Busy } from '../../ui/busy.js';

type Request = NonNullable<DeviceAuthorizationData['deviceAuthorization']>;

type Outcome = { kind: 'approved'; name: string } | { kind: 'denied'; name: string };

/** What to do when a code is not (or no longer) there: codes expire and work once. */
function CodeAdvice({ show }: { show: boolean }) {
  if (!show) return null;
  return (
    <p class="hint" id="enrol-code-advice">
      Check the code on the device's screen (letters only; case and the dash do not matter). A code works once
      and expires after a few minutes: if it has expired, start the enrolment again on the device to get a new
      code.
    </p>
  );
}

export function ApproveByCode({ onEnrolled }: { onEnrolled: () => void }) {
  const viewer = useViewer();
  const [code, setCode] = useState('');
  const [request, setRequest] = useState<Request | null>(null);
  const [outcome, setOutcome] = useState<Outcome | null>(null);
  const mayApprove = roleCovers(viewer.role, 'OPERATOR');

  const lookUp = useAction(async (userCode: string) => {
    setRequest(null);
    setOutcome(null);
    const r = await sdk.deviceAuthorization({ userCode });
    if (!r.deviceAuthorization) throw new Error('No enrolment request has this code.');
    setRequest(r.deviceAuthorization);
  });
  const approve = useAction(async (req: Request) => {
    const r = await sdk.approveDeviceAuthorization({ userCode: req.userCode });
    setRequest(null);
    setCode('');
    setOutcome({ kind: 'approved', name: r.approveDeviceAuthorization.device.name });
    onEnrolled();
  });
  const deny = useAction(async (req: Request) => {
    await sdk.denyDeviceAuthorization({ userCode: req.userCode });
    setRequest(null);
    setCode('');
    setOutcome({ kind: 'denied', name: req.deviceName });
  });
  const busy = lookUp.busy || approve.busy || deny.busy;
  const notFound = Boolean(lookUp.error) && problemOf(lookUp.error).code === 'NOT_FOUND';

  return (
    <section aria-labelledby="enrol-heading">
      <h2 id="enrol-heading">Approve a device</h2>
      <p class="muted">
        A desktop that enrols shows a code. Type it here to see which device is asking, then approve or deny
        it.
      </p>
      <form
        class="stack"
        onSubmit={(e) => {
          e.preventDefault();
          approve.clear();
          deny.clear();
          if (code.trim()) void lookUp.run(code.trim());
        }}
      >
        <label for="enrol-code">
          Code shown on your device{' '}
          <span class="hint" id="enrol-code-hint">
            (8 letters, e.g. WDJB-MJHT)
          </span>
        </label>
        <input
          id="enrol-code"
          name="userCode"
          autocomplete="off"
          autocapitalize="characters"
          spellcheck={false}
          required
          maxLength={20}
          aria-describedby={`enrol-code-hint${notFound ? ' enrol-code-advice' : ''}`}
          value={code}
          onInput={(e) => setCode(e.currentTarget.value)}
        />
        <div class="actions row">
          <button type="submit" class="primary" disabled={busy || !code.trim()}>
            Look up the code
          </button>
          <Busy when={lookUp.busy}>Looking up…</Busy>
        </div>
      </form>
      <ProblemNotice error={lookUp.error} title="No enrolment request with this code" />
      <CodeAdvice show={notFound} />

      {request ? (
        <section class="panel enrol-request" aria-labelledby="enrol-request-heading">
          <h3 id="enrol-request-heading">“{request.deviceName}” asks to enrol</h3>
          <dl class="facts">
            <dt>Device name</dt>
            <dd>{request.deviceName}</dd>
            <dt>Platform</dt>
            <dd>{request.platform}</dd>
            <dt>Application</dt>
            <dd>
              {request.clientName} <span class="muted">({request.clientId})</span>
            </dd>
            <dt>Asks for</dt>
            <dd>{request.scopes.join(', ')}</dd>
            <dt>Key thumbprint</dt>
            <dd>
              <code class="thumbprint">{request.keyThumbprint}</code>
            </dd>
            <dt>Request expires</dt>
            <dd>
              <When at={request.expiresAt} />
            </dd>
            <dt>Code</dt>
            <dd>
              <code>{request.userCode}</code>
            </dd>
          </dl>
          <p class="hint">
            Approve only a device you are enrolling right now: it will act in this tenant with your identity,
            as its owner.
          </p>
          {mayApprove ? null : (
            <p class="hint">
              Approving or denying needs the OPERATOR role or higher; you are {viewer.role}. Ask an operator
              or admin.
            </p>
          )}
          <div class="row">
            <button type="button" class="primary" disabled={busy} onClick={() => void approve.run(request)}>
              Approve “{request.deviceName}”
            </button>
            <button type="button" class="danger" disabled={busy} onClick={() => void deny.run(request)}>
              Deny
            </button>
            {approve.busy || deny.busy ? (
              <span role="status" class="muted">
                <span class="spinner" aria-hidden="true" /> {approve.busy ? 'Approving…' : 'Denying…'}
              </span>
            ) : null}
          </div>
          <ProblemNotice error={approve.error} title="Could not approve the device" />
          <ProblemNotice error={deny.error} title="Could not deny the request" />
        </section>
      ) : null}

      <div role="status">
        {outcome?.kind === 'approved' ? (
          <p class="ok">
            <strong>Approved.</strong> “{outcome.name}” is enrolled and gets its sign-in on its next poll. It
            appears in the list below; its local user decides whether it accepts remote actions.
          </p>
        ) : null}
        {outcome?.kind === 'denied' ? (
          <p>
            <strong>Denied.</strong> “{outcome.name}” was refused: its next poll is told access is denied.
            Nothing was enrolled.
          </p>
        ) : null}
      </div>
    </section>
  );
}

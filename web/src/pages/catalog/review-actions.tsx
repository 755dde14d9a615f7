/**
 * The decisions on one release, by its state: Approve / Reject with a reason (IN_REVIEW), Appeal with a reason
 * (REJECTED; the uploader only), Promote to the next channel / Revoke with a reason (APPROVED). The server enforces
 * every rule (reviewers are ADMIN or OWNER and never the uploader); its refusal shows with its code. Controls stay
 * enabled for everyone so the rule is the server's, with a hint when the viewer is the uploader.
 */
import { useState } from 'preact/hooks';
import { sdk } from '../../api.js';
import { ProblemNotice } from '../../ui/problem.js';
import { useAction } from '../../ui/use-action.js';
import { useViewer } from '../../ui/viewer.js';
import { CHANNEL_TEXT, nextChannel } from './states.js';

export interface Reviewable {
  id: string;
  version: string;
  state: string;
  channel?: string | null;
  plugin: { name: string };
  package?: { uploadedBy: { id: string } } | null;
}

/** A labelled reason box with its submit and cancel buttons. */
function ReasonForm({
  id,
  label,
  hint,
  submit,
  busy,
  danger,
  onSubmit,
  onCancel,
}: {
  id: string;
  label: string;
  hint: string;
  submit: string;
  busy: boolean;
  danger?: boolean;
  onSubmit: (reason: string) => void;
  onCancel: () => void;
}) {
  const [reason, setReason] = useState('');
  return (
    <form
      class="stack reason-form"
      onSubmit={(e) => {
        e.preventDefault();
        if (reason.trim()) onSubmit(reason.trim());
      }}
    >
      <label for={id}>{label}</label>
      <p class="hint" id={`${id}-hint`}>
        {hint}
      </p>
      <textarea
        id={id}
        required
        maxLength={2000}
        aria-describedby={`${id}-hint`}
        value={reason}
        onInput={(e) => setReason(e.currentTarget.value)}
      />
      <div class="actions row">
        <button type="submit" class={danger ? 'danger' : 'primary'} disabled={busy}>
          {submit}
        </button>
        <button type="button" onClick={onCancel} disabled={busy}>
          Cancel
        </button>
      </div>
    </form>
  );
}

export function ReviewActions({
  release,
  onChanged,
}: {
  release: Reviewable;
  onChanged: (what: string) => void;
}) {
  const viewer = useViewer();
  const [open, setOpen] = useState<'reject' | 'appeal' | 'revoke' | null>(null);
  const label = `${release.plugin.name} ${release.version}`;
  const own = release.package?.uploadedBy.id === viewer.user.id;
  const approve = useAction(async () => {
    await sdk.approveRelease({ releaseId: release.id });
    onChanged(`Approved ${label}: published in the alpha channel.`);
  });
  const reject = useAction(async (reason: string) => {
    await sdk.rejectRelease({ releaseId: release.id, reason });
    setOpen(null);
    onChanged(`Rejected ${label}.`);
  });
  const appeal = useAction(async (reason: string) => {
    await sdk.appealRelease({ releaseId: release.id, reason });
    setOpen(null);
    onChanged(`Appealed: ${label} is back in review.`);
  });
  const promote = useAction(async () => {
    const r = await sdk.promoteRelease({ releaseId: release.id });
    const ch = r.promoteRelease.release.channel;
    onChanged(`Promoted ${label} to the ${CHANNEL_TEXT[ch ?? ''] ?? ch} channel.`);
  });
  const revoke = useAction(async (reason: string) => {
    await sdk.revokeRelease({ releaseId: release.id, reason });
    setOpen(null);
    onChanged(`Revoked ${label}: TUF clients stop seeing it on their next refresh.`);
  });
  const busy = approve.busy || reject.busy || appeal.busy || promote.busy || revoke.busy;
  const clear = () => [approve, reject, appeal, promote, revoke].forEach((a) => a.clear());
  const next = nextChannel(release.channel);
  const idBase = `release-${release.id}`;

  return (
    <div class="review-actions">
      {release.state === 'IN_REVIEW' ? (
        <>
          {own ? (
            <p class="hint" id={`${idBase}-own`}>
              You uploaded this; another reviewer must decide.
            </p>
          ) : null}
          <div class="row">
            <button
              type="button"
              class="primary"
              disabled={busy}
              aria-label={`Approve ${label}`}
              aria-describedby={own ? `${idBase}-own` : undefined}
              onClick={() => {
                clear();
                void approve.run();
              }}
            >
              Approve
            </button>
            <button
              type="button"
              class="danger"
              disabled={busy}
              aria-label={`Reject ${label}`}
              aria-expanded={open === 'reject'}
              onClick={() => {
                clear();
                setOpen(open === 'reject' ? null : 'reject');
              }}
            >
              Reject…
            </button>
          </div>
          {open === 'reject' ? (
            <ReasonForm
              id={`${idBase}-reject-reason`}
              label={`Why reject ${label}?`}
              hint="The uploader sees this reason and may appeal."
              submit={`Reject ${label}`}
              danger
              busy={busy}
              onSubmit={(reason) => void reject.run(reason)}
              onCancel={() => setOpen(null)}
            />
          ) : null}
        </>
      ) : null}
      {release.state === 'REJECTED' ? (
        <>
          {!own ? (
            <p class="hint" id={`${idBase}-appeal-hint`}>
              Only the member who uploaded the package may appeal.
            </p>
          ) : null}
          <button
            type="button"
            disabled={busy}
            aria-expanded={open === 'appeal'}
            onClick={() => {
              clear();
              setOpen(open === 'appeal' ? null : 'appeal');
            }}
          >
            Appeal…
          </button>
          {open === 'appeal' ? (
            <ReasonForm
              id={`${idBase}-appeal-reason`}
              label={`Why should ${label} be reviewed again?`}
              hint="Reviewers see this with the rejection."
              submit={`Appeal for ${label}`}
              busy={busy}
              onSubmit={(reason) => void appeal.run(reason)}
              onCancel={() => setOpen(null)}
            />
          ) : null}
        </>
      ) : null}
      {release.state === 'APPROVED' ? (
        <>
          <div class="row">
            {next ? (
              <button
                type="button"
                class="primary"
                disabled={busy}
                onClick={() => {
                  clear();
                  void promote.run();
                }}
              >
                Promote to {CHANNEL_TEXT[next]}
              </button>
            ) : (
              <span class="muted">Published in the last channel (stable).</span>
            )}
            <button
              type="button"
              class="danger"
              disabled={busy}
              aria-expanded={open === 'revoke'}
              onClick={() => {
                clear();
                setOpen(open === 'revoke' ? null : 'revoke');
              }}
            >
              Revoke…
            </button>
          </div>
          {open === 'revoke' ? (
            <ReasonForm
              id={`${idBase}-revoke-reason`}
              label={`Why revoke ${label}?`}
              hint="Revoking removes it from its channel: desktops stop seeing it on their next refresh. It cannot be published again; upload a new version instead."
              submit={`Revoke ${label}`}
              danger
              busy={busy}
              onSubmit={(reason) => void revoke.run(reason)}
              onCancel={() => setOpen(null)}
            />
          ) : null}
        </>
      ) : null}
      {busy ? (
        <p role="status" class="muted">
          <span class="spinner" aria-hidden="true" /> Saving the decision…
        </p>
      ) : null}
      <ProblemNotice error={approve.error} title={`Could not approve ${label}`} />
      <ProblemNotice error={reject.error} title={`Could not reject ${label}`} />
      <ProblemNotice error={appeal.error} title={`Could not appeal for ${label}`} />
      <ProblemNotice error={promote.error} title={`Could not promote ${label}`} />
      <ProblemNotice error={revoke.error} title={`Could not revoke ${label}`} />
    </div>
  );
}

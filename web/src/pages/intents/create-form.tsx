/**
 * Create an intent: a device among the ENROLLED ones, the action, its parameters (a JSON object, checked here
 * before sending), a bounded expiry and time to report an outcome. Every value is checked against the schema's
 * bounds first; the server's refusals (remote actions off, not enrolled, emergency stop, rate limit) show their code
 * and what to do. On success the page opens the new intent's live timeline.
 */
import { useState } from 'preact/hooks';
import type { DevicesNode } from '@agentgraph/sdk';
import { sdk } from '../../api.js';
import { navigate } from '../../router.js';
import { ProblemNotice } from '../../ui/problem.js';
import { useAction } from '../../ui/use-action.js';
import { roleCovers, useViewer } from '../../ui/viewer.js';
import { checkDraft, type DraftErrors, type IntentDraft, LIMITS } from './limits.js';
import { RefusalNotice } from './refusal.js';
import type { AllDevices } from './use-devices.js';
import { Busy } from '../../ui/busy.js';

const FIELD_ORDER: readonly (keyof IntentDraft)[] = [
  'deviceId',
  'action',
  'params',
  'expiresInSeconds',
  'executionTimeoutSeconds',
];

function describedBy(field: keyof IntentDraft, errors: DraftErrors): string {
  return `intent-${field}-hint${errors[field] ? ` intent-${field}-error` : ''}`;
}

function FieldError({ field, errors }: { field: keyof IntentDraft; errors: DraftErrors }) {
  const message = errors[field];
  return message ? (
    <p class="field-error danger" id={`intent-${field}-error`}>
      <strong>Error:</strong> {message}
    </p>
  ) : null;
}

function deviceLabel(d: DevicesNode): string {
  return `${d.name} (${d.platform}, ${d.owner.displayName}) — remote actions ${d.remoteActionsEnabled ? 'on' : 'off'}`;
}

export function CreateIntentForm({
  all,
  initialDeviceId,
}: {
  all: AllDevices;
  initialDeviceId?: string | null;
}) {
  const viewer = useViewer();
  const enrolled = all.devices.filter((d) => d.status === 'ENROLLED');
  const [draft, setDraft] = useState<IntentDraft>({
    deviceId: '',
    action: '',
    params: '{}',
    expiresInSeconds: '600',
    executionTimeoutSeconds: '300',
  });
  const [errors, setErrors] = useState<DraftErrors>({});
  const deviceId =
    draft.deviceId ||
    (enrolled.some((d) => d.id === initialDeviceId) ? initialDeviceId! : (enrolled[0]?.id ?? ''));
  const chosen = enrolled.find((d) => d.id === deviceId);
  const create = useAction(async (input: ReturnType<typeof checkDraft> & { ok: true }) => {
    const r = await sdk.createIntent({ input: input.value });
    navigate(`/intents?intent=${encodeURIComponent(r.createIntent.intent.id)}`);
  });
  const set = (field: keyof IntentDraft) => (e: { currentTarget: { value: string } }) => {
    const value = e.currentTarget.value;
    setDraft((d) => ({ ...d, [field]: value }));
  };

  const onSubmit = (e: Event) => {
    e.preventDefault();
    create.clear();
    const checked = checkDraft({ ...draft, deviceId });
    if (!checked.ok) {
      setErrors(checked.errors);
      const first = FIELD_ORDER.find((f) => checked.errors[f]);
      if (first) document.getElementById(`intent-${first}`)?.focus();
      return;
    }
    setErrors({});
    void create.run(checked);
  };

  return (
    <section aria-labelledby="create-intent-heading">
      <h2 id="create-intent-heading">Create an intent</h2>
      <p class="muted">
        An intent asks a device to perform an action. It is signed, queued for the device, and the device
        reports each step; you can follow it live.
      </p>
      {roleCovers(viewer.role, 'OPERATOR') ? null : (
        <p class="hint">Creating intents needs the OPERATOR role or higher; you are {viewer.role}.</p>
      )}
      {all.loading ? (
        <p role="status" class="muted">
          <span class="spinner" aria-hidden="true" /> Loading devices…
        </p>
      ) : null}
      <ProblemNotice error={all.error} title="Could not load the devices" />
      {!all.loading && !all.error && enrolled.length === 0 ? (
        <p>
          No device is enrolled. <a href="/devices">Approve a device on the Devices page</a> first.
        </p>
      ) : null}
      {enrolled.length > 0 ? (
        <form class="stack" noValidate onSubmit={onSubmit}>
          <label for="intent-deviceId">
            Device{' '}
            <span class="hint" id="intent-deviceId-hint">
              (enrolled devices only; the device's local user must have switched remote actions on)
            </span>
          </label>
          <select
            id="intent-deviceId"
            value={deviceId}
            aria-describedby={describedBy('deviceId', errors)}
            aria-invalid={errors.deviceId ? 'true' : undefined}
            onChange={set('deviceId')}
          >
            {enrolled.map((d) => (
              <option key={d.id} value={d.id}>
                {deviceLabel(d)}
              </option>
            ))}
          </select>
          {chosen && !chosen.remoteActionsEnabled ? (
            <p class="hint">
              Remote actions are off on “{chosen.name}”: the server will refuse the intent until its local
              user switches them on.
            </p>
          ) : null}
          <FieldError field="deviceId" errors={errors} />

          <label for="intent-action">
            Action{' '}
            <span class="hint" id="intent-action-hint">
              (what the device should do, e.g. open-app; 1–{LIMITS.actionMax} characters)
            </span>
          </label>
          <input
            id="intent-action"
            value={draft.action}
            maxLength={LIMITS.actionMax}
            autocomplete="off"
            aria-describedby={describedBy('action', errors)}
            aria-invalid={errors.action ? 'true' : undefined}
            onInput={set('action')}
          />
          <FieldError field="action" errors={errors} />

          <label for="intent-params">
            Parameters{' '}
            <span class="hint" id="intent-params-hint">
              (a JSON object, at most {LIMITS.paramsMaxBytes / 1024} KB, e.g. {'{"app": "notes"}'})
            </span>
          </label>
          <textarea
            id="intent-params"
            class="intent-params"
            spellcheck={false}
            value={draft.params}
            aria-describedby={describedBy('params', errors)}
            aria-invalid={errors.params ? 'true' : undefined}
            onInput={set('params')}
          />
          <FieldError field="params" errors={errors} />

          <label for="intent-expiresInSeconds">
            Expires after (seconds){' '}
            <span class="hint" id="intent-expiresInSeconds-hint">
              (between {LIMITS.expiresMin} and {LIMITS.expiresMax}, i.e. up to one hour; the intent expires
              unless the device is executing it by then)
            </span>
          </label>
          <input
            id="intent-expiresInSeconds"
            type="number"
            inputMode="numeric"
            min={LIMITS.expiresMin}
            max={LIMITS.expiresMax}
            step={1}
            value={draft.expiresInSeconds}
            aria-describedby={describedBy('expiresInSeconds', errors)}
            aria-invalid={errors.expiresInSeconds ? 'true' : undefined}
            onInput={set('expiresInSeconds')}
          />
          <FieldError field="expiresInSeconds" errors={errors} />

          <label for="intent-executionTimeoutSeconds">
            Time to report an outcome (seconds){' '}
            <span class="hint" id="intent-executionTimeoutSeconds-hint">
              (between {LIMITS.executionMin} and {LIMITS.executionMax}; once executing, a device silent for
              longer leaves the intent OUTCOME_UNKNOWN)
            </span>
          </label>
          <input
            id="intent-executionTimeoutSeconds"
            type="number"
            inputMode="numeric"
            min={LIMITS.executionMin}
            max={LIMITS.executionMax}
            step={1}
            value={draft.executionTimeoutSeconds}
            aria-describedby={describedBy('executionTimeoutSeconds', errors)}
            aria-invalid={errors.executionTimeoutSeconds ? 'true' : undefined}
            onInput={set('executionTimeoutSeconds')}
          />
          <FieldError field="executionTimeoutSeconds" errors={errors} />

          <div class="actions row">
            <button type="submit" class="primary" disabled={create.busy}>
              Create intent
            </button>
            <Busy when={create.busy}>Creating…</Busy>
          </div>
          <RefusalNotice error={create.error} fallbackTitle="Could not create the intent" />
        </form>
      ) : null}
    </section>
  );
}

/**
 * The tenant's devices, a page at a time: name, platform, status, owner, whether remote actions are on (read-only:
 * the desktop's local user decides), when enrolled; Rename and Revoke (with a confirmation step). The server
 * enforces who may (the device's owner, or ADMIN and OWNER); a refusal shows its code and what to do.
 */
import { useState } from 'preact/hooks';
import type { DevicesNode } from '@agentgraph/sdk';
import { sdk } from '../../api.js';
import { PageControls } from '../../ui/paged-list.js';
import { ProblemNotice } from '../../ui/problem.js';
import { useAction } from '../../ui/use-action.js';
import type { Pages } from '../../ui/use-pages.js';
import { useViewer } from '../../ui/viewer.js';
import { When } from '../../ui/when.js';
import { Busy } from '../../ui/busy.js';

type Pending = { kind: 'rename' | 'revoke'; id: string } | null;

const STATUS_TEXT: Record<string, string> = {
  PENDING: 'Pending',
  ENROLLED: 'Enrolled',
  REVOKED: 'Revoked',
};

function RenameForm({
  device,
  onDone,
  onCancel,
}: {
  device: DevicesNode;
  onDone: (d: DevicesNode) => void;
  onCancel: () => void;
}) {
  const [name, setName] = useState(device.name);
  const rename = useAction(async (newName: string) => {
    const r = await sdk.renameDevice({ id: device.id, name: newName });
    onDone(r.renameDevice.device);
  });
  const trimmed = name.trim();
  const invalid = trimmed.length < 1 || trimmed.length > 100;
  const inputId = `rename-${device.id}`;
  return (
    <form
      class="stack device-action"
      onSubmit={(e) => {
        e.preventDefault();
        if (!invalid) void rename.run(trimmed);
      }}
    >
      <label for={inputId}>
        New name for “{device.name}”{' '}
        <span class="hint" id={`${inputId}-hint`}>
          (1–100 characters)
        </span>
      </label>
      <input
        id={inputId}
        value={name}
        maxLength={100}
        required
        aria-describedby={`${inputId}-hint`}
        aria-invalid={invalid ? 'true' : undefined}
        onInput={(e) => setName(e.currentTarget.value)}
      />
      <div class="actions row">
        <button type="submit" class="primary" disabled={rename.busy || invalid}>
          Save name
        </button>
        <button type="button" onClick={onCancel} disabled={rename.busy}>
          Cancel
        </button>
        <Busy when={rename.busy}>Saving…</Busy>
      </div>
      <ProblemNotice error={rename.error} title={`Could not rename “${device.name}”`} />
    </form>
  );
}

function RevokeConfirm({
  device,
  onDone,
  onCancel,
}: {
  device: DevicesNode;
  onDone: (d: DevicesNode) => void;
  onCancel: () => void;
}) {
  const revoke = useAction(async () => {
    const r = await sdk.revokeDevice({ id: device.id });
    onDone(r.revokeDevice.device);
  });
  return (
    <div class="device-action" role="group" aria-labelledby={`revoke-${device.id}-q`}>
      <p id={`revoke-${device.id}-q`}>
        <strong>Revoke “{device.name}”?</strong> Its sign-in ends within a second and it receives no more
        intents. This cannot be undone: to use the device again, enrol it anew.
      </p>
      <div class="row">
        <button type="button" class="danger" disabled={revoke.busy} onClick={() => void revoke.run()}>
          Revoke “{device.name}”
        </button>
        <button type="button" onClick={onCancel} disabled={revoke.busy}>
          Keep it
        </button>
        <Busy when={revoke.busy}>Revoking…</Busy>
      </div>
      <ProblemNotice error={revoke.error} title={`Could not revoke “${device.name}”`} />
    </div>
  );
}

export function DeviceList({ pages }: { pages: Pages<DevicesNode> }) {
  const viewer = useViewer();
  const [pending, setPending] = useState<Pending>(null);
  /** Rows changed here (renamed, revoked), shown over the loaded page until the list reloads. */
  const [changed, setChanged] = useState<Record<string, DevicesNode>>({});
  const [notice, setNotice] = useState('');
  const finish = (before: DevicesNode, after: DevicesNode, what: string) => {
    setChanged((c) => ({ ...c, [after.id]: after }));
    setPending(null);
    setNotice(`${what} “${before.name}”${what === 'Renamed' ? ` to “${after.name}”` : ''}.`);
  };

  return (
    <section aria-labelledby="devices-heading">
      <h2 id="devices-heading">Devices of {viewer.tenant.name}</h2>
      <p class="hint" id="remote-actions-explained">
        Remote actions: whether the device accepts intents. Only the device's local user can switch this, in
        the desktop app; the console shows it and cannot change it.
      </p>
      <div role="status" class="ok">
        {notice}
      </div>
      <table>
        <caption class="muted">
          Devices enrolled in, waiting for, or revoked from this tenant. There is no “last seen” time: the API
          does not record one.
        </caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Platform</th>
            <th scope="col">Status</th>
            <th scope="col">Owner</th>
            <th scope="col" aria-describedby="remote-actions-explained">
              Remote actions
            </th>
            <th scope="col">Enrolled</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {pages.items.map((original) => {
            const d = changed[original.id] ?? original;
            const open = pending?.id === d.id ? pending.kind : null;
            return [
              <tr key={d.id}>
                <th scope="row">{d.name}</th>
                <td>{d.platform}</td>
                <td>
                  <span class={`badge device-status device-status-${d.status.toLowerCase()}`}>
                    {STATUS_TEXT[d.status] ?? d.status}
                  </span>
                  {d.revokedAt ? (
                    <div class="muted">
                      since <When at={d.revokedAt} />
                    </div>
                  ) : null}
                </td>
                <td>
                  {d.owner.displayName}
                  {d.owner.id === viewer.user.id ? <span class="muted"> (you)</span> : null}
                </td>
                <td>{d.remoteActionsEnabled ? <span class="ok">Enabled</span> : <span>Off</span>}</td>
                <td>
                  <When at={d.enrolledAt} empty="not yet" />
                </td>
                <td>
                  {d.status === 'REVOKED' ? (
                    <span class="muted">none</span>
                  ) : (
                    <div class="row">
                      <button
                        type="button"
                        aria-label={`Rename ${d.name}`}
                        aria-expanded={open === 'rename'}
                        onClick={() => setPending(open === 'rename' ? null : { kind: 'rename', id: d.id })}
                      >
                        Rename
                      </button>
                      <button
                        type="button"
                        class="danger"
                        aria-label={`Revoke ${d.name}`}
                        aria-expanded={open === 'revoke'}
                        onClick={() => setPending(open === 'revoke' ? null : { kind: 'revoke', id: d.id })}
                      >
                        Revoke
                      </button>
                    </div>
                  )}
                </td>
              </tr>,
              open ? (
                <tr key={`${d.id}-action`} class="device-action-row">
                  <td colSpan={7}>
                    {open === 'rename' ? (
                      <RenameForm
                        device={d}
                        onCancel={() => setPending(null)}
                        onDone={(after) => finish(d, after, 'Renamed')}
                      />
                    ) : (
                      <RevokeConfirm
                        device={d}
                        onCancel={() => setPending(null)}
                        onDone={(after) => finish(d, after, 'Revoked')}
                      />
                    )}
                  </td>
                </tr>
              ) : null,
            ];
          })}
        </tbody>
      </table>
      <PageControls pages={pages} noun="devices" />
    </section>
  );
}

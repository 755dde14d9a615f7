/**
 * The tenant's memory workspaces, a page at a time; create one (name, secret policy); delete one after an inline
 * confirmation, reporting how many records went with it.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { SecretPolicy, WorkspacesNode } from '@agentgraph/sdk';
import { sdk } from '../../api.js';
import { navigate } from '../../router.js';
import { PageControls } from '../../ui/paged-list.js';
import { ProblemNotice } from '../../ui/problem.js';
import { useAction } from '../../ui/use-action.js';
import { usePages } from '../../ui/use-pages.js';
import { roleCovers, useViewer } from '../../ui/viewer.js';
import { When } from '../../ui/when.js';
import { Busy } from '../../ui/busy.js';

export const POLICY_TEXT: Record<SecretPolicy, string> = {
  REJECT: 'Reject: a write holding a secret is refused',
  REDACT: 'Redact: secrets are replaced by a marker and the write is kept',
};

function CreateWorkspace() {
  const [name, setName] = useState('');
  const [policy, setPolicy] = useState<SecretPolicy>('REJECT');
  const create = useAction(async () => {
    const data = await sdk.createWorkspace({ input: { name: name.trim(), secretPolicy: policy } });
    navigate(`/memory?workspace=${encodeURIComponent(data.createWorkspace.workspace.id)}`);
  });
  return (
    <section aria-labelledby="ws-create-heading" class="panel">
      <h2 id="ws-create-heading">Create a workspace</h2>
      <form
        class="stack"
        onSubmit={(e) => {
          e.preventDefault();
          if (name.trim() && !create.busy) void create.run();
        }}
      >
        <label for="ws-name">Workspace name</label>
        <input
          id="ws-name"
          value={name}
          maxLength={200}
          required
          onInput={(e) => setName(e.currentTarget.value)}
        />
        <label for="ws-policy">Secret policy</label>
        <select
          id="ws-policy"
          value={policy}
          aria-describedby="ws-policy-hint"
          onChange={(e) => setPolicy(e.currentTarget.value as SecretPolicy)}
        >
          <option value="REJECT">{POLICY_TEXT.REJECT}</option>
          <option value="REDACT">{POLICY_TEXT.REDACT}</option>
        </select>
        <p id="ws-policy-hint" class="hint">
          What happens when a record looks like it holds a secret (an API key, a private key, a password). It
          cannot be changed later.
        </p>
        <ProblemNotice error={create.error} title="The workspace was not created" />
        <div class="actions row">
          <button type="submit" class="primary" disabled={!name.trim() || create.busy}>
            Create workspace
          </button>
          <Busy when={create.busy}>Creating…</Busy>
        </div>
      </form>
    </section>
  );
}

export function WorkspaceList() {
  const viewer = useViewer();
  const canWrite = roleCovers(viewer.role, 'OPERATOR');
  const pages = usePages<WorkspacesNode>(async (after) => {
    const data = await sdk.workspaces({ first: 25, after: after ?? null });
    return { nodes: data.workspaces.edges.map((e) => e.node), pageInfo: data.workspaces.pageInfo };
  }, []);
  const [confirming, setConfirming] = useState<WorkspacesNode | null>(null);
  const [deleted, setDeleted] = useState<string>('');
  const confirmHeading = useRef<HTMLHeadingElement>(null);
  useEffect(() => confirmHeading.current?.focus(), [confirming]);
  const remove = useAction(async (ws: WorkspacesNode) => {
    const data = await sdk.deleteWorkspace({ id: ws.id });
    const n = data.deleteWorkspace.recordsDeleted;
    setConfirming(null);
    setDeleted(`Deleted workspace “${ws.name}” and its ${n} record${n === 1 ? '' : 's'}.`);
    pages.reload();
  });

  return (
    <>
      <h1 tabIndex={-1}>Memory</h1>
      <p class="muted">
        Workspaces hold memory records (notes, facts, documents) that agents and people write, search and
        share.
      </p>
      <p role="status" class="ok">
        {deleted}
      </p>
      {canWrite ? <CreateWorkspace /> : null}
      <section aria-labelledby="ws-list-heading">
        <h2 id="ws-list-heading">Workspaces</h2>
        {pages.items.length > 0 ? (
          <table>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Secret policy</th>
                <th scope="col">Created by</th>
                <th scope="col">Created</th>
                {canWrite ? <th scope="col">Actions</th> : null}
              </tr>
            </thead>
            <tbody>
              {pages.items.map((ws) => (
                <tr key={ws.id}>
                  <td>
                    <a href={`/memory?workspace=${encodeURIComponent(ws.id)}`}>{ws.name}</a>
                  </td>
                  <td>{ws.secretPolicy}</td>
                  <td>{ws.createdBy.displayName}</td>
                  <td>
                    <When at={ws.createdAt} />
                  </td>
                  {canWrite ? (
                    <td>
                      <button
                        type="button"
                        class="danger"
                        aria-label={`Delete workspace ${ws.name}`}
                        onClick={() => {
                          remove.clear();
                          setConfirming(ws);
                        }}
                      >
                        Delete
                      </button>
                    </td>
                  ) : null}
                </tr>
              ))}
            </tbody>
          </table>
        ) : null}
        <PageControls pages={pages} noun="workspaces" />
      </section>
      {confirming ? (
        <section aria-labelledby="ws-confirm-heading" class="panel memory-confirm">
          <h2 id="ws-confirm-heading" tabIndex={-1} ref={confirmHeading}>
            Delete workspace “{confirming.name}”?
          </h2>
          <p>Every record in it is deleted too, with everything derived from them. This cannot be undone.</p>
          <ProblemNotice error={remove.error} title="The workspace was not deleted" />
          <div class="row">
            <button
              type="button"
              class="danger"
              disabled={remove.busy}
              onClick={() => void remove.run(confirming)}
            >
              Delete workspace and its records
            </button>
            <button type="button" disabled={remove.busy} onClick={() => setConfirming(null)}>
              Cancel
            </button>
            <Busy when={remove.busy}>Deleting…</Busy>
          </div>
        </section>
      ) : null}
    </>
  );
}

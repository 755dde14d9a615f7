/** One workspace: its facts, a link to write a new record, its records (filtered) and search. */
import { useEffect, useState } from 'preact/hooks';
import type { WorkspaceData } from '@agentgraph/sdk';
import { sdk } from '../../api.js';
import { ProblemNotice } from '../../ui/problem.js';
import { roleCovers, useViewer } from '../../ui/viewer.js';
import { When } from '../../ui/when.js';
import { Records } from './records.js';
import { Search } from './search.js';
import { POLICY_TEXT } from './workspace-list.js';

export function WorkspaceView({ workspaceId }: { workspaceId: string }) {
  const viewer = useViewer();
  const canWrite = roleCovers(viewer.role, 'OPERATOR');
  const [ws, setWs] = useState<WorkspaceData['workspace'] | undefined>(undefined);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    sdk.workspace({ id: workspaceId }).then((r) => setWs(r.workspace), setError);
  }, [workspaceId]);

  return (
    <>
      <p>
        <a href="/memory">← All workspaces</a>
      </p>
      <h1 tabIndex={-1}>{ws ? `Workspace ${ws.name}` : ws === null ? 'Workspace not found' : 'Workspace'}</h1>
      <ProblemNotice error={error} title="Could not load the workspace" />
      {ws === undefined && !error ? (
        <p role="status" class="muted">
          <span class="spinner" aria-hidden="true" /> Loading the workspace…
        </p>
      ) : null}
      {ws === null ? (
        <p>
          This workspace does not exist or is not visible to you. <a href="/memory">Back to the list</a>.
        </p>
      ) : null}
      {ws ? (
        <>
          <dl class="facts">
            <dt>Secret policy</dt>
            <dd>{POLICY_TEXT[ws.secretPolicy]}</dd>
            <dt>Embeddings</dt>
            <dd>{ws.embeddingDimensions ? `${ws.embeddingDimensions} dimensions` : 'none yet'}</dd>
            <dt>Created</dt>
            <dd>
              <When at={ws.createdAt} /> by {ws.createdBy.displayName}
            </dd>
          </dl>
          {canWrite ? (
            <p>
              <a
                class="button primary"
                href={`/memory?workspace=${encodeURIComponent(workspaceId)}&record=new`}
              >
                New record
              </a>
            </p>
          ) : null}
          <Search workspaceId={workspaceId} />
          <Records workspaceId={workspaceId} />
        </>
      ) : null}
    </>
  );
}

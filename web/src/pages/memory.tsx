/**
 * Memory: workspaces (`/memory`), one workspace's records and search (`/memory?workspace=<id>`), one record
 * (`&record=<id>`; `&record=new` makes a client-side UUID and opens an empty record under it). Parts live in
 * pages/memory/.
 */
import { useEffect, useRef } from 'preact/hooks';
import { navigate, useRoute } from '../router.js';
import { RecordEditor } from './memory/record-editor.js';
import { recordHref } from './memory/records.js';
import { WorkspaceList } from './memory/workspace-list.js';
import { WorkspaceView } from './memory/workspace-view.js';

export function MemoryPage() {
  const { query } = useRoute();
  const workspaceId = query.get('workspace');
  const recordId = query.get('record');
  const isNew = query.has('new');
  const view = `${workspaceId ?? ''}/${recordId ?? ''}`;
  const first = useRef(true);

  // A new record gets its id here, once: the URL then names it, so a reload edits the same record.
  useEffect(() => {
    if (workspaceId && recordId === 'new')
      navigate(`${recordHref(workspaceId, crypto.randomUUID())}&new=1`, true);
  }, [workspaceId, recordId]);

  // Sub-views keep the path: move focus to the new view's heading ourselves.
  useEffect(() => {
    if (first.current) first.current = false;
    else document.querySelector<HTMLElement>('main h1')?.focus();
  }, [view]);

  if (!workspaceId) return <WorkspaceList />;
  if (recordId === 'new') return <h1 tabIndex={-1}>New memory record</h1>;
  if (recordId)
    return <RecordEditor key={recordId} workspaceId={workspaceId} recordId={recordId} isNew={isNew} />;
  return <WorkspaceView key={workspaceId} workspaceId={workspaceId} />;
}

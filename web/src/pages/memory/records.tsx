/**
 * A workspace's records, most recently updated first, a page at a time, with the server's filters (kind, tag,
 * author, updated since). The filter applies when submitted; the cursor restarts with it.
 */
import { useEffect, useState } from 'preact/hooks';
import type { MemoryRecordFilterInput, MembersNode, WorkspaceRecordsNode } from '@agentgraph/sdk';
import { sdk } from '../../api.js';
import { PageControls } from '../../ui/paged-list.js';
import { usePages } from '../../ui/use-pages.js';
import { useViewer } from '../../ui/viewer.js';
import { When } from '../../ui/when.js';

export function recordHref(workspaceId: string, recordId: string): string {
  return `/memory?workspace=${encodeURIComponent(workspaceId)}&record=${encodeURIComponent(recordId)}`;
}

/** The first line of a record's content, shortened for a list. */
export function snippet(content: string, max = 120): string {
  const line = content.trim().split('\n', 1)[0] ?? '';
  if (!line) return '(empty)';
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

interface FilterDraft {
  kind: string;
  tag: string;
  authorId: string;
  updatedSince: string;
}

const EMPTY: FilterDraft = { kind: '', tag: '', authorId: '', updatedSince: '' };

/** The form's values as the API's filter (empty fields left out; a local date-time becomes an ISO instant). */
export function filterOf(d: FilterDraft): MemoryRecordFilterInput {
  const f: MemoryRecordFilterInput = {};
  if (d.kind.trim()) f.kind = d.kind.trim();
  if (d.tag.trim()) f.tag = d.tag.trim();
  if (d.authorId) f.authorId = d.authorId;
  if (d.updatedSince) {
    const t = new Date(d.updatedSince);
    if (!Number.isNaN(t.getTime())) f.updatedSince = t.toISOString();
  }
  return f;
}

/** The tenant's members for the author filter; empty when the list cannot be read (the filter still offers "me"). */
function useMembers(): readonly MembersNode[] {
  const [members, setMembers] = useState<readonly MembersNode[]>([]);
  useEffect(() => {
    sdk.members({ first: 100 }).then(
      (r) => setMembers(r.tenant.members.edges.map((e) => e.node)),
      () => setMembers([]),
    );
  }, []);
  return members;
}

export function Records({ workspaceId }: { workspaceId: string }) {
  const viewer = useViewer();
  const members = useMembers();
  const [draft, setDraft] = useState<FilterDraft>(EMPTY);
  const [applied, setApplied] = useState<MemoryRecordFilterInput>({});
  const pages = usePages<WorkspaceRecordsNode>(
    async (after) => {
      const data = await sdk.workspaceRecords({
        workspaceId,
        filter: applied,
        first: 20,
        after: after ?? null,
      });
      if (!data.workspace) return { nodes: [], pageInfo: { hasNextPage: false } };
      return {
        nodes: data.workspace.records.edges.map((e) => e.node),
        pageInfo: data.workspace.records.pageInfo,
      };
    },
    [workspaceId, JSON.stringify(applied)],
  );
  const set = (k: keyof FilterDraft) => (e: { currentTarget: { value: string } }) =>
    setDraft({ ...draft, [k]: e.currentTarget.value });
  const nameOf = (id: string) =>
    id === viewer.user.id
      ? `${viewer.user.displayName} (you)`
      : (members.find((m) => m.user.id === id)?.user.displayName ?? id);
  const active = Object.keys(applied).length;

  return (
    <section aria-labelledby="records-heading">
      <h2 id="records-heading">Records</h2>
      <form
        class="memory-filters"
        aria-labelledby="filters-heading"
        onSubmit={(e) => {
          e.preventDefault();
          setApplied(filterOf(draft));
        }}
      >
        <h3 id="filters-heading">Filter records</h3>
        <div class="memory-filter-grid">
          <div>
            <label for="filter-kind">Kind</label>
            <input id="filter-kind" value={draft.kind} maxLength={64} onInput={set('kind')} />
          </div>
          <div>
            <label for="filter-tag">Tag</label>
            <input id="filter-tag" value={draft.tag} maxLength={64} onInput={set('tag')} />
          </div>
          <div>
            <label for="filter-author">Author</label>
            <select id="filter-author" value={draft.authorId} onChange={set('authorId')}>
              <option value="">Anyone</option>
              <option value={viewer.user.id}>{viewer.user.displayName} (you)</option>
              {members
                .filter((m) => m.user.id !== viewer.user.id)
                .map((m) => (
                  <option key={m.user.id} value={m.user.id}>
                    {m.user.displayName}
                  </option>
                ))}
            </select>
          </div>
          <div>
            <label for="filter-since">Updated since</label>
            <input
              id="filter-since"
              type="datetime-local"
              value={draft.updatedSince}
              aria-describedby="filter-since-hint"
              onInput={set('updatedSince')}
            />
            <span id="filter-since-hint" class="hint">
              Your local time.
            </span>
          </div>
        </div>
        <div class="row memory-actions">
          <button type="submit">Apply filters</button>
          <button
            type="button"
            disabled={active === 0 && Object.values(draft).every((v) => !v)}
            onClick={() => {
              setDraft(EMPTY);
              setApplied({});
            }}
          >
            Clear filters
          </button>
          <span class="muted" role="status">
            {active ? `${active} filter${active === 1 ? '' : 's'} applied.` : 'No filter applied.'}
          </span>
        </div>
      </form>
      {pages.items.length > 0 ? (
        <table>
          <thead>
            <tr>
              <th scope="col">Content</th>
              <th scope="col">Kind</th>
              <th scope="col">Tags</th>
              <th scope="col">Version</th>
              <th scope="col">Author</th>
              <th scope="col">Updated</th>
              <th scope="col">Expires</th>
            </tr>
          </thead>
          <tbody>
            {pages.items.map((r) => (
              <tr key={r.id}>
                <td>
                  <a href={recordHref(workspaceId, r.id)}>{snippet(r.content)}</a>
                </td>
                <td>
                  <code>{r.kind}</code>
                </td>
                <td>{r.tags.length ? r.tags.join(', ') : <span class="muted">none</span>}</td>
                <td>{r.version}</td>
                <td>{nameOf(r.author.id)}</td>
                <td>
                  <When at={r.updatedAt} />
                </td>
                <td>{r.expiresAt ? <When at={r.expiresAt} /> : <span class="muted">never</span>}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      <PageControls pages={pages} noun="records" />
    </section>
  );
}

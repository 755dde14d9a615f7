/**
 * The review queue: releases that passed analysis and wait for a decision (IN_REVIEW), oldest upload first, a page
 * at a time, each with its findings count and Approve / Reject. The server refuses reviewers below ADMIN and the
 * member who uploaded the package (separation of duties); the refusal shows with its code.
 */
import { useState } from 'preact/hooks';
import type { ReviewQueueData } from '@agentgraph/sdk';
import { sdk } from '../../api.js';
import { PageControls } from '../../ui/paged-list.js';
import { usePages } from '../../ui/use-pages.js';
import { useViewer } from '../../ui/viewer.js';
import { ReviewActions } from './review-actions.js';
import { formatBytes } from './states.js';
import { When } from '../../ui/when.js';

type Queued = ReviewQueueData['reviewQueue']['edges'][number]['node'];

export function ReviewQueue() {
  const viewer = useViewer();
  const [notice, setNotice] = useState<{ what: string; id: string; label: string } | null>(null);
  const [decided, setDecided] = useState<ReadonlySet<string>>(new Set());
  const pages = usePages<Queued>(async (after) => {
    const r = await sdk.reviewQueue({ first: 20, ...(after ? { after } : {}) });
    return { nodes: r.reviewQueue.edges.map((e) => e.node), pageInfo: r.reviewQueue.pageInfo };
  }, []);
  const waiting = pages.items.filter((r) => !decided.has(r.id));
  return (
    <>
      <h1 tabIndex={-1}>Review queue</h1>
      <p>
        <a href="/catalog">All plugins</a>
      </p>
      <p class="muted">
        Releases whose packages passed analysis, oldest upload first. Admins and owners decide; nobody decides
        on a package they uploaded themselves.
      </p>
      <div role="status">
        {notice ? (
          <p class="ok">
            {notice.what}{' '}
            <a href={`/catalog?release=${encodeURIComponent(notice.id)}`}>Open {notice.label}</a>
          </p>
        ) : null}
      </div>
      <section aria-labelledby="queue-heading">
        <h2 id="queue-heading">Waiting for a decision</h2>
        <table>
          <thead>
            <tr>
              <th scope="col">Release</th>
              <th scope="col">Uploaded</th>
              <th scope="col">Size</th>
              <th scope="col">Analysis</th>
              <th scope="col">Decision</th>
            </tr>
          </thead>
          <tbody>
            {waiting.map((r) => {
              const findings = r.analysis?.findings.edges.length ?? 0;
              return (
                <tr key={r.id}>
                  <th scope="row">
                    <a href={`/catalog?release=${encodeURIComponent(r.id)}`}>
                      {r.plugin.name} {r.version}
                    </a>
                  </th>
                  <td>
                    {r.package ? <When at={r.package.uploadedAt} /> : '—'}
                    {r.package?.uploadedBy.id === viewer.user.id ? <div class="muted">by you</div> : null}
                  </td>
                  <td>{r.package ? formatBytes(r.package.sizeBytes) : '—'}</td>
                  <td>
                    {r.analysis?.verdict ?? '—'}, {findings} finding{findings === 1 ? '' : 's'}
                  </td>
                  <td>
                    <ReviewActions
                      release={r}
                      onChanged={(what) => {
                        setNotice({ what, id: r.id, label: `${r.plugin.name} ${r.version}` });
                        setDecided((s) => new Set([...s, r.id]));
                      }}
                    />
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
        <PageControls pages={{ ...pages, items: waiting }} noun="releases in review" />
      </section>
    </>
  );
}

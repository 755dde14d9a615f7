/**
 * One release: state, package digests, the analysis (progress while it runs: polled until it leaves QUARANTINED),
 * its report (findings, a page of 20 at a time; the signed envelope), the decisions it allows (review-actions.tsx),
 * its channel, and the append-only audit trail.
 */
import { useCallback, useEffect, useState } from 'preact/hooks';
import type { ReleaseData } from '@agentgraph/sdk';
import { sdk } from '../../api.js';
import { ProblemNotice } from '../../ui/problem.js';
import { useViewer } from '../../ui/viewer.js';
import { ReviewActions } from './review-actions.js';
import { CHANNEL_TEXT, formatBytes, RELEASE_STATE_TEXT } from './states.js';
import { UploadForm } from './upload-form.js';
import { When } from '../../ui/when.js';

type Release = NonNullable<ReleaseData['release']>;

/** How often a running analysis is asked about. */
const POLL_MS = 1000;
const FINDINGS_PAGE = 20;

const ACTION_TEXT: Record<string, string> = {
  UPLOADED: 'Package uploaded',
  UPLOAD_REJECTED: 'Upload refused',
  ANALYSIS_PASSED: 'Analysis passed',
  ANALYSIS_FAILED: 'Analysis failed',
  APPROVED: 'Approved',
  REJECTED: 'Rejected',
  APPEALED: 'Appealed',
  PROMOTED: 'Promoted',
  REVOKED: 'Revoked',
};

function Findings({ analysis }: { analysis: NonNullable<Release['analysis']> }) {
  const [shown, setShown] = useState(FINDINGS_PAGE);
  const all = analysis.findings.edges.map((e) => e.node);
  if (all.length === 0) return <p>No findings.</p>;
  return (
    <>
      <table>
        <caption class="muted">
          {all.length} finding{all.length === 1 ? '' : 's'}, in the order the analyzer found them
        </caption>
        <thead>
          <tr>
            <th scope="col">Rule</th>
            <th scope="col">Entry</th>
            <th scope="col">Finding</th>
          </tr>
        </thead>
        <tbody>
          {all.slice(0, shown).map((f, i) => (
            <tr key={i}>
              <th scope="row">
                <code>{f.rule}</code>
              </th>
              <td>{f.path ? <code>{f.path}</code> : <span class="muted">the package</span>}</td>
              <td>{f.message}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {shown < all.length ? (
        <button type="button" onClick={() => setShown((n) => n + FINDINGS_PAGE)}>
          Show more findings ({all.length - shown} more)
        </button>
      ) : null}
    </>
  );
}

function AnalysisReport({ release }: { release: Release }) {
  const a = release.analysis;
  if (!a) return <p class="muted">No analysis yet: the package has not been uploaded.</p>;
  const running = a.state === 'QUEUED' || a.state === 'RUNNING';
  return (
    <>
      <dl class="facts">
        <dt>Analysis</dt>
        <dd>
          {a.state === 'SUCCEEDED'
            ? 'finished'
            : a.state === 'FAILED'
              ? 'the analyzer failed'
              : a.state.toLowerCase()}
        </dd>
        <dt>Verdict</dt>
        <dd>
          {a.verdict === 'PASS' ? (
            <strong class="ok">PASS</strong>
          ) : a.verdict === 'FAIL' ? (
            <strong class="danger">FAIL</strong>
          ) : (
            <span class="muted">{running ? 'pending' : 'none'}</span>
          )}
        </dd>
        {a.reason ? (
          <>
            <dt>Reason</dt>
            <dd>{a.reason}</dd>
          </>
        ) : null}
        <dt>Attempts</dt>
        <dd>{a.attempts}</dd>
        <dt>Started</dt>
        <dd>
          <When at={a.startedAt} empty="not yet" />
        </dd>
        <dt>Finished</dt>
        <dd>
          <When at={a.finishedAt} empty="not yet" />
        </dd>
        {a.keyId ? (
          <>
            <dt>Signed by key</dt>
            <dd>
              <code class="break">{a.keyId}</code>
            </dd>
          </>
        ) : null}
      </dl>
      {running ? null : (
        <>
          <h3>Findings</h3>
          <Findings analysis={a} />
        </>
      )}
      {a.envelope ? (
        <details>
          <summary>Signed statement (DSSE envelope)</summary>
          <pre class="envelope">{a.envelope}</pre>
        </details>
      ) : null}
    </>
  );
}

export function ReleaseView({ releaseId }: { releaseId: string }) {
  const viewer = useViewer();
  const [release, setRelease] = useState<Release | null | undefined>(undefined);
  const [error, setError] = useState<unknown>(null);
  const [notice, setNotice] = useState('');
  const load = useCallback(async () => {
    try {
      const r = await sdk.release({ id: releaseId });
      setRelease(r.release);
      setError(null);
    } catch (err) {
      setError(err);
    }
  }, [releaseId]);
  useEffect(() => void load(), [load]);
  const analysing = release?.state === 'QUARANTINED';
  // While the analysis runs, ask again every second (and stop when the view goes away or the state moves on).
  useEffect(() => {
    if (!analysing) return undefined;
    const timer = setInterval(() => void load(), POLL_MS);
    return () => clearInterval(timer);
  }, [analysing, load]);

  if (release === undefined) {
    return (
      <>
        <h1 tabIndex={-1}>Release</h1>
        <p>
          <a href="/catalog">All plugins</a>
        </p>
        {error ? (
          <ProblemNotice error={error} title="Could not load the release" />
        ) : (
          <p role="status" class="muted">
            <span class="spinner" aria-hidden="true" /> Loading the release…
          </p>
        )}
      </>
    );
  }
  if (release === null) {
    return (
      <>
        <h1 tabIndex={-1}>Release not found</h1>
        <p>
          No release of {viewer.tenant.name} has this id. <a href="/catalog">Back to all plugins</a>.
        </p>
      </>
    );
  }
  const label = `${release.plugin.name} ${release.version}`;
  const pkg = release.package;
  return (
    <>
      <h1 tabIndex={-1}>{label}</h1>
      <p>
        <a href={`/catalog?plugin=${encodeURIComponent(release.plugin.id)}`}>{release.plugin.name}</a> ·{' '}
        <a href="/catalog?view=review">Review queue</a> · <a href="/catalog">All plugins</a>
      </p>
      <div role="status" class="release-status">
        {analysing ? (
          <div class="analysis-progress">
            <label for="analysis-progress">
              Analysing the package in the sandbox
              {release.analysis
                ? ` (${release.analysis.state.toLowerCase()}, attempt ${release.analysis.attempts})`
                : ''}
              …
            </label>
            <progress id="analysis-progress" />
          </div>
        ) : null}
        {notice ? <p class="ok">{notice}</p> : null}
      </div>
      <dl class="facts">
        <dt>State</dt>
        <dd>
          <span class={`badge release-state release-state-${release.state.toLowerCase()}`}>
            {RELEASE_STATE_TEXT[release.state] ?? release.state}
          </span>
        </dd>
        {release.stateReason ? (
          <>
            <dt>Why</dt>
            <dd>{release.stateReason}</dd>
          </>
        ) : null}
        <dt>Channel</dt>
        <dd>{release.channel ? CHANNEL_TEXT[release.channel] : <span class="muted">not published</span>}</dd>
        {release.targetPath ? (
          <>
            <dt>TUF target</dt>
            <dd>
              <code class="break">{release.targetPath}</code>
            </dd>
          </>
        ) : null}
        <dt>Package</dt>
        <dd>{pkg ? formatBytes(pkg.sizeBytes) : <span class="muted">not uploaded</span>}</dd>
        {pkg ? (
          <>
            <dt>Uploaded</dt>
            <dd>
              <When at={pkg.uploadedAt} />
              {pkg.uploadedBy.id === viewer.user.id ? ' by you' : ' by another member'}
            </dd>
            <dt>SHA-256</dt>
            <dd>
              <code class="break">{pkg.sha256}</code>
            </dd>
            <dt>SHA-512</dt>
            <dd>
              <code class="break">{pkg.sha512}</code>
            </dd>
          </>
        ) : null}
      </dl>
      <ProblemNotice error={error} title="Could not refresh the release" />

      {release.state === 'AWAITING_UPLOAD' ? (
        <section aria-labelledby="release-upload-heading">
          <h2 id="release-upload-heading">Upload the package</h2>
          <UploadForm
            pluginName={release.plugin.name}
            version={release.version}
            onUploaded={() => {
              setNotice('Uploaded: the package is quarantined while it is analysed.');
              void load();
            }}
          />
        </section>
      ) : null}

      <section aria-labelledby="analysis-heading">
        <h2 id="analysis-heading">Analysis report</h2>
        <AnalysisReport release={release} />
      </section>

      {['IN_REVIEW', 'REJECTED', 'APPROVED'].includes(release.state) ? (
        <section aria-labelledby="decision-heading">
          <h2 id="decision-heading">
            {release.state === 'APPROVED' ? 'Channel' : release.state === 'REJECTED' ? 'Appeal' : 'Review'}
          </h2>
          {release.state === 'APPROVED' ? (
            <p>
              Published in the <strong>{CHANNEL_TEXT[release.channel ?? ''] ?? release.channel}</strong>{' '}
              channel. Promotion moves it alpha → beta → stable.
            </p>
          ) : null}
          <ReviewActions
            release={release}
            onChanged={(what) => {
              setNotice(what);
              void load();
            }}
          />
        </section>
      ) : null}

      <section aria-labelledby="trail-heading">
        <h2 id="trail-heading">Audit trail</h2>
        {release.decisions.edges.length === 0 ? (
          <p class="muted">Nothing yet.</p>
        ) : (
          <ol class="timeline">
            {release.decisions.edges.map(({ cursor, node: d }) => (
              <li key={cursor}>
                <strong>{ACTION_TEXT[d.action] ?? d.action}</strong>
                {d.channel ? ` (${CHANNEL_TEXT[d.channel] ?? d.channel})` : ''} — <When at={d.at} />
                {d.actor
                  ? d.actor.id === viewer.user.id
                    ? ' by you'
                    : ' by another member'
                  : ' by the pipeline'}
                {d.reason ? <div class="muted">{d.reason}</div> : null}
              </li>
            ))}
          </ol>
        )}
        {release.decisions.pageInfo.hasNextPage ? <p class="muted">The first 50 steps are shown.</p> : null}
      </section>
    </>
  );
}

/**
 * One plugin: its facts, declaring a new release (a version), uploading its package, and its releases (newest
 * first, a page at a time) with their state and channel.
 */
import { useEffect, useState } from 'preact/hooks';
import type { PluginData } from '@agentgraph/sdk';
import { sdk } from '../../api.js';
import { navigate } from '../../router.js';
import { ProblemNotice } from '../../ui/problem.js';
import { useAction } from '../../ui/use-action.js';
import { useViewer } from '../../ui/viewer.js';
import { PageControls } from '../../ui/paged-list.js';
import { usePages } from '../../ui/use-pages.js';
import { CHANNEL_TEXT, formatBytes, RELEASE_STATE_TEXT } from './states.js';
import { UploadForm } from './upload-form.js';
import { When } from '../../ui/when.js';
import { Busy } from '../../ui/busy.js';

type Plugin = NonNullable<PluginData['plugin']>;
type PluginRelease = Plugin['releases']['edges'][number]['node'];

export function PluginView({ pluginId }: { pluginId: string }) {
  const viewer = useViewer();
  const [plugin, setPlugin] = useState<Plugin | null | undefined>(undefined);
  const [loadError, setLoadError] = useState<unknown>(null);
  const [version, setVersion] = useState('');
  const [declared, setDeclared] = useState<{ id: string; version: string } | null>(null);
  useEffect(() => {
    sdk.plugin({ id: pluginId, first: 1 }).then((r) => setPlugin(r.plugin), setLoadError);
  }, [pluginId]);
  const releases = usePages<PluginRelease>(
    async (after) => {
      const r = await sdk.plugin({ id: pluginId, first: 20, after: after ?? null });
      const connection = r.plugin?.releases;
      return {
        nodes: connection?.edges.map((e) => e.node) ?? [],
        pageInfo: connection?.pageInfo ?? { hasNextPage: false },
      };
    },
    [pluginId],
  );
  const declare = useAction(async (v: string) => {
    const r = await sdk.declareRelease({ pluginId, input: { version: v } });
    const release = r.declareRelease.release;
    setDeclared({ id: release.id, version: release.version });
    setVersion('');
    releases.reload();
  });
  const uploaded = (releaseId: string) => navigate(`/catalog?release=${encodeURIComponent(releaseId)}`);

  if (plugin === undefined) {
    return (
      <>
        <h1 tabIndex={-1}>Plugin</h1>
        <p>
          <a href="/catalog">All plugins</a>
        </p>
        {loadError ? (
          <ProblemNotice error={loadError} title="Could not load the plugin" />
        ) : (
          <p role="status" class="muted">
            <span class="spinner" aria-hidden="true" /> Loading the plugin…
          </p>
        )}
      </>
    );
  }
  if (plugin === null) {
    return (
      <>
        <h1 tabIndex={-1}>Plugin not found</h1>
        <p>
          No plugin of {viewer.tenant.name} has this id. <a href="/catalog">Back to all plugins</a>.
        </p>
      </>
    );
  }
  return (
    <>
      <h1 tabIndex={-1}>{plugin.displayName}</h1>
      <p>
        <a href="/catalog">All plugins</a> · <a href="/catalog?view=review">Review queue</a>
      </p>
      <dl class="facts">
        <dt>Name</dt>
        <dd>
          <code>{plugin.name}</code>
        </dd>
        <dt>Description</dt>
        <dd>{plugin.description || <span class="muted">none</span>}</dd>
        <dt>Publisher</dt>
        <dd>
          {plugin.publisher.displayName} ({plugin.publisher.email})
        </dd>
        <dt>Created</dt>
        <dd>
          <When at={plugin.createdAt} />
        </dd>
      </dl>

      <section aria-labelledby="declare-heading">
        <h2 id="declare-heading">Declare a release</h2>
        <p class="muted">
          A release is one version. Declare it, then upload its package: it is analysed, then reviewed.
          Versions are immutable.
        </p>
        <form
          class="stack"
          onSubmit={(e) => {
            e.preventDefault();
            if (version.trim()) void declare.run(version.trim());
          }}
        >
          <label for="release-version">
            Version{' '}
            <span class="hint" id="release-version-hint">
              (semantic version MAJOR.MINOR.PATCH, e.g. 1.4.0)
            </span>
          </label>
          <input
            id="release-version"
            required
            value={version}
            autocomplete="off"
            aria-describedby="release-version-hint"
            onInput={(e) => setVersion(e.currentTarget.value)}
          />
          <div class="actions row">
            <button type="submit" class="primary" disabled={declare.busy}>
              Declare release
            </button>
            <Busy when={declare.busy}>Declaring…</Busy>
          </div>
          <ProblemNotice error={declare.error} title="Could not declare the release" />
        </form>
      </section>

      {declared ? (
        <section aria-labelledby="upload-heading">
          <h2 id="upload-heading">
            Upload the package for {plugin.name} {declared.version}
          </h2>
          <p role="status" class="ok">
            Declared {plugin.name} {declared.version}: it awaits its package.
          </p>
          <UploadForm
            key={declared.id}
            pluginName={plugin.name}
            version={declared.version}
            onUploaded={uploaded}
          />
        </section>
      ) : (
        <section aria-labelledby="upload-any-heading">
          <h2 id="upload-any-heading">Upload a package</h2>
          <p class="muted">
            For a declared version awaiting its package, or a new one (declared on the fly).
          </p>
          <UploadForm pluginName={plugin.name} onUploaded={uploaded} />
        </section>
      )}

      <section aria-labelledby="releases-heading">
        <h2 id="releases-heading">Releases</h2>
        {releases.items.length > 0 ? (
          <table>
            <caption class="muted">
              Newest declared first. Open one for its package, analysis and decisions.
            </caption>
            <thead>
              <tr>
                <th scope="col">Version</th>
                <th scope="col">State</th>
                <th scope="col">Channel</th>
                <th scope="col">Package</th>
                <th scope="col">Declared</th>
              </tr>
            </thead>
            <tbody>
              {releases.items.map((r) => (
                <tr key={r.id}>
                  <td>
                    <a href={`/catalog?release=${encodeURIComponent(r.id)}`}>
                      {plugin.name} {r.version}
                    </a>
                  </td>
                  <td>
                    {RELEASE_STATE_TEXT[r.state] ?? r.state}
                    {r.stateReason ? <span class="muted"> ({r.stateReason})</span> : null}
                  </td>
                  <td>{r.channel ? CHANNEL_TEXT[r.channel] : <span class="muted">none</span>}</td>
                  <td>
                    {r.package ? (
                      formatBytes(r.package.sizeBytes)
                    ) : (
                      <span class="muted">awaiting upload</span>
                    )}
                  </td>
                  <td>
                    <When at={r.createdAt} /> by {r.createdBy.displayName}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        ) : null}
        <PageControls pages={releases} noun="releases" />
      </section>
    </>
  );
}

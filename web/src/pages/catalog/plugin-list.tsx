/**
 * The tenant's plugins, a page at a time (name, display name, publisher, created), a link to each plugin and to the
 * review queue, and the form that creates a plugin. The server decides who may (PUBLISHER, ADMIN or OWNER).
 */
import { useState } from 'preact/hooks';
import type { PluginsNode } from '@agentgraph/sdk';
import { sdk } from '../../api.js';
import { PageControls } from '../../ui/paged-list.js';
import { ProblemNotice } from '../../ui/problem.js';
import { useAction } from '../../ui/use-action.js';
import { usePages } from '../../ui/use-pages.js';
import { useViewer } from '../../ui/viewer.js';
import { navigate } from '../../router.js';
import { When } from '../../ui/when.js';
import { Busy } from '../../ui/busy.js';

const NAME = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

function CreatePluginForm({ onCreated }: { onCreated: (id: string) => void }) {
  const [name, setName] = useState('');
  const [displayName, setDisplayName] = useState('');
  const [description, setDescription] = useState('');
  const [invalid, setInvalid] = useState(false);
  const create = useAction(async () => {
    const r = await sdk.createPlugin({
      input: { name, displayName, ...(description.trim() ? { description: description.trim() } : {}) },
    });
    onCreated(r.createPlugin.plugin.id);
  });
  return (
    <section aria-labelledby="create-plugin-heading">
      <h2 id="create-plugin-heading">Create a plugin</h2>
      <form
        class="stack"
        onSubmit={(e) => {
          e.preventDefault();
          const bad = !NAME.test(name);
          setInvalid(bad);
          if (!bad && displayName.trim()) void create.run();
        }}
      >
        <label for="plugin-name">
          Name{' '}
          <span class="hint" id="plugin-name-hint">
            (unique in the tenant: lowercase letters, digits and dashes, e.g. web-search)
          </span>
        </label>
        <input
          id="plugin-name"
          required
          value={name}
          aria-describedby={invalid ? 'plugin-name-hint plugin-name-error' : 'plugin-name-hint'}
          aria-invalid={invalid}
          autocomplete="off"
          spellcheck={false}
          onInput={(e) => setName(e.currentTarget.value)}
        />
        {invalid ? (
          <p class="danger" id="plugin-name-error">
            Use lowercase letters, digits and single dashes only.
          </p>
        ) : null}
        <label for="plugin-display-name">Display name</label>
        <input
          id="plugin-display-name"
          required
          value={displayName}
          onInput={(e) => setDisplayName(e.currentTarget.value)}
        />
        <label for="plugin-description">
          Description <span class="hint">(optional)</span>
        </label>
        <textarea
          id="plugin-description"
          value={description}
          onInput={(e) => setDescription(e.currentTarget.value)}
        />
        <div class="actions row">
          <button type="submit" class="primary" disabled={create.busy}>
            Create plugin
          </button>
          <Busy when={create.busy}>Creating…</Busy>
        </div>
        <ProblemNotice error={create.error} title="Could not create the plugin" />
      </form>
    </section>
  );
}

export function PluginList() {
  const viewer = useViewer();
  const pages = usePages<PluginsNode>(async (after) => {
    const r = await sdk.plugins({ first: 20, ...(after ? { after } : {}) });
    return { nodes: r.plugins.edges.map((e) => e.node), pageInfo: r.plugins.pageInfo };
  }, []);
  return (
    <>
      <h1 tabIndex={-1}>Catalog</h1>
      <p>
        Plugins of {viewer.tenant.name}. Each release's package is analysed in a sandbox, then reviewed by an
        admin or owner who did not upload it, then published in a channel (alpha → beta → stable).{' '}
        <a href="/catalog?view=review">Open the review queue</a>.
      </p>
      <section aria-labelledby="plugins-heading">
        <h2 id="plugins-heading">Plugins</h2>
        <table>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Display name</th>
              <th scope="col">Publisher</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {pages.items.map((p) => (
              <tr key={p.id}>
                <th scope="row">
                  <a href={`/catalog?plugin=${encodeURIComponent(p.id)}`}>{p.name}</a>
                </th>
                <td>{p.displayName}</td>
                <td>
                  {p.publisher.displayName}
                  {p.publisher.id === viewer.user.id ? <span class="muted"> (you)</span> : null}
                </td>
                <td>
                  <When at={p.createdAt} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        <PageControls pages={pages} noun="plugins" />
      </section>
      <CreatePluginForm onCreated={(id) => navigate(`/catalog?plugin=${encodeURIComponent(id)}`)} />
    </>
  );
}

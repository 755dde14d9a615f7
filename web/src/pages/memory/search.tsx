/**
 * Full-text search in one workspace (`searchMemory`): best first, each result with its score (and the text part),
 * a page at a time. A new search restarts from the first page.
 */
import { useState } from 'preact/hooks';
import type { SearchMemoryData } from '@agentgraph/sdk';
import { sdk } from '../../api.js';
import { PageControls } from '../../ui/paged-list.js';
import { usePages } from '../../ui/use-pages.js';
import { When } from '../../ui/when.js';
import { recordHref, snippet } from './records.js';

type Hit = SearchMemoryData['searchMemory']['edges'][number];

export function formatScore(score: number): string {
  return score.toFixed(3);
}

function Results({ workspaceId, text }: { workspaceId: string; text: string }) {
  const pages = usePages<Hit>(
    async (after) => {
      const data = await sdk.searchMemory({
        workspaceId,
        query: { text },
        first: 10,
        after: after ?? null,
      });
      return { nodes: data.searchMemory.edges, pageInfo: data.searchMemory.pageInfo };
    },
    [workspaceId, text],
  );
  return (
    <>
      {pages.items.length > 0 ? (
        <ol class="memory-results" aria-label={`Results for “${text}”, best first`}>
          {pages.items.map((hit) => (
            <li key={hit.node.id}>
              <p class="memory-result-title">
                <a href={recordHref(workspaceId, hit.node.id)}>{snippet(hit.node.content)}</a>
              </p>
              <p class="muted memory-result-meta">
                <span class="badge">score {formatScore(hit.score)}</span>
                {hit.textScore !== null ? <> text {formatScore(hit.textScore)}</> : null}
                {hit.vectorScore !== null ? <> · embedding {formatScore(hit.vectorScore)}</> : null} · kind{' '}
                <code>{hit.node.kind}</code> · version {hit.node.version}
                {hit.node.tags.length ? <> · tags {hit.node.tags.join(', ')}</> : null} · updated{' '}
                <When at={hit.node.updatedAt} />
              </p>
            </li>
          ))}
        </ol>
      ) : null}
      <PageControls pages={pages} noun="results" />
    </>
  );
}

export function Search({ workspaceId }: { workspaceId: string }) {
  const [text, setText] = useState('');
  const [submitted, setSubmitted] = useState<{ text: string; n: number } | null>(null);
  return (
    <section aria-labelledby="search-heading">
      <h2 id="search-heading">Search</h2>
      <form
        class="stack"
        role="search"
        onSubmit={(e) => {
          e.preventDefault();
          const t = text.trim();
          if (t) setSubmitted((prev) => ({ text: t, n: (prev?.n ?? 0) + 1 }));
        }}
      >
        <label for="memory-search">Search text</label>
        <input
          id="memory-search"
          type="search"
          value={text}
          maxLength={1000}
          aria-describedby="memory-search-hint"
          onInput={(e) => setText(e.currentTarget.value)}
        />
        <p id="memory-search-hint" class="hint">
          Words to find; “quoted phrases”, or, and -word to exclude. New records are searchable within a
          second or so.
        </p>
        <button type="submit" disabled={!text.trim()}>
          Search
        </button>
      </form>
      {submitted ? <Results key={`${submitted.n}`} workspaceId={workspaceId} text={submitted.text} /> : null}
    </section>
  );
}

/** The footer of a paginated list: progress while a page loads, the error if it failed, "Load more" when more. */
import type { Pages } from './use-pages.js';
import { ProblemNotice } from './problem.js';

export function PageControls<T>({ pages, noun }: { pages: Pages<T>; noun: string }) {
  return (
    <div class="page-controls">
      {pages.loading ? (
        <p role="status" class="muted">
          <span class="spinner" aria-hidden="true" /> Loading {noun}…
        </p>
      ) : null}
      <ProblemNotice error={pages.error} title={`Could not load ${noun}`} />
      {!pages.loading && !pages.error && pages.items.length === 0 ? (
        <p class="muted">No {noun} yet.</p>
      ) : null}
      {pages.hasMore && !pages.loading ? (
        <button type="button" onClick={pages.more}>
          Load more {noun}
        </button>
      ) : null}
    </div>
  );
}

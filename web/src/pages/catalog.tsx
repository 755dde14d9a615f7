/**
 * Catalog: plugins with a create form (`/catalog`), one plugin with release declaration and package upload
 * (`/catalog?plugin=<id>`), one release with its analysis report, audit trail, review decision and channel
 * (`/catalog?release=<id>`), and the review queue (`/catalog?view=review`). Parts live in pages/catalog/.
 */
import { useEffect, useRef } from 'preact/hooks';
import { useRoute } from '../router.js';
import { PluginList } from './catalog/plugin-list.js';
import { PluginView } from './catalog/plugin-view.js';
import { ReleaseView } from './catalog/release-view.js';
import { ReviewQueue } from './catalog/review-queue.js';

export function CatalogPage() {
  const { query } = useRoute();
  const pluginId = query.get('plugin');
  const releaseId = query.get('release');
  const review = query.get('view') === 'review';
  const view = releaseId ? `r:${releaseId}` : pluginId ? `p:${pluginId}` : review ? 'review' : 'list';
  const first = useRef(true);
  // Sub-views keep the path: move focus to the new view's heading ourselves.
  useEffect(() => {
    if (first.current) first.current = false;
    else document.querySelector<HTMLElement>('main h1')?.focus();
  }, [view]);
  if (releaseId) return <ReleaseView key={releaseId} releaseId={releaseId} />;
  if (pluginId) return <PluginView key={pluginId} pluginId={pluginId} />;
  if (review) return <ReviewQueue />;
  return <PluginList />;
}

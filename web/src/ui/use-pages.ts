/**
 * A cursor connection shown a page at a time: the first page on mount (and on `reload`), the next on `more`.
 * `fetchPage(after)` returns the page's nodes and pageInfo; `deps` restart from the first page when they change.
 */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';

export interface Page<T> {
  nodes: readonly T[];
  pageInfo: { hasNextPage: boolean; endCursor?: string | null };
}

export interface Pages<T> {
  items: readonly T[];
  loading: boolean;
  error: unknown;
  hasMore: boolean;
  more: () => void;
  reload: () => void;
}

export function usePages<T>(
  fetchPage: (after: string | undefined) => Promise<Page<T>>,
  deps: unknown[],
): Pages<T> {
  const [items, setItems] = useState<readonly T[]>([]);
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<unknown>(null);
  const [cursor, setCursor] = useState<string | undefined>(undefined);
  const [hasMore, setHasMore] = useState(false);
  const generation = useRef(0);
  const fetcher = useRef(fetchPage);
  fetcher.current = fetchPage;

  const load = useCallback(async (after: string | undefined, append: boolean) => {
    const gen = generation.current;
    setLoading(true);
    setError(null);
    try {
      const page = await fetcher.current(after);
      if (gen !== generation.current) return;
      setItems((prev) => (append ? [...prev, ...page.nodes] : page.nodes));
      setHasMore(page.pageInfo.hasNextPage);
      setCursor(page.pageInfo.endCursor ?? undefined);
    } catch (err) {
      if (gen === generation.current) setError(err);
    } finally {
      if (gen === generation.current) setLoading(false);
    }
  }, []);

  const reload = useCallback(() => {
    generation.current++;
    void load(undefined, false);
  }, [load]);

  useEffect(reload, deps);

  return { items, loading, error, hasMore, more: () => void load(cursor, true), reload };
}

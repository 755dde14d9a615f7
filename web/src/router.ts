/** A small history-API router: the current path as state, `navigate`, and link clicks kept in the app. */
import { useEffect, useState } from 'preact/hooks';

const listeners = new Set<() => void>();

export function navigate(to: string, replace = false): void {
  if (replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  listeners.forEach((l) => l());
}

addEventListener('popstate', () => listeners.forEach((l) => l()));

export function useRoute(): { path: string; query: URLSearchParams } {
  const [, setTick] = useState(0);
  useEffect(() => {
    const l = () => setTick((n) => n + 1);
    listeners.add(l);
    return () => void listeners.delete(l);
  }, []);
  return { path: location.pathname, query: new URLSearchParams(location.search) };
}

/** For <a> elements: plain clicks on same-origin links navigate inside the app. */
export function onLinkClick(event: MouseEvent): void {
  const a = (event.target as Element | null)?.closest('a');
  if (!a || a.target || event.defaultPrevented || event.button !== 0) return;
  if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  const url = new URL(a.href);
  if (url.origin !== location.origin || url.pathname.startsWith('/auth/')) return;
  event.preventDefault();
  navigate(url.pathname + url.search);
}

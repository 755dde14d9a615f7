/**
 * The signed-in app: a skip link, the header (tenant, user, role, sign-out), the navigation, and the page for the
 * current path. Each page is one module under pages/ exporting a component; its <h1> is the page's name.
 */
import type { ComponentType } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { navigate, onLinkClick, useRoute } from './router.js';
import { signOut } from './session.js';
import { OverviewPage } from './pages/overview.js';
import { ProblemNotice } from './ui/problem.js';
import { roleCovers, useViewer } from './ui/viewer.js';

type PageLoader = () => Promise<ComponentType>;

interface Route {
  path: string;
  label: string;
  /** The page, loaded on first visit (its own chunk: the first load carries only the shell and the overview). */
  load: PageLoader;
  /** The least role that sees the page in the navigation (the server checks every call anyway). */
  role?: string;
}

export const ROUTES: readonly Route[] = [
  { path: '/', label: 'Overview', load: () => Promise.resolve(OverviewPage) },
  { path: '/devices', label: 'Devices', load: () => import('./pages/devices.js').then((m) => m.DevicesPage) },
  { path: '/intents', label: 'Intents', load: () => import('./pages/intents.js').then((m) => m.IntentsPage) },
  { path: '/rooms', label: 'Rooms', load: () => import('./pages/rooms.js').then((m) => m.RoomsPage) },
  { path: '/memory', label: 'Memory', load: () => import('./pages/memory.js').then((m) => m.MemoryPage) },
  { path: '/catalog', label: 'Catalog', load: () => import('./pages/catalog.js').then((m) => m.CatalogPage) },
  { path: '/members', label: 'Members', load: () => import('./pages/members.js').then((m) => m.MembersPage) },
  {
    path: '/emergency',
    label: 'Emergency stop',
    load: () => import('./pages/emergency.js').then((m) => m.EmergencyPage),
    role: 'ADMIN',
  },
];

const loaded = new Map<PageLoader, ComponentType>([[ROUTES[0]!.load, OverviewPage]]);
/** After an in-app navigation, the new page's heading takes focus (screen readers announce the page). */
let focusHeading = false;

/** The route's page once its chunk is here; progress meanwhile, and an error with a retry if it cannot load. */
function LazyPage({ load }: { load: PageLoader }) {
  const [, setTick] = useState(0);
  const [error, setError] = useState<unknown>(null);
  const Page = loaded.get(load);
  useEffect(() => {
    if (Page) return;
    setError(null);
    load().then(
      (component) => {
        loaded.set(load, component);
        setTick((n) => n + 1);
      },
      (err: unknown) => setError(err),
    );
  }, [load, Page]);
  useEffect(() => {
    if (!Page || !focusHeading) return;
    focusHeading = false;
    document.querySelector<HTMLElement>('main h1')?.focus();
  }, [Page]);
  if (Page) return <Page />;
  if (error) {
    return (
      <>
        <h1 tabIndex={-1}>Page not loaded</h1>
        <ProblemNotice error={error} title="This page could not be loaded" />
        <button type="button" onClick={() => location.reload()}>
          Reload
        </button>
      </>
    );
  }
  return (
    <p role="status" class="muted">
      <span class="spinner" aria-hidden="true" /> Loading…
    </p>
  );
}

function NotFound() {
  return (
    <>
      <h1>Page not found</h1>
      <p>
        There is no page here. <a href="/">Go to the overview</a>.
      </p>
    </>
  );
}

export function App() {
  const viewer = useViewer();
  const { path } = useRoute();
  const route = ROUTES.find((r) => r.path === path);
  // Decided while rendering, before the new page's effects run (they take the focus).
  const shown = useRef<string | null>(null);
  if (shown.current !== path) {
    if (shown.current !== null) focusHeading = true;
    shown.current = path;
  }
  useEffect(() => {
    document.title = `${route?.label ?? 'Not found'} · AgentGraph console`;
  }, [path]);

  return (
    <div class="shell" onClick={onLinkClick}>
      <a class="skip-link" href="#main">
        Skip to content
      </a>
      <header class="topbar">
        <span class="brand">AgentGraph</span>
        <span class="tenant">{viewer.tenant.name}</span>
        <span class="who">
          {viewer.user.displayName} <span class="badge">{viewer.role}</span>
        </span>
        <button
          type="button"
          class="link-button"
          onClick={() => void signOut().then(() => navigate('/', true))}
        >
          Sign out
        </button>
      </header>
      <nav aria-label="Main">
        <ul>
          {ROUTES.filter((r) => !r.role || roleCovers(viewer.role, r.role)).map((r) => (
            <li key={r.path}>
              <a href={r.path} aria-current={r.path === path ? 'page' : undefined}>
                {r.label}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <main id="main" tabIndex={-1}>
        {route ? <LazyPage key={route.path} load={route.load} /> : <NotFound />}
      </main>
    </div>
  );
}

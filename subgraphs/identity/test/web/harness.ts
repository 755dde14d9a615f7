/**
 * The identity subgraph with its web pages, served on a real loopback port that is also the token issuer (pages
 * check the Origin of form posts against it), on a fresh test database, with a fake clock for the pages, plus a
 * tiny cookie-keeping browser that talks to it.
 */
import {
  createLogger,
  loadConfig,
  openDatabase,
  serveSubgraph,
  type Config,
  type Database,
  type DatabaseHandle,
  type ServedSubgraph,
} from '@agentgraph/runtime';
import { freePort } from '../../../../test/src/ports.js';
import { provisionTestDatabase, type TestDatabase } from '../../../../test/src/database.js';
import { bootstrapTenant, identityRoutes, identitySubgraph } from '../../src/index.js';
import { hashPassword, type ScryptParams } from '../../src/passwords.js';
import { webRoutes } from '../../src/web/index.js';
import { parseHtml, type Element } from './parse-html.js';

export interface Clock {
  /** null: the real clock. */
  fixed: Date | null;
  now(): Date;
  set(d: Date): void;
  advance(ms: number): void;
}

export function fakeClock(): Clock {
  const c: Clock = {
    fixed: null,
    now: () => (c.fixed ? new Date(c.fixed) : new Date()),
    set: (d) => (c.fixed = new Date(d)),
    advance: (ms) => (c.fixed = new Date(c.now().getTime() + ms)),
  };
  return c;
}

export interface WebHarness {
  testDb: TestDatabase;
  config: Config;
  db: Database;
  handle: DatabaseHandle;
  served: ServedSubgraph;
  issuer: string;
  clock: Clock;
  logs: string[];
  /** A member with a password (tenant created, or joined when it exists). */
  user(o: { tenant: string; email: string; password?: string; params?: ScryptParams }): Promise<{
    tenantId: string;
    userId: string;
    email: string;
    password: string;
  }>;
  asOwner<Row = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<Row[]>;
  browser(): Browser;
  close(): Promise<void>;
}

export async function startWeb(env: Record<string, string> = {}): Promise<WebHarness> {
  const testDb = await provisionTestDatabase();
  const port = await freePort();
  const issuer = env['TOKEN_ISSUER'] ?? `http://127.0.0.1:${port}`;
  const config = loadConfig({
    ...testDb.env,
    IDENTITY_PORT: String(port),
    TOKEN_ISSUER: issuer,
    LOG_LEVEL: 'debug',
    OAUTH_CONSOLE_REDIRECT_URIS: 'http://127.0.0.1:9/callback',
    ...env,
  });
  const { db, handle } = await openDatabase(config, [identitySubgraph.migrations], 'identity');
  const logs: string[] = [];
  const log = createLogger({ service: 'identity-web-test' }, { level: 'debug', write: (l) => logs.push(l) });
  const clock = fakeClock();
  const served = await serveSubgraph(
    {
      ...identitySubgraph,
      routes: (deps) => ({ ...identityRoutes(deps), ...webRoutes(deps, { now: clock.now }) }),
    },
    { config, db, log, port, verifyToken: async () => null },
  );
  const base = `http://127.0.0.1:${port}`;

  // On PGlite the owner's statements step out of the app role for themselves (runtime/src/db/pglite.ts).
  const asOwner: WebHarness['asOwner'] = async <Row>(sql: string, params: unknown[] = []) => {
    return (await handle.owner.query<Row>(sql, params)).rows;
  };

  return {
    testDb,
    config,
    db,
    handle,
    served,
    issuer,
    clock,
    logs,
    async user({ tenant, email, password = 'a long enough passphrase', params }) {
      const { tenantId, userId } = await bootstrapTenant(handle.owner, {
        tenantName: tenant,
        email,
        displayName: email.split('@')[0]!,
      });
      await asOwner('UPDATE identity.users SET password_hash = $2 WHERE id = $1', [
        userId,
        await hashPassword(password, params),
      ]);
      return { tenantId, userId, email, password };
    },
    asOwner,
    browser: () => new Browser(base, new URL(issuer).origin),
    async close() {
      await served.close();
      await handle.close();
      await testDb.drop();
    },
  };
}

export interface Page {
  status: number;
  headers: Headers;
  /** Set-Cookie lines of this response. */
  setCookies: string[];
  location: string | null;
  text: string;
  /** The parsed page (throws when the body is not well-formed HTML). */
  doc(): Element;
}

interface StoredCookie {
  value: string;
  path: string;
}

/** Just enough of a browser: keeps cookies (by name and path), sends Origin on posts, never follows redirects. */
export class Browser {
  readonly cookies = new Map<string, StoredCookie>();
  constructor(
    readonly base: string,
    readonly origin: string,
  ) {}

  /** Copies another browser's cookies (same user agent profile). */
  withCookiesOf(other: Browser): this {
    for (const [k, v] of other.cookies) this.cookies.set(k, { ...v });
    return this;
  }

  cookie(name: string): string | undefined {
    return [...this.cookies.entries()].find(([k]) => k.startsWith(`${name};`))?.[1].value;
  }

  private cookieHeader(path: string): string {
    return [...this.cookies.entries()]
      .filter(
        ([, c]) =>
          path === c.path || path.startsWith(c.path.endsWith('/') ? c.path : `${c.path}/`) || c.path === '/',
      )
      .map(([k, c]) => `${k.split(';')[0]}=${c.value}`)
      .join('; ');
  }

  /** `target` is a path or a full URL on the served origin (or on the issuer's, which is the same server). */
  async request(
    target: string,
    init: { method?: string; form?: Record<string, string>; headers?: Record<string, string> } = {},
  ): Promise<Page> {
    const url = new URL(
      target.startsWith(this.origin) ? target.slice(this.origin.length) || '/' : target,
      this.base,
    );
    const method = init.method ?? (init.form ? 'POST' : 'GET');
    const headers: Record<string, string> = { ...init.headers };
    const cookie = this.cookieHeader(url.pathname);
    if (cookie) headers['cookie'] = cookie;
    if (method === 'POST' && !('origin' in headers)) headers['origin'] = this.origin;
    if (init.form) headers['content-type'] ??= 'application/x-www-form-urlencoded';
    const res = await fetch(url, {
      method,
      headers,
      body: init.form ? new URLSearchParams(init.form).toString() : undefined,
      redirect: 'manual',
    });
    const setCookies = res.headers.getSetCookie();
    for (const line of setCookies) this.store(line);
    const text = await res.text();
    return {
      status: res.status,
      headers: res.headers,
      setCookies,
      location: res.headers.get('location'),
      text,
      doc: () => parseHtml(text),
    };
  }

  get(target: string, headers?: Record<string, string>): Promise<Page> {
    return this.request(target, { headers });
  }

  post(target: string, form: Record<string, string>, headers?: Record<string, string>): Promise<Page> {
    return this.request(target, { form, headers });
  }

  private store(line: string): void {
    const [pair, ...attrs] = line.split(';').map((s) => s.trim());
    const eq = pair!.indexOf('=');
    const name = pair!.slice(0, eq);
    const value = pair!.slice(eq + 1);
    const attr = (n: string) => attrs.find((a) => a.toLowerCase().startsWith(`${n}=`))?.split('=')[1];
    const path = attr('path') ?? '/';
    const key = `${name};${path}`;
    if (attr('max-age') === '0' || (attr('expires') && new Date(attr('expires')!).getTime() < Date.now())) {
      this.cookies.delete(key);
    } else {
      this.cookies.set(key, { value, path });
    }
  }
}

/** The hidden CSRF field of the first form on a page. */
export function csrfOf(page: Page): string {
  const m = /name="csrf" value="([^"]+)"/.exec(page.text);
  if (!m) throw new Error(`no csrf field on the page (status ${page.status})`);
  return m[1]!;
}

/** Signs in through the form; returns the 303 answer. */
export async function signIn(b: Browser, email: string, password: string, path = '/signin'): Promise<Page> {
  const form = await b.get(path);
  return b.post(path, { csrf: csrfOf(form), email, password, action: 'sign-in' });
}

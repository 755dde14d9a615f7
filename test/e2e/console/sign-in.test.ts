/**
 * The console's sign-in in a real browser: authorization code + PKCE through identity's pages, the refresh token
 * only in an HttpOnly SameSite=Strict cookie, the access token only in memory, CSRF refusals, the CSP, sign-out.
 */
import type { Page, Response } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectAccessible, screenshot, signIn, startConsoleBed, type ConsoleBed } from './harness.js';

let bed: ConsoleBed;
beforeAll(async () => {
  bed = await startConsoleBed();
});
afterAll(async () => {
  await bed?.close();
});

/** Every response a script on the page could read (fetch/XHR) and the documents, with their bodies. */
function recordResponses(page: Page): { url: string; body: string }[] {
  const seen: { url: string; body: string }[] = [];
  page.on('response', (res: Response) => {
    const type = res.request().resourceType();
    if (type !== 'fetch' && type !== 'xhr' && type !== 'document') return;
    if (res.status() >= 300 && res.status() < 400) return;
    void res
      .text()
      .then((body) => seen.push({ url: res.url(), body }))
      .catch(() => undefined);
  });
  return seen;
}

const JWT = /eyJ[\w-]+\.[\w-]+\.[\w-]+/g;

describe('console sign-in', () => {
  it('shows the sign-in screen to a visitor, accessible, under a strict CSP', async () => {
    const res = await fetch(`${bed.url}/devices`);
    expect(res.status).toBe(200);
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).not.toContain('unsafe-eval');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(await res.text()).not.toMatch(/<script>(?!<\/script>)|<script(?![^>]*\bsrc=)[^>]*>/);

    const { context, page } = await bed.newPage();
    const violations: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error' && /Content Security Policy/i.test(m.text())) violations.push(m.text());
    });
    await page.goto(bed.url);
    await expect.poll(() => page.getByRole('link', { name: 'Sign in' }).count()).toBe(1);
    await expectAccessible(page);
    await screenshot(page, 'signed-out');
    expect(violations).toEqual([]);
    await context.close();
  });

  it('signs in with code + PKCE; the refresh token never reaches script, the access token stays in memory', async () => {
    const { context, page } = await bed.newPage();
    const responses = recordResponses(page);
    const cspErrors: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error' && /Content Security Policy/i.test(m.text())) cspErrors.push(m.text());
    });
    await signIn(page, bed, bed.owner);
    await expect.poll(() => page.getByText('Ada Owner (ada@acme.test)').count()).toBe(1);
    await expect.poll(() => page.getByText('not engaged').count()).toBe(1);
    await expectAccessible(page);
    await screenshot(page, 'overview');

    const cookies = await context.cookies(`${bed.url}/auth/refresh`);
    const refresh = cookies.find((c) => c.name === 'ag_refresh');
    expect(refresh).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/auth' });
    expect(refresh!.value.length).toBeGreaterThan(20);

    // Reload: the session comes back from the cookie (memory is gone), and the cookie rotates.
    await page.reload();
    await expect
      .poll(() => page.getByRole('button', { name: 'Sign out' }).count(), { timeout: 15_000 })
      .toBe(1);
    const rotated = (await context.cookies(`${bed.url}/auth/refresh`)).find((c) => c.name === 'ag_refresh');
    expect(rotated!.value).not.toBe(refresh!.value);

    const storage = await page.evaluate(() => ({
      local: Object.entries(localStorage),
      session: Object.entries(sessionStorage),
      cookie: document.cookie,
    }));
    expect(storage).toEqual({ local: [], session: [], cookie: '' });

    // Script-readable bodies: no refresh token (either one), no ID token; the only JWTs are the access tokens
    // the token handler's /auth/refresh answers hand to memory.
    await new Promise((r) => setTimeout(r, 200)); // let the last body reads settle
    expect(responses.length).toBeGreaterThan(2);
    for (const { url, body } of responses) {
      expect(body).not.toContain(refresh!.value);
      expect(body).not.toContain(rotated!.value);
      expect(body).not.toContain('refresh_token');
      expect(body).not.toContain('id_token');
      if (!url.endsWith('/auth/refresh')) expect(body.match(JWT) ?? [], url).toEqual([]);
    }
    expect(cspErrors).toEqual([]);
    await context.close();
  });

  it('refuses cross-site and header-less refreshes (CSRF)', async () => {
    const { context, page } = await bed.newPage();
    await signIn(page, bed, bed.owner);
    const cookie = (await context.cookies(`${bed.url}/auth/refresh`)).find((c) => c.name === 'ag_refresh')!;
    const headers = { cookie: `ag_refresh=${cookie.value}` };
    const noHeader = await fetch(`${bed.url}/auth/refresh`, {
      method: 'POST',
      headers: { ...headers, origin: bed.url },
    });
    expect(noHeader.status).toBe(403);
    const crossSite = await fetch(`${bed.url}/auth/refresh`, {
      method: 'POST',
      headers: { ...headers, origin: 'http://evil.example', 'x-agentgraph-csrf': '1' },
    });
    expect(crossSite.status).toBe(403);
    expect(await crossSite.json()).toMatchObject({ error: 'csrf' });
    // From a page of another origin, the browser itself: no custom header without a preflight this server never
    // allows, so the request fails and the session lives on.
    const other = await context.newPage();
    await other.goto(`${bed.identityUrl}/signin`);
    const status = await other.evaluate(async (url) => {
      try {
        const r = await fetch(`${url}/auth/refresh`, {
          method: 'POST',
          credentials: 'include',
          headers: { 'x-agentgraph-csrf': '1' },
        });
        return r.status;
      } catch {
        return 'blocked';
      }
    }, bed.url);
    expect(status).toBe('blocked');
    await page.reload();
    await expect
      .poll(() => page.getByRole('button', { name: 'Sign out' }).count(), { timeout: 15_000 })
      .toBe(1);
    await context.close();
  });

  it('signs out: the refresh token is revoked and the cookie gone', async () => {
    const { context, page } = await bed.newPage();
    await signIn(page, bed, bed.owner);
    const before = (await context.cookies(`${bed.url}/auth/refresh`)).find((c) => c.name === 'ag_refresh')!;
    await page.getByRole('button', { name: 'Sign out' }).click();
    await expect.poll(() => page.getByRole('link', { name: 'Sign in' }).count()).toBe(1);
    expect(
      (await context.cookies(`${bed.url}/auth/refresh`)).find((c) => c.name === 'ag_refresh'),
    ).toBeUndefined();
    const replay = await fetch(`${bed.url}/auth/refresh`, {
      method: 'POST',
      headers: { cookie: `ag_refresh=${before.value}`, origin: bed.url, 'x-agentgraph-csrf': '1' },
    });
    expect(replay.status).toBe(401);
    await context.close();
  });
});

/**
 * The console's server side without a browser: the static site (SPA fallback, compression, caching, security
 * headers) and the token handler against a scripted identity (real HTTP on loopback): PKCE, state, the cookies,
 * CSRF refusals, one redemption for concurrent refreshes, sign-out revocation, and what it logs.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '@agentgraph/runtime';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createStaticSite } from '../src/console/static-site.js';
import { createTokenHandler, type TokenHandler } from '../src/console/token-handler.js';

function listen(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ server: Server; url: string }> {
  const server = createServer(handler);
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }),
    ),
  );
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => resolve(body));
  });
}

describe('console static site', () => {
  let dir: string;
  let url: string;
  let server: Server;
  const big = `console.log(${JSON.stringify('x'.repeat(5000))});`;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'console-dist-'));
    mkdirSync(join(dir, 'assets'));
    writeFileSync(
      join(dir, 'index.html'),
      '<!doctype html><title>t</title><script type="module" src="/assets/a.js"></script>',
    );
    writeFileSync(join(dir, 'assets/app-abc.js'), big);
    writeFileSync(join(dir, '.built'), 'stamp');
    const site = createStaticSite(dir);
    ({ server, url } = await listen((req, res) => {
      const path = (req.url ?? '/').split('?')[0]!;
      if (!site.serve(req, res, path)) {
        res.writeHead(404);
        res.end();
      }
    }));
  });
  afterAll(() => {
    server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers app routes with index.html, revalidated, under the security headers', async () => {
    const res = await fetch(`${url}/devices?x=1`);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('<title>t</title>');
    expect(res.headers.get('cache-control')).toBe('no-cache');
    expect(res.headers.get('content-security-policy')).toMatch(/^default-src 'none'; script-src 'self'/);
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
  });

  it('serves hashed assets immutable, compressed as the client accepts, 304 on a matching ETag', async () => {
    const br = await fetch(`${url}/assets/app-abc.js`, { headers: { 'accept-encoding': 'br' } });
    expect(br.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(br.headers.get('content-encoding')).toBe('br');
    expect(await br.text()).toBe(big); // fetch decodes what the server encoded
    const gz = await fetch(`${url}/assets/app-abc.js`, { headers: { 'accept-encoding': 'gzip' } });
    expect(gz.headers.get('content-encoding')).toBe('gzip');
    expect(await gz.text()).toBe(big);
    expect(Number(gz.headers.get('content-length'))).toBeLessThan(big.length / 10);
    const etag = gz.headers.get('etag')!;
    const again = await fetch(`${url}/assets/app-abc.js`, { headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
  });

  it('never serves dotfiles, missing assets or other methods', async () => {
    expect((await fetch(`${url}/.built`)).status).toBe(404);
    expect((await fetch(`${url}/assets/missing.js`)).status).toBe(404);
    expect((await fetch(`${url}/devices`, { method: 'POST' })).status).toBe(404);
  });

  it('refuses to start without a build', () => {
    const empty = mkdtempSync(join(tmpdir(), 'console-empty-'));
    expect(() => createStaticSite(empty)).toThrow(/npm run build:web/);
    rmSync(empty, { recursive: true, force: true });
  });
});

describe('console token handler', () => {
  let identity: { server: Server; url: string };
  let app: { server: Server; url: string };
  let handler: TokenHandler;
  const calls: { path: string; form: URLSearchParams }[] = [];
  const logs: string[] = [];
  let nextToken = 0;
  /** What identity's token endpoint does next. */
  let tokenMode: 'ok' | 'invalid_grant' | 'down' = 'ok';
  let tokenDelayMs = 0;

  beforeAll(async () => {
    identity = await listen((req, res) => {
      void (async () => {
        const path = req.url ?? '/';
        if (path === '/.well-known/oauth-authorization-server') {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(
            JSON.stringify({
              issuer: identity.url,
              authorization_endpoint: `${identity.url}/oauth/auth`,
              token_endpoint: `${identity.url}/oauth/token`,
              revocation_endpoint: `${identity.url}/oauth/token/revocation`,
            }),
          );
          return;
        }
        const form = new URLSearchParams(await readBody(req));
        calls.push({ path, form });
        if (path === '/oauth/token/revocation') {
          res.writeHead(200);
          res.end();
          return;
        }
        await new Promise((r) => setTimeout(r, tokenDelayMs));
        if (tokenMode === 'down') {
          res.writeHead(500, { 'content-type': 'application/json' });
          res.end('{"error":"server_error"}');
        } else if (tokenMode === 'invalid_grant') {
          res.writeHead(400, { 'content-type': 'application/json' });
          res.end('{"error":"invalid_grant"}');
        } else {
          nextToken++;
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(
            JSON.stringify({
              access_token: `access-${nextToken}`,
              expires_in: 900,
              refresh_token: `refresh-${nextToken}-${'r'.repeat(20)}`,
              id_token: 'never-forwarded',
              token_type: 'Bearer',
            }),
          );
        }
      })();
    });
    let origin = '';
    app = await listen((req, res) => {
      const url = req.url ?? '/';
      const q = url.indexOf('?');
      void handler
        .handle(req, res, q < 0 ? url : url.slice(0, q), q < 0 ? '' : url.slice(q + 1))
        .then((handled) => {
          if (!handled) {
            res.writeHead(404);
            res.end();
          }
        });
    });
    origin = app.url;
    handler = createTokenHandler({
      issuer: identity.url,
      redirectUri: `${origin}/auth/callback`,
      log: createLogger({}, { level: 'debug', write: (line) => logs.push(line) }),
      now: () => 1_000_000,
    });
  });
  afterAll(() => {
    identity.server.close();
    app.server.close();
  });
  beforeEach(() => {
    calls.length = 0;
    tokenMode = 'ok';
    tokenDelayMs = 0;
  });

  const post = (path: string, headers: Record<string, string>) =>
    fetch(`${app.url}${path}`, { method: 'POST', headers, redirect: 'manual' });
  const csrf = () => ({ origin: app.url, 'x-agentgraph-csrf': '1' });
  const cookieOf = (res: Response, name: string) =>
    res.headers.getSetCookie().find((c) => c.startsWith(`${name}=`));
  const valueOf = (cookie: string | undefined) => cookie?.split(';')[0]!.split('=').slice(1).join('=');

  async function signInCookie(): Promise<string> {
    const start = await fetch(`${app.url}/auth/signin?to=/rooms`, { redirect: 'manual' });
    const login = valueOf(cookieOf(start, 'ag_login'))!;
    const state = new URL(start.headers.get('location')!).searchParams.get('state')!;
    const cb = await fetch(`${app.url}/auth/callback?code=the-code&state=${state}`, {
      redirect: 'manual',
      headers: { cookie: `ag_login=${login}` },
    });
    return valueOf(cookieOf(cb, 'ag_refresh'))!;
  }

  it('starts code + PKCE (S256) with state, consent and a Lax login cookie; keeps only local return paths', async () => {
    const res = await fetch(`${app.url}/auth/signin?to=/intents?intent=1`, { redirect: 'manual' });
    expect(res.status).toBe(303);
    const location = new URL(res.headers.get('location')!);
    expect(location.origin + location.pathname).toBe(`${identity.url}/oauth/auth`);
    const p = location.searchParams;
    expect(Object.fromEntries(p)).toMatchObject({
      client_id: 'agentgraph-console',
      response_type: 'code',
      redirect_uri: `${app.url}/auth/callback`,
      scope: 'openid offline_access api:read api:write',
      code_challenge_method: 'S256',
      prompt: 'consent',
    });
    const cookie = cookieOf(res, 'ag_login')!;
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Lax/);
    expect(cookie).toMatch(/Path=\/auth/);
    const login = JSON.parse(Buffer.from(valueOf(cookie)!, 'base64url').toString()) as Record<string, string>;
    expect(login['state']).toBe(p.get('state'));
    expect(createHash('sha256').update(login['verifier']!).digest('base64url')).toBe(p.get('code_challenge'));
    expect(login['to']).toBe('/intents?intent=1');
    for (const evil of ['//evil.example/x', 'https://evil.example/', '/\\evil.example']) {
      const r = await fetch(`${app.url}/auth/signin?to=${encodeURIComponent(evil)}`, { redirect: 'manual' });
      const l = JSON.parse(Buffer.from(valueOf(cookieOf(r, 'ag_login'))!, 'base64url').toString()) as {
        to: string;
      };
      expect(l.to).toBe('/');
    }
  });

  it('redeems the code with the verifier; the refresh token goes into a Strict HttpOnly cookie only', async () => {
    const start = await fetch(`${app.url}/auth/signin?to=/rooms`, { redirect: 'manual' });
    const login = valueOf(cookieOf(start, 'ag_login'))!;
    const verifier = (JSON.parse(Buffer.from(login, 'base64url').toString()) as { verifier: string })
      .verifier;
    const state = new URL(start.headers.get('location')!).searchParams.get('state')!;
    const cb = await fetch(`${app.url}/auth/callback?code=the-code&state=${state}`, {
      redirect: 'manual',
      headers: { cookie: `ag_login=${login}` },
    });
    expect(cb.status).toBe(303);
    expect(cb.headers.get('location')).toBe('/rooms');
    const refresh = cookieOf(cb, 'ag_refresh')!;
    expect(refresh).toMatch(
      /^ag_refresh=refresh-\d+-r+; Path=\/auth; Max-Age=604800; HttpOnly; SameSite=Strict$/,
    );
    expect(cookieOf(cb, 'ag_login')).toMatch(/Max-Age=0/);
    expect(Object.fromEntries(calls[0]!.form)).toEqual({
      client_id: 'agentgraph-console',
      grant_type: 'authorization_code',
      code: 'the-code',
      code_verifier: verifier,
      redirect_uri: `${app.url}/auth/callback`,
    });
  });

  it('refuses a callback whose state does not match its login cookie (or has none)', async () => {
    const start = await fetch(`${app.url}/auth/signin`, { redirect: 'manual' });
    const login = valueOf(cookieOf(start, 'ag_login'))!;
    const wrong = await fetch(`${app.url}/auth/callback?code=c&state=${'x'.repeat(43)}`, {
      redirect: 'manual',
      headers: { cookie: `ag_login=${login}` },
    });
    expect(wrong.headers.get('location')).toBe('/?signin=expired');
    expect(cookieOf(wrong, 'ag_refresh')).toBeUndefined();
    const none = await fetch(`${app.url}/auth/callback?code=c&state=abc`, { redirect: 'manual' });
    expect(none.headers.get('location')).toBe('/?signin=expired');
    expect(calls).toEqual([]);
  });

  it('refresh: CSRF refusals, then the access token only, with the rotated cookie', async () => {
    const token = await signInCookie();
    const cookie = { cookie: `ag_refresh=${token}` };
    calls.length = 0;
    expect((await post('/auth/refresh', { ...cookie, origin: app.url })).status).toBe(403);
    expect((await post('/auth/refresh', { ...cookie, 'x-agentgraph-csrf': '1' })).status).toBe(403);
    expect(
      (await post('/auth/refresh', { ...cookie, ...csrf(), origin: 'http://evil.example' })).status,
    ).toBe(403);
    expect(
      (await post('/auth/refresh', { ...cookie, ...csrf(), 'sec-fetch-site': 'cross-site' })).status,
    ).toBe(403);
    expect(calls).toEqual([]);
    expect((await post('/auth/refresh', csrf())).status).toBe(401);

    const ok = await post('/auth/refresh', { ...cookie, ...csrf(), 'sec-fetch-site': 'same-origin' });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('cache-control')).toBe('no-store');
    const body = (await ok.json()) as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(['accessToken', 'expiresAt']);
    expect(body['expiresAt']).toBe(1_000_000 + 900_000);
    const rotated = valueOf(cookieOf(ok, 'ag_refresh'));
    expect(rotated).toMatch(/^refresh-/);
    expect(rotated).not.toBe(token);
    expect(Object.fromEntries(calls[0]!.form)).toEqual({
      client_id: 'agentgraph-console',
      grant_type: 'refresh_token',
      refresh_token: token,
    });
  });

  it('concurrent refreshes with one cookie share one redemption (rotation would end the family)', async () => {
    const token = await signInCookie();
    calls.length = 0;
    tokenDelayMs = 50;
    const answers = await Promise.all(
      Array.from({ length: 4 }, () => post('/auth/refresh', { cookie: `ag_refresh=${token}`, ...csrf() })),
    );
    expect(calls.filter((c) => c.path === '/oauth/token')).toHaveLength(1);
    const bodies = await Promise.all(answers.map((a) => a.json() as Promise<{ accessToken: string }>));
    expect(new Set(bodies.map((b) => b.accessToken)).size).toBe(1);
    expect(new Set(answers.map((a) => valueOf(cookieOf(a, 'ag_refresh')))).size).toBe(1);
  });

  it('an ended session clears the cookie (401); identity down is 503 and keeps it', async () => {
    const token = await signInCookie();
    tokenMode = 'down';
    const down = await post('/auth/refresh', { cookie: `ag_refresh=${token}`, ...csrf() });
    expect(down.status).toBe(503);
    expect(cookieOf(down, 'ag_refresh')).toBeUndefined();
    tokenMode = 'invalid_grant';
    const ended = await post('/auth/refresh', { cookie: `ag_refresh=${token}-other`, ...csrf() });
    expect(ended.status).toBe(401);
    expect(cookieOf(ended, 'ag_refresh')).toMatch(/Max-Age=0/);
  });

  it('signs out: revokes the refresh token at identity and deletes the cookie; never logs a token', async () => {
    const token = await signInCookie();
    calls.length = 0;
    expect((await post('/auth/signout', { cookie: `ag_refresh=${token}` })).status).toBe(403);
    const out = await post('/auth/signout', { cookie: `ag_refresh=${token}`, ...csrf() });
    expect(out.status).toBe(200);
    expect(cookieOf(out, 'ag_refresh')).toMatch(/Max-Age=0/);
    expect(calls).toHaveLength(1);
    expect(Object.fromEntries(calls[0]!.form)).toEqual({
      client_id: 'agentgraph-console',
      token,
      token_type_hint: 'refresh_token',
    });
    for (const line of logs) expect(line).not.toMatch(/refresh-\d|access-\d|the-code/);
  });
});

/**
 * The console's token handler (the "OAuth agent" of the token-handler pattern), so the browser never holds a
 * refresh token:
 *
 * - `GET /auth/signin` makes the PKCE verifier (S256) and `state`, keeps them in a short-lived HttpOnly cookie
 *   (SameSite=Lax: it must come back on the top-level redirect from identity), and redirects to identity's
 *   authorization endpoint as client `agentgraph-console`.
 * - `GET /auth/callback` checks `state`, redeems the code with the verifier at identity's token endpoint (server to
 *   server), puts the refresh token in an HttpOnly, SameSite=Strict cookie scoped to `/auth`, and sends the browser
 *   to the app. The access token of that answer is dropped.
 * - `POST /auth/refresh` (the app calls it on load and when its in-memory access token expires) redeems the
 *   refresh token, rotates the cookie and answers only `{accessToken, expiresAt}`: the app keeps it in memory.
 * - `POST /auth/signout` revokes the refresh token at identity and deletes the cookie.
 *
 * CSRF: the two POSTs need the header `x-agentgraph-csrf: 1` (a cross-site page cannot send a custom header without a
 * CORS preflight, which this server never allows), an `Origin` equal to the console's, and `Sec-Fetch-Site:
 * same-origin` when the browser sends it; the refresh cookie is SameSite=Strict besides. The GraphQL API itself takes
 * bearer tokens, not cookies, so it is not exposed to CSRF at all.
 *
 * Identity rotates refresh tokens and treats a reused one as theft (the whole family ends). Two tabs refreshing at
 * once would trip that, so concurrent refreshes with the same cookie share one redemption, and its answer is kept
 * for a few seconds for a tab that arrives just after.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '@agentgraph/runtime';
import { z } from 'zod';
import { readCookie, setCookie } from './cookies.js';
import { SECURITY_HEADERS } from './security-headers.js';

export const CONSOLE_CLIENT_ID = 'agentgraph-console';
export const CONSOLE_SCOPE = 'openid offline_access api:read api:write';
export const CSRF_HEADER = 'x-agentgraph-csrf';
const LOGIN_COOKIE = 'ag_login';
const REFRESH_COOKIE = 'ag_refresh';
const LOGIN_TTL_S = 600;
/** Identity's refresh-token lifetime for the console (7 days); the cookie does not outlive it. */
const REFRESH_TTL_S = 7 * 24 * 3600;
const SHARED_ANSWER_MS = 5_000;

export interface TokenHandlerOptions {
  /** Identity's issuer URL (its RFC 8414 metadata names the endpoints). */
  issuer: string;
  /** The registered redirect URI (`…/auth/callback`); its origin is the console's origin. */
  redirectUri: string;
  log: Logger;
  fetch?: typeof fetch;
  random?: (bytes: number) => Buffer;
  now?: () => number;
}

const metadataSchema = z.object({
  issuer: z.string(),
  authorization_endpoint: z.string().url(),
  token_endpoint: z.string().url(),
  revocation_endpoint: z.string().url().optional(),
});
type Metadata = z.infer<typeof metadataSchema>;

const tokenAnswerSchema = z.object({
  access_token: z.string().min(1),
  expires_in: z.number().positive(),
  refresh_token: z.string().min(1).optional(),
});
type TokenAnswer = z.infer<typeof tokenAnswerSchema>;

const loginSchema = z.object({ state: z.string().min(16), verifier: z.string().min(43), to: z.string() });

export interface TokenHandler {
  handle(req: IncomingMessage, res: ServerResponse, path: string, search: string): Promise<boolean>;
}

class TokenEndpointError extends Error {
  constructor(
    readonly error: string,
    readonly status: number,
  ) {
    super(`identity's token endpoint answered ${status} ${error}`);
  }
}

function b64url(buf: Buffer): string {
  return buf.toString('base64url');
}

function sameString(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Only app paths after sign-in: a local absolute path, never `//host` or a scheme. */
function safeReturnPath(value: string | null): string {
  if (!value || !value.startsWith('/') || value.startsWith('//') || value.startsWith('/\\')) return '/';
  return value.length > 512 ? '/' : value;
}

function send(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string | string[]> = {},
) {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    ...SECURITY_HEADERS,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
    ...headers,
  });
  res.end(text);
}

function redirect(res: ServerResponse, location: string, cookies: string[] = []) {
  res.writeHead(303, {
    ...SECURITY_HEADERS,
    location,
    'cache-control': 'no-store',
    ...(cookies.length ? { 'set-cookie': cookies } : {}),
  });
  res.end();
}

export function createTokenHandler(opts: TokenHandlerOptions): TokenHandler {
  const f = opts.fetch ?? fetch;
  const random = opts.random ?? randomBytes;
  const now = opts.now ?? Date.now;
  const origin = new URL(opts.redirectUri).origin;
  const secure = origin.startsWith('https:');
  const callbackPath = new URL(opts.redirectUri).pathname;
  const issuer = opts.issuer.replace(/\/$/, '');
  let metadata: Promise<Metadata> | null = null;
  const inflight = new Map<string, { answer: Promise<TokenAnswer>; until: number }>();

  const endpoints = () => {
    metadata ??= (async () => {
      const res = await f(`${issuer}/.well-known/oauth-authorization-server`, {
        headers: { accept: 'application/json' },
      });
      if (!res.ok) throw new Error(`identity's OAuth metadata answered HTTP ${res.status}`);
      const meta = metadataSchema.parse(await res.json());
      if (meta.issuer.replace(/\/$/, '') !== issuer)
        throw new Error('identity metadata names another issuer');
      return meta;
    })().catch((err: unknown) => {
      metadata = null;
      throw err;
    });
    return metadata;
  };

  const tokenRequest = async (params: Record<string, string>): Promise<TokenAnswer> => {
    const { token_endpoint } = await endpoints();
    const res = await f(token_endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams({ client_id: CONSOLE_CLIENT_ID, ...params }),
    });
    const body = (await res.json().catch(() => ({}))) as { error?: unknown };
    if (!res.ok)
      throw new TokenEndpointError(typeof body.error === 'string' ? body.error : 'error', res.status);
    return tokenAnswerSchema.parse(body);
  };

  const refreshCookie = (value: string, maxAge = REFRESH_TTL_S) =>
    setCookie(REFRESH_COOKIE, value, { path: '/auth', sameSite: 'Strict', maxAge, secure });
  const loginCookie = (value: string, maxAge = LOGIN_TTL_S) =>
    setCookie(LOGIN_COOKIE, value, { path: '/auth', sameSite: 'Lax', maxAge, secure });

  /** Why a state-changing request is refused, or null when it comes from the console itself. */
  const csrfRefusal = (req: IncomingMessage): string | null => {
    if (req.headers[CSRF_HEADER] !== '1') return `the ${CSRF_HEADER} header is missing`;
    if (req.headers.origin !== origin) return 'the request does not come from the console origin';
    const site = req.headers['sec-fetch-site'];
    if (site !== undefined && site !== 'same-origin') return 'the request is cross-site';
    return null;
  };

  const signin = async (res: ServerResponse, search: string) => {
    let meta: Metadata;
    try {
      meta = await endpoints();
    } catch (error) {
      opts.log.error('console sign-in could not reach identity', { error });
      return send(res, 503, {
        error: 'identity_unavailable',
        message: 'The sign-in service is not reachable. Try again in a moment.',
      });
    }
    const state = b64url(random(32));
    const verifier = b64url(random(32));
    const to = safeReturnPath(new URLSearchParams(search).get('to'));
    const url = new URL(meta.authorization_endpoint);
    url.search = new URLSearchParams({
      client_id: CONSOLE_CLIENT_ID,
      response_type: 'code',
      redirect_uri: opts.redirectUri,
      scope: CONSOLE_SCOPE,
      state,
      code_challenge: b64url(createHash('sha256').update(verifier).digest()),
      code_challenge_method: 'S256',
      // OpenID Connect grants offline_access (the refresh token) only with prompt=consent.
      prompt: 'consent',
    }).toString();
    const cookie = b64url(Buffer.from(JSON.stringify({ state, verifier, to })));
    redirect(res, url.href, [loginCookie(cookie)]);
  };

  const callback = async (req: IncomingMessage, res: ServerResponse, search: string) => {
    const params = new URLSearchParams(search);
    const clearLogin = loginCookie('', 0);
    let login: z.infer<typeof loginSchema> | null = null;
    try {
      const raw = readCookie(req, LOGIN_COOKIE);
      if (raw) login = loginSchema.parse(JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')));
    } catch {
      login = null;
    }
    const state = params.get('state') ?? '';
    if (!login || !sameString(state, login.state)) {
      opts.log.warn('console sign-in callback refused', {
        reason: login ? 'state mismatch' : 'no login cookie',
      });
      return redirect(res, '/?signin=expired', [clearLogin]);
    }
    const error = params.get('error');
    if (error) return redirect(res, `/?signin=${encodeURIComponent(error.slice(0, 64))}`, [clearLogin]);
    const code = params.get('code');
    if (!code) return redirect(res, '/?signin=invalid_request', [clearLogin]);
    try {
      const answer = await tokenRequest({
        grant_type: 'authorization_code',
        code,
        code_verifier: login.verifier,
        redirect_uri: opts.redirectUri,
      });
      if (!answer.refresh_token) throw new TokenEndpointError('no_refresh_token', 502);
      redirect(res, login.to, [clearLogin, refreshCookie(answer.refresh_token)]);
    } catch (err) {
      const reason = err instanceof TokenEndpointError ? err.error : 'server_error';
      opts.log.warn('console sign-in code redemption failed', { reason });
      redirect(res, `/?signin=${encodeURIComponent(reason)}`, [clearLogin]);
    }
  };

  /** One redemption per refresh token; a caller within SHARED_ANSWER_MS after gets the same answer. */
  const redeem = (refreshToken: string): Promise<TokenAnswer> => {
    const key = createHash('sha256').update(refreshToken).digest('base64url');
    const t = now();
    for (const [k, v] of inflight) if (v.until < t) inflight.delete(k);
    const hit = inflight.get(key);
    if (hit) return hit.answer;
    const answer = tokenRequest({ grant_type: 'refresh_token', refresh_token: refreshToken });
    inflight.set(key, { answer, until: t + SHARED_ANSWER_MS });
    answer.catch(() => inflight.delete(key));
    return answer;
  };

  const refresh = async (req: IncomingMessage, res: ServerResponse) => {
    const refused = csrfRefusal(req);
    if (refused) return send(res, 403, { error: 'csrf', message: `Refused: ${refused}.` });
    const token = readCookie(req, REFRESH_COOKIE);
    if (!token)
      return send(res, 401, { error: 'signed_out', message: 'Not signed in. Sign in to continue.' });
    try {
      const answer = await redeem(token);
      const cookies = answer.refresh_token ? [refreshCookie(answer.refresh_token)] : [];
      send(
        res,
        200,
        { accessToken: answer.access_token, expiresAt: now() + answer.expires_in * 1000 },
        cookies.length ? { 'set-cookie': cookies } : {},
      );
    } catch (err) {
      if (err instanceof TokenEndpointError && err.status < 500) {
        return send(
          res,
          401,
          { error: 'signed_out', message: 'Your session ended (expired or revoked). Sign in again.' },
          { 'set-cookie': [refreshCookie('', 0)] },
        );
      }
      opts.log.error('console token refresh failed', { error: err });
      send(res, 503, {
        error: 'identity_unavailable',
        message: 'The sign-in service is not reachable. Try again in a moment.',
      });
    }
  };

  const signout = async (req: IncomingMessage, res: ServerResponse) => {
    const refused = csrfRefusal(req);
    if (refused) return send(res, 403, { error: 'csrf', message: `Refused: ${refused}.` });
    const token = readCookie(req, REFRESH_COOKIE);
    if (token) {
      try {
        const { revocation_endpoint } = await endpoints();
        if (revocation_endpoint) {
          await f(revocation_endpoint, {
            method: 'POST',
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            body: new URLSearchParams({
              client_id: CONSOLE_CLIENT_ID,
              token,
              token_type_hint: 'refresh_token',
            }),
          });
        }
      } catch (error) {
        opts.log.warn('console sign-out could not revoke the refresh token', { error });
      }
    }
    send(
      res,
      200,
      { signedOut: true, identitySignOut: `${issuer}/signout` },
      { 'set-cookie': [refreshCookie('', 0)] },
    );
  };

  return {
    async handle(req, res, path, search) {
      if (path === '/auth/signin' && req.method === 'GET') await signin(res, search);
      else if (path === callbackPath && req.method === 'GET') await callback(req, res, search);
      else if (path === '/auth/refresh' && req.method === 'POST') await refresh(req, res);
      else if (path === '/auth/signout' && req.method === 'POST') await signout(req, res);
      else if (path.startsWith('/auth/'))
        send(res, 405, { error: 'method_not_allowed', message: `No ${req.method} ${path}` });
      else return false;
      return true;
    },
  };
}

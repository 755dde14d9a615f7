/**
 * Cross-site request forgery defence for the pages' POSTs, two independent checks:
 *  1. Origin: the browser's Origin header must be the issuer's origin (pages are served there). A missing Origin is
 *     refused too: every current browser sends it on form posts.
 *  2. Token: a hidden form field `csrf` = HMAC-SHA256(secret, "csrf:" + form path). The secret is the session's
 *     (identity.web_sessions.csrf_secret) once signed in; before that (the sign-in forms, against login CSRF) it is
 *     a random value in the signed `ag_csrf` cookie, set when a form page is shown.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { AppError, type Config } from '@agentgraph/runtime';
import {
  appendSetCookie,
  readCookies,
  serializeCookie,
  signCookieValue,
  verifyCookieValue,
} from './cookies.js';
import { secureCookies, type Random, type WebSession } from './sessions.js';

export const CSRF_COOKIE = 'ag_csrf';
export const CSRF_FIELD = 'csrf';

export function csrfToken(secret: Buffer, formPath: string): string {
  return createHmac('sha256', secret).update(`csrf:${formPath}`).digest('base64url');
}

/** The pre-session secret from the `ag_csrf` cookie, or null. */
function cookieSecret(req: IncomingMessage, keys: readonly string[]): Buffer | null {
  const value = verifyCookieValue(keys, CSRF_COOKIE, readCookies(req).get(CSRF_COOKIE));
  return value && /^[A-Za-z0-9_-]{43}$/.test(value) ? Buffer.from(value, 'base64url') : null;
}

/**
 * The secret a form shown now is bound to: the session's, else the `ag_csrf` cookie's (created and set on `res`
 * when the browser has none).
 */
export function formSecret(
  config: Pick<Config, 'tokenIssuer' | 'oauth'>,
  req: IncomingMessage,
  res: ServerResponse,
  session: WebSession | null,
  random: Random,
): Buffer {
  if (session) return session.csrfSecret;
  const existing = cookieSecret(req, config.oauth.cookieKeys);
  if (existing) return existing;
  const secret = random(32);
  appendSetCookie(
    res,
    serializeCookie(
      CSRF_COOKIE,
      signCookieValue(config.oauth.cookieKeys, CSRF_COOKIE, secret.toString('base64url')),
      {
        secure: secureCookies(config),
      },
    ),
  );
  return secret;
}

/** Clears the pre-session cookie (after sign-in the session's secret takes over). */
export function clearCsrfCookie(config: Pick<Config, 'tokenIssuer'>, res: ServerResponse): void {
  appendSetCookie(res, serializeCookie(CSRF_COOKIE, '', { secure: secureCookies(config), maxAge: 0 }));
}

const forbidden = (message: string) => new AppError('FORBIDDEN', message, { reason: 'csrf' });

/**
 * Checks a POST: Origin, then the token against the session's secret or, for sign-in forms (`preSession`), the
 * `ag_csrf` cookie's. Returns the secret that verified. Throws FORBIDDEN (reason "csrf") otherwise.
 */
export function checkPost(
  config: Pick<Config, 'tokenIssuer' | 'oauth'>,
  req: IncomingMessage,
  form: URLSearchParams,
  formPath: string,
  session: WebSession | null,
  o: { preSession: boolean },
): Buffer {
  checkOrigin(config, req, formPath);
  // A sign-in form shown before another tab signed in is bound to the cookie's secret: accept either then.
  const secrets = [session?.csrfSecret, o.preSession ? cookieSecret(req, config.oauth.cookieKeys) : null];
  const given = Buffer.from(form.get(CSRF_FIELD) ?? '');
  for (const secret of secrets) {
    if (!secret) continue;
    const want = Buffer.from(csrfToken(secret, formPath));
    if (want.length === given.length && timingSafeEqual(want, given)) return secret;
  }
  throw forbidden(
    'This form has expired or was not shown by this site (its security token does not match). Reload the page and try again.',
  );
}

/** Throws FORBIDDEN (reason "csrf") unless the request's Origin is the issuer's origin. */
export function checkOrigin(
  config: Pick<Config, 'tokenIssuer'>,
  req: IncomingMessage,
  formPath: string,
): void {
  const expected = new URL(config.tokenIssuer).origin;
  const origin = req.headers.origin;
  if (origin !== expected) {
    throw forbidden(
      origin
        ? `This form was sent from another site (${origin}), so it was refused. Open ${expected}${formPath} and use the form there.`
        : `This form post carries no Origin header, so it was refused. Use the form at ${expected}${formPath} in a current browser.`,
    );
  }
}

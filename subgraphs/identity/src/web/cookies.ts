/**
 * Signed cookies: `<value>.<HMAC-SHA256(key, name=value)>` with the first of config.oauth.cookieKeys, verified
 * against all of them (rotation: put the new key first, keep the old one until its cookies have expired).
 * The value itself is random (a session id, a CSRF secret); the signature only stops forged or altered cookies
 * before they cost a database lookup.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

export interface CookieOptions {
  /** Seconds; omitted: a browser-session cookie. 0 deletes it. */
  maxAge?: number;
  secure: boolean;
  httpOnly?: boolean;
  sameSite?: 'Lax' | 'Strict';
  path?: string;
}

const COOKIE_NAME = /^[A-Za-z0-9_-]+$/;
const COOKIE_VALUE = /^[A-Za-z0-9_.-]*$/;

/** Cookies of a request by name (the first of duplicates wins, as browsers send the most specific path first). */
export function readCookies(req: IncomingMessage): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq < 1) continue;
    const name = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (!out.has(name)) out.set(name, value);
  }
  return out;
}

export function serializeCookie(name: string, value: string, o: CookieOptions): string {
  if (!COOKIE_NAME.test(name) || !COOKIE_VALUE.test(value)) throw new Error(`Invalid cookie ${name}`);
  const parts = [`${name}=${value}`, `Path=${o.path ?? '/'}`, `SameSite=${o.sameSite ?? 'Lax'}`];
  if (o.httpOnly ?? true) parts.push('HttpOnly');
  if (o.secure) parts.push('Secure');
  if (o.maxAge !== undefined) {
    parts.push(`Max-Age=${o.maxAge}`);
    if (o.maxAge === 0) parts.push('Expires=Thu, 01 Jan 1970 00:00:00 GMT');
  }
  return parts.join('; ');
}

function mac(key: string, name: string, value: string): string {
  return createHmac('sha256', key).update(`${name}=${value}`).digest('base64url');
}

export function signCookieValue(keys: readonly string[], name: string, value: string): string {
  const key = keys[0];
  if (!key) throw new Error('No cookie signing key (config.oauth.cookieKeys is empty); set COOKIE_SECRET.');
  return `${value}.${mac(key, name, value)}`;
}

/** The value inside a signed cookie, or null when it is missing, malformed or signed with no current key. */
export function verifyCookieValue(
  keys: readonly string[],
  name: string,
  signed: string | undefined,
): string | null {
  if (!signed) return null;
  const dot = signed.lastIndexOf('.');
  if (dot < 1) return null;
  const value = signed.slice(0, dot);
  const given = Buffer.from(signed.slice(dot + 1));
  for (const key of keys) {
    const expected = Buffer.from(mac(key, name, value));
    if (expected.length === given.length && timingSafeEqual(expected, given)) return value;
  }
  return null;
}

/** Adds a Set-Cookie line to the response (keeps lines set earlier). */
export function appendSetCookie(
  res: { getHeader(n: string): unknown; setHeader(n: string, v: string[]): unknown },
  line: string,
): void {
  const prev = res.getHeader('set-cookie');
  const lines = Array.isArray(prev) ? (prev as string[]) : typeof prev === 'string' ? [prev] : [];
  res.setHeader('set-cookie', [...lines, line]);
}

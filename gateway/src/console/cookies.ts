/** Reading and writing the console's cookies (RFC 6265): parse a Cookie header, build Set-Cookie values. */
import type { IncomingMessage } from 'node:http';

export function readCookie(req: IncomingMessage, name: string): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

export interface CookieOptions {
  path: string;
  sameSite: 'Strict' | 'Lax';
  /** Seconds; 0 deletes the cookie. */
  maxAge: number;
  /** Only over HTTPS (set when the console's origin is https). */
  secure: boolean;
}

/** An HttpOnly cookie: script never reads it. Values are base64url or JSON-free tokens, so no quoting is needed. */
export function setCookie(name: string, value: string, o: CookieOptions): string {
  return [
    `${name}=${value}`,
    `Path=${o.path}`,
    `Max-Age=${o.maxAge}`,
    'HttpOnly',
    `SameSite=${o.sameSite}`,
    ...(o.secure ? ['Secure'] : []),
  ].join('; ');
}

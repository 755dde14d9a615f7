/**
 * HTTP plumbing of the HTML pages: security headers, HTML answers, redirects, form bodies and the client address.
 *
 * Every page answers with a strict Content Security Policy (nothing but our own stylesheet loads; forms post to
 * this origin; no framing), `X-Content-Type-Options: nosniff`, `Cache-Control: no-store` and
 * `Referrer-Policy: same-origin`. (Not `no-referrer`: under that policy browsers send `Origin: null` on the
 * pages' own form posts, which would defeat the Origin check in csrf.ts; `same-origin` still sends nothing to
 * other sites.)
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { AppError, readBody } from '@agentgraph/runtime';

/** Form bodies are small: e-mail, password (≤ 1024 characters), a few hidden fields. */
export const MAX_FORM_BYTES = 16 * 1024;

export interface PageHeadersOptions {
  /** Origins a form on this page may end up at after redirects (Chrome applies form-action to redirects). */
  formTargets?: string[];
}

export function securityHeaders(o: PageHeadersOptions = {}): Record<string, string> {
  const formAction = ["'self'", ...(o.formTargets ?? [])].join(' ');
  return {
    'content-security-policy':
      `default-src 'none'; style-src 'self'; img-src 'self'; form-action ${formAction}; ` +
      "frame-ancestors 'none'; base-uri 'none'",
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
    'referrer-policy': 'same-origin',
    'cache-control': 'no-store',
    'cross-origin-opener-policy': 'same-origin',
  };
}

export function sendHtml(
  res: ServerResponse,
  status: number,
  body: string,
  o: PageHeadersOptions & { headers?: Record<string, string> } = {},
): void {
  res.writeHead(status, {
    ...securityHeaders(o),
    'content-type': 'text/html; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    ...o.headers,
  });
  res.end(res.req?.method === 'HEAD' ? undefined : body);
}

/** 303 See Other: after a POST the browser follows with a GET. */
export function redirect(res: ServerResponse, location: string): void {
  res.writeHead(303, { ...securityHeaders(), location, 'content-length': 0 });
  res.end();
}

export function queryOf(req: IncomingMessage): URLSearchParams {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  return new URLSearchParams(q < 0 ? '' : url.slice(q + 1));
}

/** Reads an application/x-www-form-urlencoded body (what an HTML form posts). */
export async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') {
    req.resume();
    throw new AppError(
      'BAD_USER_INPUT',
      'This page accepts form posts only (Content-Type: application/x-www-form-urlencoded). Use the form on the page.',
      { httpStatus: 415 },
    );
  }
  const body = await readBody(req, MAX_FORM_BYTES);
  return new URLSearchParams(body.toString('utf8'));
}

/** The peer's address (the limiter's per-client key). Proxies are not trusted: X-Forwarded-For is ignored. */
export function clientAddress(req: IncomingMessage): string {
  const a = req.socket.remoteAddress ?? 'unknown';
  return a.startsWith('::ffff:') ? a.slice(7) : a;
}

/** `next` after sign-in: a path on this origin only ("/device?user_code=…"), never "//host" or a full URL. */
export function safeNext(value: string | null | undefined): string | null {
  if (!value || value.length > 2048) return null;
  if (!value.startsWith('/') || value.startsWith('//') || value.includes('\\')) return null;
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(value)) return null;
  const base = 'http://next.invalid';
  const url = new URL(value, base);
  if (url.origin !== base) return null;
  return url.pathname + url.search;
}

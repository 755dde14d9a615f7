/**
 * Web sessions: the `ag_session` cookie of a signed-in browser. The cookie holds a random 32-byte id (signed with
 * config.oauth.cookieKeys); identity.web_sessions holds only its SHA-256, with the member (user + tenant), a CSRF
 * secret and an absolute expiry of 8 hours. The cookie is HttpOnly, SameSite=Lax, Path=/, and Secure when the
 * issuer is https. A session is valid while its row lives, the user is not disabled and is still a member; the
 * role is read fresh from the membership on every request.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AuthContext, Config, Queryable } from '@agentgraph/runtime';
import type { Role } from '../models.js';
import {
  appendSetCookie,
  readCookies,
  serializeCookie,
  signCookieValue,
  verifyCookieValue,
} from './cookies.js';

export const SESSION_COOKIE = 'ag_session';
export const SESSION_TTL_SECONDS = 8 * 60 * 60;

export interface WebSession {
  idHash: Buffer;
  userId: string;
  tenantId: string;
  role: Role;
  email: string;
  displayName: string;
  tenantName: string;
  csrfSecret: Buffer;
  expiresAt: Date;
}

export type Random = (bytes: number) => Buffer;

/** Cookies are Secure when the issuer (the origin browsers use) is https. Read per request: the issuer may be set late. */
export function secureCookies(config: Pick<Config, 'tokenIssuer'>): boolean {
  return new URL(config.tokenIssuer).protocol === 'https:';
}

const sha256 = (b: Buffer): Buffer => createHash('sha256').update(b).digest();
const bytes = (v: Uint8Array | Buffer): Buffer => Buffer.from(v);

function sessionIdFrom(req: IncomingMessage, keys: readonly string[]): Buffer | null {
  const value = verifyCookieValue(keys, SESSION_COOKIE, readCookies(req).get(SESSION_COOKIE));
  if (!value || !/^[A-Za-z0-9_-]{43}$/.test(value)) return null;
  return Buffer.from(value, 'base64url');
}

/** Creates a session for a member, sets the cookie on `res`, and ends the browser's previous session (fixation). */
export async function startWebSession(
  db: Queryable,
  config: Pick<Config, 'tokenIssuer' | 'oauth'>,
  req: IncomingMessage,
  res: ServerResponse,
  member: { userId: string; tenantId: string },
  now: Date,
  random: Random,
): Promise<{ csrfSecret: Buffer; expiresAt: Date }> {
  const previous = sessionIdFrom(req, config.oauth.cookieKeys);
  if (previous) await db.query('SELECT identity.delete_web_session($1)', [sha256(previous)]);
  const id = random(32);
  const csrfSecret = random(32);
  const expiresAt = new Date(now.getTime() + SESSION_TTL_SECONDS * 1000);
  await db.query('SELECT identity.create_web_session($1, $2, $3, $4, $5::timestamptz, $6::timestamptz)', [
    sha256(id),
    member.userId,
    member.tenantId,
    csrfSecret,
    now.toISOString(),
    expiresAt.toISOString(),
  ]);
  appendSetCookie(
    res,
    serializeCookie(
      SESSION_COOKIE,
      signCookieValue(config.oauth.cookieKeys, SESSION_COOKIE, id.toString('base64url')),
      { secure: secureCookies(config), maxAge: SESSION_TTL_SECONDS },
    ),
  );
  return { csrfSecret, expiresAt };
}

/** The browser's live session, or null (no cookie, bad signature, expired, ended, user disabled, not a member). */
export async function readWebSession(
  db: Queryable,
  config: Pick<Config, 'oauth'>,
  req: IncomingMessage,
  now: Date,
): Promise<WebSession | null> {
  const id = sessionIdFrom(req, config.oauth.cookieKeys);
  if (!id) return null;
  const idHash = sha256(id);
  const r = await db.query<{
    user_id: string;
    tenant_id: string;
    csrf_secret: Uint8Array;
    expires_at: Date | string;
    role: Role;
    email: string;
    display_name: string;
    tenant_name: string;
  }>('SELECT * FROM identity.web_session($1, $2::timestamptz)', [idHash, now.toISOString()]);
  const row = r.rows[0];
  if (!row) return null;
  return {
    idHash,
    userId: row.user_id,
    tenantId: row.tenant_id,
    role: row.role,
    email: row.email,
    displayName: row.display_name,
    tenantName: row.tenant_name,
    csrfSecret: bytes(row.csrf_secret),
    expiresAt: new Date(row.expires_at),
  };
}

/** Deletes the browser's session row (if any) and clears the cookie. */
export async function endWebSession(
  db: Queryable,
  config: Pick<Config, 'tokenIssuer' | 'oauth'>,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const id = sessionIdFrom(req, config.oauth.cookieKeys);
  if (id) await db.query('SELECT identity.delete_web_session($1)', [sha256(id)]);
  appendSetCookie(res, serializeCookie(SESSION_COOKIE, '', { secure: secureCookies(config), maxAge: 0 }));
}

/** The session's member as the caller of tenant-scoped work (withTenant, device approval). */
export function authOf(session: WebSession): AuthContext {
  return { tenantId: session.tenantId, principalId: session.userId, role: session.role, scopes: [] };
}

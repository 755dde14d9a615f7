/**
 * Identity's plain HTTP routes next to /graphql:
 *  - GET /.well-known/jwks.json: the public signing keys every service verifies access tokens with.
 *  - POST /dev/token (development mode only, loopback peers only): a token for an existing membership, so
 *    `npm start` is usable before sign-in exists. The OAuth endpoints (device flow, authorization code + PKCE)
 *    replaces it; a production-mode server never has this route (it answers 404).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  AppError,
  badInput,
  readBody,
  sendJson,
  type RouteHandler,
  type SubgraphDeps,
} from '@agentgraph/runtime';
import { z } from 'zod';
import { Email, isUuid, parseInput } from './input.js';
import { OAUTH_METADATA_PATH, OPENID_METADATA_PATH } from './oauth/constants.js';
import { oauthOptionsFrom } from './oauth/options.js';
import { oauthServiceFor, type OAuthService } from './oauth/service.js';
import { webRoutes } from './web/index.js';
import { publishedJwks } from './keys.js';
import type { Role } from './models.js';
import { ACCESS_TOKEN_TTL_SECONDS, issueAccessToken } from './tokens.js';

export const JWKS_PATH = '/.well-known/jwks.json';
export const DEV_TOKEN_PATH = '/dev/token';

function allow(req: IncomingMessage, res: ServerResponse, methods: string[]): boolean {
  if (methods.includes(req.method ?? '')) return true;
  sendJson(
    res,
    405,
    { error: 'method_not_allowed', message: `Use ${methods.join(' or ')} on ${req.url?.split('?')[0]}.` },
    { allow: methods.join(', ') },
  );
  return false;
}

/** True for 127.0.0.0/8, ::1 and their IPv4-mapped forms. */
export function isLoopback(address: string | undefined): boolean {
  if (!address) return false;
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address;
  return v4 === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(v4);
}

const DevTokenRequest = z.object({
  email: Email,
  tenantId: z
    .string()
    .refine(isUuid, 'must be a tenant id (UUID)')
    .transform((s) => s.toLowerCase())
    .optional(),
});

/**
 * The JWKS, once the issuer's keys are set up (the active key and the pending one published ahead of rotation), so
 * that no verifier caches a set without the next key. `keysReady` is the OAuth service's start (retried after a
 * failure; a database outage answers 503).
 */
export function jwksRoute(deps: Pick<SubgraphDeps, 'db'>, keysReady: () => Promise<void>): RouteHandler {
  return async (req, res) => {
    if (!allow(req, res, ['GET', 'HEAD'])) return;
    await keysReady();
    const jwks = await publishedJwks(deps.db);
    sendJson(res, 200, jwks, { 'cache-control': 'public, max-age=300' }, 'application/jwk-set+json');
  };
}

export function devTokenRoute(deps: Pick<SubgraphDeps, 'db' | 'config'>): RouteHandler {
  const { db, config } = deps;
  return async (req, res) => {
    if (!allow(req, res, ['POST'])) return;
    // Loopback only, and never through a proxy (a local reverse proxy would make every peer look local).
    if (!isLoopback(req.socket.remoteAddress) || req.headers['x-forwarded-for'] || req.headers['forwarded']) {
      throw new AppError(
        'FORBIDDEN',
        `${DEV_TOKEN_PATH} answers direct requests from this machine only (development mode). Call it on 127.0.0.1 without a proxy.`,
      );
    }
    let body: unknown;
    try {
      body = JSON.parse((await readBody(req, 16 * 1024)).toString('utf8'));
    } catch (err) {
      if (err instanceof AppError) throw err;
      throw badInput(
        'The body must be JSON: {"email": "...", "tenantId"?: "..."} with Content-Type: application/json.',
      );
    }
    const { email, tenantId } = parseInput(DevTokenRequest, body, '');
    const r = await db.query<{ tenant_id: string; user_id: string; role: Role }>(
      'SELECT tenant_id, user_id, role FROM identity.memberships_by_email($1)',
      [email],
    );
    const candidates = tenantId ? r.rows.filter((m) => m.tenant_id === tenantId) : r.rows;
    if (candidates.length === 0) {
      throw new AppError(
        'NOT_FOUND',
        tenantId
          ? 'No user with this e-mail is a member of that tenant. Check the e-mail and tenantId.'
          : 'No user with this e-mail is a member of any tenant. Create one with `npm run admin -- bootstrap --tenant <name> --email <e-mail> --name <name>`.',
      );
    }
    if (candidates.length > 1) {
      throw badInput('This user belongs to several tenants; pass "tenantId" to pick one.', {
        field: 'tenantId',
        tenantIds: candidates.map((m) => m.tenant_id),
      });
    }
    const m = candidates[0]!;
    const token = await issueAccessToken(db, config, {
      tenantId: m.tenant_id,
      userId: m.user_id,
      role: m.role,
      scopes: ['api:read', 'api:write'],
    });
    sendJson(
      res,
      200,
      {
        access_token: token,
        token_type: 'Bearer',
        expires_in: ACCESS_TOKEN_TTL_SECONDS,
        tenant_id: m.tenant_id,
        user_id: m.user_id,
      },
      { 'cache-control': 'no-store', pragma: 'no-cache' },
    );
  };
}

/** RFC 8414 metadata: oidc-provider's discovery document, served at the OAuth well-known path too. */
export function oauthMetadataRoute(oauth: OAuthService): RouteHandler {
  return async (req, res) => {
    if (!allow(req, res, ['GET', 'HEAD'])) return;
    req.url = OPENID_METADATA_PATH;
    await oauth.handler(req, res);
  };
}

/**
 * The routes a served identity subgraph adds: the web pages (sign-in, the login interaction, device verification),
 * the JWKS, the OAuth authority (oidc-provider answers every path not listed here: '*'), RFC 8414 metadata, and
 * /dev/token only in development mode.
 */
export function identityRoutes(deps: SubgraphDeps): Record<string, RouteHandler> {
  const oauth = oauthServiceFor(deps, oauthOptionsFrom(deps.config));
  const routes: Record<string, RouteHandler> = {
    ...webRoutes(deps, { oauth: () => oauth }),
    [JWKS_PATH]: jwksRoute(deps, () => oauth.ready),
    [OAUTH_METADATA_PATH]: oauthMetadataRoute(oauth),
    '*': (req, res) => oauth.handler(req, res),
  };
  if (deps.config.mode === 'development') routes[DEV_TOKEN_PATH] = devTokenRoute(deps);
  return routes;
}

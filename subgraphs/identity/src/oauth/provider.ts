/**
 * Builds the oidc-provider instance: our PostgreSQL adapter, the static clients, the issuer's keys, JWT access
 * tokens for the API resource signed with the active key, the device flow (base-20 user codes XXXX-XXXX, interval,
 * slow_down), PKCE S256 for every authorization-code client, refresh-token rotation with reuse detection (oidc-provider
 * revokes the whole grant; our adapter turns that into a `grant` revocation so outstanding access tokens die too),
 * RFC 7009 revocation including our JWT access tokens, and RFC 8693 token exchange.
 *
 * oidc-provider does not support `slow_down` or token exchange itself; both are added here: token exchange through
 * its public registerGrantType, slow_down by wrapping its device-code grant handler (reached through oidc-provider's
 * internal weak_cache helper — pinned version, covered by the openid-client tests).
 */
import type { Config, Logger, Queryable } from '@agentgraph/runtime';
import { classifyDatabaseError, CLOCK_TOLERANCE_SECONDS, revokeTokens } from '@agentgraph/runtime';
import Provider, { errors, type Configuration, type KoaContextWithOIDC } from 'oidc-provider';
// oidc-provider has no exports map; this is its internal per-instance state reader (see the note above).
import instance from 'oidc-provider/lib/helpers/weak_cache.js';
import { SIGNING_ALG, type IssuerKey } from '../keys.js';
import { createAdapterClass } from './adapter.js';
import { clientsFor } from './clients.js';
import {
  ACCESS_TOKEN_TTL_SECONDS,
  API_RESOURCE,
  API_SCOPES,
  DEVICE_CODE_GRANT,
  INTERACTION_PATH,
  OIDC_SCOPES,
  OPENID_METADATA_PATH,
  ROUTES,
  TOKEN_EXCHANGE_GRANT,
} from './constants.js';
import { deviceExtraParams } from './device-params.js';
import { checkDevicePoll, recordDeviceAuthorization } from './device-polling.js';
import { renderOAuthError } from './error-page.js';
import { invalidGrantDescription } from './grant-errors.js';
import { verifyOwnAccessToken } from './own-token.js';
import { extraAccessTokenClaims } from './token-claims.js';
import { TOKEN_EXCHANGE_PARAMETERS, tokenExchangeHandler } from './token-exchange.js';

export interface ProviderOptions {
  config: Config;
  db: Queryable;
  log: Logger;
  keys: IssuerKey[];
  /** RFC 8628 interval advertised to devices, in seconds. */
  devicePollIntervalSeconds: number;
  now?: () => Date;
}

const DAY = 24 * 60 * 60;
/** oidc-provider's description for a grant type the client is not registered for (see its actions/token.js). */
const GRANT_NOT_ALLOWED = 'requested grant type is not allowed for this client';
/**
 * oidc-provider's own user-code pages (code_verification at /device, device_resume at /device/:uid). identity's
 * /device page (web/device-page.ts, under the wrong-guess limits) replaces them; identity's route table takes the
 * exact path only, and oidc-provider's router would still answer /device/, /DEVICE and /device/<uid>.
 */
const PROVIDER_DEVICE_PAGES = new RegExp(`^/*${ROUTES.code_verification.slice(1)}(/|$)`, 'i');

type GrantHandler = (ctx: KoaContextWithOIDC) => Promise<void>;

export function buildProvider(opts: ProviderOptions): Provider {
  const { config, db, log, keys } = opts;
  const now = opts.now ?? (() => new Date());
  const active = keys.find((k) => k.state === 'active');
  if (!active) throw new Error('identity has no active signing key; ensureSigningKey() must run first');

  const configuration: Configuration = {
    adapter: createAdapterClass(db, now),
    clients: clientsFor(config),
    jwks: { keys: keys.map((k) => k.privateJwk) } as Configuration['jwks'],
    cookies: {
      keys: config.oauth.cookieKeys,
      long: { httpOnly: true, sameSite: 'lax', signed: true },
      short: { httpOnly: true, sameSite: 'lax', signed: true },
    },
    routes: ROUTES,
    // What clients may ask for: the code flow only (no implicit or hybrid id_token responses), public clients only.
    responseTypes: ['code'],
    clientAuthMethods: ['none'],
    clockTolerance: CLOCK_TOLERANCE_SECONDS,
    scopes: [...OIDC_SCOPES],
    claims: { openid: ['sub'] },
    extraParams: deviceExtraParams,
    async findAccount(_ctx, sub) {
      return { accountId: sub, claims: () => ({ sub }) };
    },
    async extraTokenClaims(_ctx, token) {
      return extraAccessTokenClaims(db, token as unknown as { kind: string; grantId?: string });
    },
    features: {
      devInteractions: { enabled: false },
      deviceFlow: {
        enabled: true,
        charset: 'base-20',
        mask: '****-****',
        deviceInfo: (ctx) => ({ userAgent: ctx.get('user-agent') }),
      },
      // A client may revoke only what was issued to it (RFC 7009 §2.1).
      revocation: {
        enabled: true,
        allowedPolicy: (_ctx, client, token) => token.clientId === client.clientId,
      },
      introspection: { enabled: false },
      // The API's verifiers take Bearer tokens only (runtime's auth.ts): sender-constrained tokens would not be
      // checked as such, so DPoP is neither offered nor issued.
      dPoP: { enabled: false },
      userinfo: { enabled: false },
      rpInitiatedLogout: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => API_RESOURCE,
        useGrantedResource: () => true,
        getResourceServerInfo(_ctx, resourceIndicator) {
          if (resourceIndicator !== API_RESOURCE) throw new errors.InvalidTarget();
          return {
            scope: API_SCOPES.join(' '),
            audience: config.tokenAudience,
            accessTokenTTL: ACCESS_TOKEN_TTL_SECONDS,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: SIGNING_ALG, kid: active.kid } },
          };
        },
      },
    },
    pkce: { required: () => true },
    rotateRefreshToken: true,
    issueRefreshToken: async (_ctx, client, code) =>
      client.grantTypeAllowed('refresh_token') && code.scopes.has('offline_access'),
    ttl: {
      AccessToken: ACCESS_TOKEN_TTL_SECONDS,
      AuthorizationCode: 60,
      DeviceCode: 600,
      IdToken: ACCESS_TOKEN_TTL_SECONDS,
      Interaction: 600,
      Session: 8 * 60 * 60,
      Grant: 90 * DAY,
      // Desktops keep their enrolment for 90 days of inactivity; each rotation starts a new lifetime.
      RefreshToken: (_ctx, _token, client) => (client.clientId === 'agentgraph-desktop' ? 90 * DAY : 7 * DAY),
    },
    interactions: {
      url: (_ctx, interaction) => `${INTERACTION_PATH}?uid=${encodeURIComponent(interaction.uid)}`,
    },
    clientDefaults: {
      id_token_signed_response_alg: SIGNING_ALG,
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code'],
      response_types: ['code'],
    },
    enabledJWA: { idTokenSigningAlgValues: [SIGNING_ALG] },
    renderError: renderOAuthError,
  };

  const provider = new Provider(config.tokenIssuer, configuration);
  provider.proxy = false;

  provider.registerGrantType(
    TOKEN_EXCHANGE_GRANT,
    tokenExchangeHandler(db, config, now) as unknown as Parameters<Provider['registerGrantType']>[1],
    TOKEN_EXCHANGE_PARAMETERS,
  );

  // slow_down (RFC 8628 §3.5): check the polling discipline before oidc-provider's own device-code handler runs.
  const handlers = (instance as (p: Provider) => { grantTypeHandlers: Map<string, GrantHandler> })(
    provider,
  ).grantTypeHandlers;
  const deviceCodeGrant = handlers.get(DEVICE_CODE_GRANT);
  if (!deviceCodeGrant) throw new Error('oidc-provider has no device_code grant handler to wrap');
  handlers.set(DEVICE_CODE_GRANT, async (ctx) => {
    const code = (ctx.oidc.params as Record<string, string | undefined>)['device_code'];
    if (code) {
      const slowed = await checkDevicePoll(db, code, opts.devicePollIntervalSeconds, now());
      if (slowed !== null) {
        throw new errors.SlowDown(`poll at most every ${slowed} seconds`);
      }
    }
    return deviceCodeGrant(ctx);
  });

  provider.use(async (ctx, next) => {
    if (PROVIDER_DEVICE_PAGES.test(ctx.path)) {
      // Not oidc-provider's user-code form (no wrong-guess limit there): the browser goes to identity's page.
      if (ctx.method === 'GET' || ctx.method === 'HEAD') {
        ctx.status = 303;
        ctx.set('location', `${ROUTES.code_verification}${ctx.querystring ? `?${ctx.querystring}` : ''}`);
      } else {
        ctx.status = 404;
        ctx.body = {
          error: 'not_found',
          error_description: `enter device codes at ${ROUTES.code_verification}`,
        };
      }
      return;
    }
    await next();
    const path = ctx.path;
    if (ctx.method === 'GET' && path === OPENID_METADATA_PATH && ctx.status === 200) {
      // The API scopes are resource scopes (RFC 8707), which oidc-provider leaves out of scopes_supported.
      const body = ctx.body as { scopes_supported?: string[] };
      ctx.body = { ...body, scopes_supported: [...OIDC_SCOPES, ...API_SCOPES] };
      return;
    }
    if (ctx.method !== 'POST') return;
    if (path === ROUTES.device_authorization && ctx.status === 200) {
      const body = ctx.body as { device_code: string; expires_in: number };
      await recordDeviceAuthorization(
        db,
        body.device_code,
        opts.devicePollIntervalSeconds,
        body.expires_in,
        now(),
      );
      ctx.body = { ...body, interval: opts.devicePollIntervalSeconds };
    } else if (path === ROUTES.revocation && ctx.status === 400) {
      await revokeJwtAccessToken(ctx as KoaContextWithOIDC, db, config, now(), log);
    } else if (path === ROUTES.token && ctx.status === 400) {
      // RFC 6749 §5.2 names this case unauthorized_client; oidc-provider answers invalid_request.
      const body = ctx.body as { error?: string; error_description?: string };
      if (body.error === 'invalid_request' && body.error_description === GRANT_NOT_ALLOWED) {
        ctx.body = { ...body, error: 'unauthorized_client' };
      }
    }
  });

  // invalid_grant says why (expired, already used, revoked, PKCE mismatch, ...): oidc-provider keeps the reason in
  // error_detail and answers a generic description; the body is already set when this event fires.
  provider.on('grant.error', (ctx, error) => {
    const body = ctx.body as { error?: string; error_description?: string } | undefined;
    if (!(error instanceof errors.InvalidGrant) || body?.error !== 'invalid_grant') return;
    const description = invalidGrantDescription((error as { error_detail?: unknown }).error_detail);
    if (description) ctx.body = { ...body, error_description: description };
  });
  provider.on('server_error', (ctx, error) => {
    // The database being unreachable is an outage, not a bug: 503 with Retry-After, which clients retry (RFC 6749
    // names it temporarily_unavailable), instead of oidc-provider's 500 server_error.
    const outage = classifyDatabaseError(error);
    if (outage?.code === 'SERVICE_UNAVAILABLE') {
      const seconds = Math.ceil(Number(outage.extensions['retryAfterMs']) / 1000);
      log.warn('oauth request failed: database unavailable', { path: ctx.path, error });
      ctx.status = 503;
      ctx.set('retry-after', String(seconds));
      if (ctx.body && typeof ctx.body === 'object') {
        ctx.body = {
          error: 'temporarily_unavailable',
          error_description: `the authorization server's database is unavailable; retry after ${seconds} s`,
        };
      }
      return;
    }
    log.error('oauth server error', { error });
  });
  provider.on('grant.revoked', (_ctx, grantId) => log.info('oauth grant revoked', { grantId }));
  return provider;
}

/**
 * oidc-provider refuses to revoke structured (JWT) access tokens (unsupported_token_type); ours are revocable through
 * the runtime's revocation list. The client must be the one the token was issued to (RFC 7009 §2.1).
 */
async function revokeJwtAccessToken(
  ctx: KoaContextWithOIDC,
  db: Queryable,
  config: Pick<Config, 'tokenIssuer' | 'tokenAudience'>,
  at: Date,
  log: Logger,
): Promise<void> {
  const body = ctx.body as { error?: string } | undefined;
  const token = (ctx.oidc?.params as Record<string, string | undefined> | undefined)?.['token'];
  const client = ctx.oidc?.client;
  if (body?.error !== 'unsupported_token_type' || !token || !client) return;
  let payload: { jti?: string; exp?: number; client_id?: string };
  try {
    payload = await verifyOwnAccessToken(db, config, token, at);
  } catch {
    // RFC 7009 §2.2: an invalid (or expired) token needs no revocation; answer 200.
    ctx.status = 200;
    ctx.body = '';
    return;
  }
  if (payload.client_id !== client.clientId) {
    ctx.status = 400;
    ctx.body = { error: 'invalid_request', error_description: 'the token was not issued to this client' };
    return;
  }
  if (payload.jti && payload.exp) {
    await revokeTokens(db, [
      { kind: 'jti', value: payload.jti, expiresAt: new Date((payload.exp + 60) * 1000) },
    ]);
    log.info('access token revoked', { clientId: client.clientId });
  }
  ctx.status = 200;
  ctx.body = '';
}

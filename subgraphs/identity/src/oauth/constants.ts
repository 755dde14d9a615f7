/** Names every part of identity's OAuth authority agrees on. */

/** The resource indicator (RFC 8707) of the GraphQL API; tokens for it carry `aud` = config.tokenAudience. */
export const API_RESOURCE = 'urn:agentgraph:api';
/** Scopes of the API: reads (queries, subscriptions) and writes (mutations). */
export const API_SCOPES = ['api:read', 'api:write'] as const;
export const OIDC_SCOPES = ['openid', 'offline_access'] as const;

export const CONSOLE_CLIENT_ID = 'agentgraph-console';
export const DESKTOP_CLIENT_ID = 'agentgraph-desktop';

export const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
export const TOKEN_EXCHANGE_GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange';
export const TOKEN_TYPE_ACCESS_TOKEN = 'urn:ietf:params:oauth:token-type:access_token';
export const TOKEN_TYPE_JWT = 'urn:ietf:params:oauth:token-type:jwt';

/** RFC 8628 §3.2: the minimum polling interval we tell devices, in seconds; slow_down adds 5 (§3.5). */
export const DEVICE_POLL_INTERVAL_SECONDS = 5;
export const SLOW_DOWN_STEP_SECONDS = 5;

export const ACCESS_TOKEN_TTL_SECONDS = 15 * 60;
/** Exchanged (sidecar) tokens: at most this long, and never past the subject token's own expiry. */
export const EXCHANGED_TOKEN_MAX_TTL_SECONDS = 5 * 60;

export const ROUTES = {
  authorization: '/oauth/authorize',
  token: '/oauth/token',
  device_authorization: '/oauth/device_authorization',
  code_verification: '/device',
  revocation: '/oauth/revoke',
  end_session: '/oauth/logout',
  jwks: '/.well-known/jwks.json',
  userinfo: '/oauth/userinfo',
  introspection: '/oauth/introspect',
  pushed_authorization_request: '/oauth/par',
  registration: '/oauth/register',
  backchannel_authentication: '/oauth/backchannel',
  challenge: '/oauth/challenge',
  credential: '/oauth/credential',
} as const;

/** RFC 8414 metadata path (the provider itself serves the OpenID discovery document). */
export const OAUTH_METADATA_PATH = '/.well-known/oauth-authorization-server';
export const OPENID_METADATA_PATH = '/.well-known/openid-configuration';
/** Where oidc-provider sends the browser to sign in during authorization code + PKCE (identity's web pages). */
export const INTERACTION_PATH = '/interaction';

/**
 * OAuth 2.0 for SDK clients (browser and Node): RFC 8414 discovery, the device authorization grant (RFC 8628, with
 * `authorization_pending` and `slow_down` handled as the RFC says), refresh with rotation behind a `TokenProvider`,
 * and RFC 8693 token exchange. Plain fetch with form bodies; the clock and fetch are injectable, so tests are exact.
 * Tokens are returned to the caller (to keep in a secure store) and never logged.
 */
import { type Clock, systemClock } from '../clock.js';
import type { TokenProvider } from '../client.js';
import type { FetchLike } from '../transport.js';

export interface OAuthEndpoints {
  issuer: string;
  token_endpoint: string;
  device_authorization_endpoint?: string;
  revocation_endpoint?: string;
}

/** An OAuth error answer (RFC 6749 §5.2, RFC 8628 §3.5): `error` is the RFC's code. */
export class OAuthError extends Error {
  constructor(
    readonly error: string,
    readonly description: string | undefined,
    readonly status: number,
  ) {
    super(`OAuth error ${error}${description ? `: ${description}` : ''}`);
    this.name = 'OAuthError';
  }
}

export interface TokenSet {
  accessToken: string;
  tokenType: string;
  /** Epoch milliseconds. */
  expiresAt: number;
  refreshToken?: string;
  scope?: string;
  idToken?: string;
  /** RFC 8693 answers only. */
  issuedTokenType?: string;
}

interface Common {
  fetch?: FetchLike;
  clock?: Clock;
}

/** RFC 8414: the server's metadata, from `<issuer>/.well-known/oauth-authorization-server`. */
export async function discover(issuer: string, opts: Common = {}): Promise<OAuthEndpoints> {
  const f = opts.fetch ?? fetch;
  const base = issuer.replace(/\/$/, '');
  const res = await f(`${base}/.well-known/oauth-authorization-server`, {
    headers: { accept: 'application/json' },
  });
  if (!res.ok) throw new OAuthError('discovery_failed', `metadata answered HTTP ${res.status}`, res.status);
  const meta = (await res.json()) as Partial<OAuthEndpoints>;
  if (meta.issuer !== base || typeof meta.token_endpoint !== 'string') {
    throw new OAuthError(
      'discovery_failed',
      'the metadata names another issuer or no token endpoint',
      res.status,
    );
  }
  return meta as OAuthEndpoints;
}

async function postForm(
  f: FetchLike,
  url: string,
  form: Record<string, string | undefined>,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const body = new URLSearchParams();
  for (const [k, v] of Object.entries(form)) if (v !== undefined) body.set(k, v);
  const res = await f(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: body.toString(),
  });
  const text = await res.text();
  let parsed: Record<string, unknown> = {};
  if (text) {
    try {
      parsed = JSON.parse(text) as Record<string, unknown>;
    } catch {
      throw new OAuthError(
        'invalid_response',
        `the server answered HTTP ${res.status} with a body that is not JSON`,
        res.status,
      );
    }
  }
  return { status: res.status, body: parsed };
}

function fail(status: number, body: Record<string, unknown>): never {
  const error = typeof body['error'] === 'string' ? body['error'] : 'invalid_response';
  const description = typeof body['error_description'] === 'string' ? body['error_description'] : undefined;
  throw new OAuthError(error, description, status);
}

function tokenSet(body: Record<string, unknown>, now: number): TokenSet {
  if (typeof body['access_token'] !== 'string' || typeof body['token_type'] !== 'string') {
    throw new OAuthError('invalid_response', 'the token answer has no access_token or token_type', 200);
  }
  const expiresIn = typeof body['expires_in'] === 'number' ? body['expires_in'] : 300;
  return {
    accessToken: body['access_token'],
    tokenType: body['token_type'],
    expiresAt: now + expiresIn * 1000,
    ...(typeof body['refresh_token'] === 'string' && { refreshToken: body['refresh_token'] }),
    ...(typeof body['scope'] === 'string' && { scope: body['scope'] }),
    ...(typeof body['id_token'] === 'string' && { idToken: body['id_token'] }),
    ...(typeof body['issued_token_type'] === 'string' && { issuedTokenType: body['issued_token_type'] }),
  };
}

export interface DeviceAuthorization {
  deviceCode: string;
  userCode: string;
  verificationUri: string;
  verificationUriComplete?: string;
  /** Epoch milliseconds. */
  expiresAt: number;
  /** Seconds between polls (RFC 8628 default 5). */
  interval: number;
}

/** RFC 8628 §3.1–3.2. `extra` carries server-specific parameters (AgentGraph: device_name, device_platform, device_jwk). */
export async function startDeviceAuthorization(
  endpoints: OAuthEndpoints,
  request: { clientId: string; scope: string; extra?: Record<string, string> },
  opts: Common = {},
): Promise<DeviceAuthorization> {
  if (!endpoints.device_authorization_endpoint) {
    throw new OAuthError('unsupported', 'the server publishes no device_authorization_endpoint', 0);
  }
  const clock = opts.clock ?? systemClock;
  const { status, body } = await postForm(opts.fetch ?? fetch, endpoints.device_authorization_endpoint, {
    client_id: request.clientId,
    scope: request.scope,
    ...request.extra,
  });
  if (status !== 200) fail(status, body);
  if (typeof body['device_code'] !== 'string' || typeof body['user_code'] !== 'string') {
    throw new OAuthError(
      'invalid_response',
      'the device authorization answer lacks device_code or user_code',
      status,
    );
  }
  return {
    deviceCode: body['device_code'],
    userCode: body['user_code'],
    verificationUri: String(body['verification_uri']),
    ...(typeof body['verification_uri_complete'] === 'string' && {
      verificationUriComplete: body['verification_uri_complete'],
    }),
    expiresAt: clock.now() + Number(body['expires_in'] ?? 600) * 1000,
    interval: typeof body['interval'] === 'number' ? body['interval'] : 5,
  };
}

/**
 * RFC 8628 §3.4–3.5: polls until the user decides. Waits `interval` before each poll; `slow_down` adds 5 s for this
 * and every later poll; `authorization_pending` goes on; `access_denied`, `expired_token` and anything else throw an
 * OAuthError. Stops with the device code's expiry and on `signal`.
 */
export async function pollDeviceToken(
  endpoints: OAuthEndpoints,
  request: { clientId: string; authorization: DeviceAuthorization; signal?: AbortSignal },
  opts: Common & { onPoll?: (answer: string) => void } = {},
): Promise<TokenSet> {
  const clock = opts.clock ?? systemClock;
  const f = opts.fetch ?? fetch;
  let interval = request.authorization.interval;
  for (;;) {
    await clock.sleep(interval * 1000, request.signal);
    if (clock.now() >= request.authorization.expiresAt) {
      throw new OAuthError('expired_token', 'the device code expired before the user decided', 0);
    }
    const { status, body } = await postForm(f, endpoints.token_endpoint, {
      grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
      device_code: request.authorization.deviceCode,
      client_id: request.clientId,
    });
    if (status === 200) {
      opts.onPoll?.('tokens');
      return tokenSet(body, clock.now());
    }
    const error = typeof body['error'] === 'string' ? body['error'] : '';
    opts.onPoll?.(error || `HTTP ${status}`);
    if (error === 'authorization_pending') continue;
    if (error === 'slow_down') {
      interval += 5;
      continue;
    }
    fail(status, body);
  }
}

/** RFC 8693: trades `subjectToken` for a narrower, shorter-lived access token (no refresh token). */
export async function exchangeToken(
  endpoints: OAuthEndpoints,
  request: { clientId: string; subjectToken: string; scope?: string; audience?: string; resource?: string },
  opts: Common = {},
): Promise<TokenSet> {
  const clock = opts.clock ?? systemClock;
  const { status, body } = await postForm(opts.fetch ?? fetch, endpoints.token_endpoint, {
    grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
    client_id: request.clientId,
    subject_token: request.subjectToken,
    subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
    requested_token_type: 'urn:ietf:params:oauth:token-type:access_token',
    scope: request.scope,
    audience: request.audience,
    resource: request.resource,
  });
  if (status !== 200) fail(status, body);
  return tokenSet(body, clock.now());
}

export interface RefreshingTokenProviderOptions extends Common {
  endpoints: OAuthEndpoints;
  clientId: string;
  tokens: TokenSet;
  /** Renew this long before expiry (default 60 s). */
  skewMs?: number;
  /** Called with every new token set (rotation: persist the new refresh token in your secure store). */
  onTokens?: (tokens: TokenSet) => void | Promise<void>;
}

/**
 * A TokenProvider for AgentGraphClient: serves the access token, renews it with the refresh token before it
 * expires (and once when the server said UNAUTHENTICATED), keeps the rotated refresh token, and runs one refresh at a
 * time however many calls ask.
 */
export class RefreshingTokenProvider implements TokenProvider {
  private tokens: TokenSet;
  private inFlight: Promise<string> | null = null;

  constructor(private readonly opts: RefreshingTokenProviderOptions) {
    this.tokens = opts.tokens;
  }

  get current(): TokenSet {
    return this.tokens;
  }

  async getToken(): Promise<string> {
    const clock = this.opts.clock ?? systemClock;
    if (clock.now() < this.tokens.expiresAt - (this.opts.skewMs ?? 60_000)) return this.tokens.accessToken;
    return this.refresh();
  }

  refresh(): Promise<string> {
    this.inFlight ??= this.doRefresh().finally(() => {
      this.inFlight = null;
    });
    return this.inFlight;
  }

  private async doRefresh(): Promise<string> {
    const refreshToken = this.tokens.refreshToken;
    if (!refreshToken) throw new OAuthError('invalid_grant', 'no refresh token: sign in again', 0);
    const clock = this.opts.clock ?? systemClock;
    const { status, body } = await postForm(this.opts.fetch ?? fetch, this.opts.endpoints.token_endpoint, {
      grant_type: 'refresh_token',
      refresh_token: refreshToken,
      client_id: this.opts.clientId,
    });
    if (status !== 200) fail(status, body);
    const next = tokenSet(body, clock.now());
    // A server that does not rotate keeps the old refresh token valid.
    this.tokens = { ...next, refreshToken: next.refreshToken ?? refreshToken };
    await this.opts.onTokens?.(this.tokens);
    return this.tokens.accessToken;
  }
}

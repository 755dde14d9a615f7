/**
 * Where the OAuth authority must say exactly what the RFCs say, checked with a real client (panva's openid-client):
 * RFC 8414 metadata that offers only what is served (the code flow, public clients, the API scopes), RFC 8628's
 * `expired_token` for a device code that has expired, `invalid_grant` that says why, oidc-provider's own user-code
 * pages out of reach, and access tokens refused at most 5 s after `exp` by every verifier.
 */
import { decodeJwt } from 'jose';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTokenVerifier, type AppError } from '@agentgraph/runtime';
import { issueAccessToken } from '../../src/index.js';
import { EXPIRED_DEVICE_CODE_KEPT_SECONDS, purgeExpiredOAuthRows } from '../../src/oauth/adapter.js';
import { approveDeviceAuthorization } from '../../src/oauth/device-approval.js';
import { invalidGrantDescription } from '../../src/oauth/grant-errors.js';
import {
  CONSOLE_CLIENT_ID,
  DEVICE_CODE_GRANT,
  DESKTOP_CLIENT_ID,
  TOKEN_EXCHANGE_GRANT,
} from '../../src/oauth/constants.js';
import { deviceEnrolment, startOAuthIdentity, type OAuthHarness } from './harness.js';

let h: OAuthHarness;
beforeAll(async () => {
  h = await startOAuthIdentity();
});
afterAll(async () => {
  await h?.close();
});

/** The device's next poll comes when it is due: the polling clock is moved back instead of waited out. */
async function due(): Promise<void> {
  await h.db.query("UPDATE identity.device_polls SET last_poll_at = last_poll_at - interval '1 hour'");
}

/** Polls once, now (openid-client waits `interval` before each poll: 0 here, and the poll is due). */
async function pollOnce(config: client.Configuration, da: client.DeviceAuthorizationResponse) {
  await due();
  return client.pollDeviceAuthorizationGrant(config, { ...da, interval: 0 });
}

/** What a refused poll or refresh said: the OAuth error and its description. */
async function refusal(p: Promise<unknown>): Promise<{ error: string; error_description?: string }> {
  try {
    await p;
  } catch (err) {
    const e = err as client.ResponseBodyError;
    if (typeof e.error === 'string') return { error: e.error, error_description: e.error_description };
    throw err;
  }
  throw new Error('expected the request to be refused');
}

describe('RFC 8414 metadata', () => {
  it('offers the code flow, public clients and the API scopes; nothing implicit, hybrid or sender-constrained', async () => {
    const oidc = await client.discovery(new URL(h.issuer), CONSOLE_CLIENT_ID, undefined, client.None(), {
      execute: [client.allowInsecureRequests],
    });
    const oauth2 = await client.discovery(new URL(h.issuer), DESKTOP_CLIENT_ID, undefined, client.None(), {
      algorithm: 'oauth2',
      execute: [client.allowInsecureRequests],
    });
    // /.well-known/openid-configuration and /.well-known/oauth-authorization-server are the same document.
    expect(oauth2.serverMetadata()).toEqual(oidc.serverMetadata());
    const m = oauth2.serverMetadata();
    expect(m.response_types_supported).toEqual(['code']);
    expect([...(m.grant_types_supported ?? [])].sort()).toEqual(
      ['authorization_code', 'refresh_token', DEVICE_CODE_GRANT, TOKEN_EXCHANGE_GRANT].sort(),
    );
    expect(m.scopes_supported).toEqual(['openid', 'offline_access', 'api:read', 'api:write']);
    expect(m.token_endpoint_auth_methods_supported).toEqual(['none']);
    expect(m.code_challenge_methods_supported).toEqual(['S256']);
    expect(m).not.toHaveProperty('dpop_signing_alg_values_supported');
  });

  it('refuses the response types it does not list', async () => {
    for (const responseType of ['id_token', 'code id_token', 'token', 'none']) {
      const url = new URL(`${h.issuer}/oauth/authorize`);
      url.search = new URLSearchParams({
        client_id: CONSOLE_CLIENT_ID,
        response_type: responseType,
        redirect_uri: h.config.oauth.consoleRedirectUris[0]!,
        scope: 'openid',
        nonce: 'n-0S6_WzA2Mj',
        code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGjSstw-cM',
        code_challenge_method: 'S256',
      }).toString();
      const res = await fetch(url, { redirect: 'manual' });
      const where = new URL(res.headers.get('location') ?? url.href);
      const answer = new URLSearchParams(where.hash.slice(1) || where.search);
      expect(answer.get('error'), responseType).toBe('unsupported_response_type');
    }
  });
});

describe('device code expiry (RFC 8628 §3.5)', () => {
  it('answers expired_token to a poll after the code expired, until it is purged; then invalid_grant, saying why', async () => {
    const config = await h.desktop();
    const da = await client.initiateDeviceAuthorization(config, (await deviceEnrolment()).params);
    // The 10 minutes are over: the stored expiry and the code's exp both lie in the past, as they do in real life.
    await h.db.query(
      `UPDATE identity.oauth_store
          SET expires_at = now() - interval '1 second',
              payload = jsonb_set(payload, '{exp}', to_jsonb(extract(epoch FROM now())::int - 1))
        WHERE model = 'DeviceCode' AND user_code = $1`,
      [da.user_code.replace('-', '')],
    );
    expect(await refusal(pollOnce(config, da))).toMatchObject({ error: 'expired_token' });
    // The purge keeps an expired device code a while, so a late poll still hears expired_token ...
    await purgeExpiredOAuthRows(h.db, 1000, new Date());
    expect(await refusal(pollOnce(config, da))).toMatchObject({ error: 'expired_token' });
    // ... and then it is gone: an unknown code, said so.
    await purgeExpiredOAuthRows(
      h.db,
      1000,
      new Date(Date.now() + (EXPIRED_DEVICE_CODE_KEPT_SECONDS + 5) * 1000),
    );
    expect(await refusal(pollOnce(config, da))).toEqual({
      error: 'invalid_grant',
      error_description: expect.stringContaining('the device code is unknown'),
    });
  });
});

describe('invalid_grant says why', () => {
  it('a device code used twice, a rotated refresh token reused, the revoked family after it', async () => {
    const ada = await h.member('Reasons', 'ada@reasons.test');
    const config = await h.desktop();
    const da = await client.initiateDeviceAuthorization(config, (await deviceEnrolment()).params);
    await h.guarded(ada.auth, (tx) => approveDeviceAuthorization(h.oauth, tx, ada.auth, da.user_code));
    expect((await pollOnce(config, da)).access_token).toBeTruthy();
    expect(await refusal(pollOnce(config, da))).toEqual({
      error: 'invalid_grant',
      error_description: expect.stringContaining('the device code was already exchanged for tokens'),
    });

    const ben = await h.member('Reasons 2', 'ben@reasons.test');
    const da2 = await client.initiateDeviceAuthorization(config, (await deviceEnrolment()).params);
    await h.guarded(ben.auth, (tx) => approveDeviceAuthorization(h.oauth, tx, ben.auth, da2.user_code));
    const t2 = await pollOnce(config, da2);
    const rotated = await client.refreshTokenGrant(config, t2.refresh_token!);
    expect(await refusal(client.refreshTokenGrant(config, t2.refresh_token!))).toEqual({
      error: 'invalid_grant',
      error_description: expect.stringContaining('the refresh token was already used'),
    });
    // Reuse revoked the whole grant: the newest refresh token of the family is dead too, and the answer says so.
    expect(await refusal(client.refreshTokenGrant(config, rotated.refresh_token!))).toEqual({
      error: 'invalid_grant',
      error_description: expect.stringContaining('revoked'),
    });
  });
});

describe('invalid_grant descriptions (grant-errors.ts)', () => {
  it('maps oidc-provider’s reasons, shows plain sentences of ours, and hides anything that carries values', () => {
    expect(invalidGrantDescription('refresh token is expired')).toBe(
      'the refresh token has expired; sign in again',
    );
    expect(invalidGrantDescription('the device behind this grant is revoked')).toBe(
      'the device behind this grant is revoked',
    );
    expect(
      invalidGrantDescription('subject_token is itself an exchanged token: only the host’s own'),
    ).toBeTruthy();
    expect(invalidGrantDescription('grant 3f2b9c1e-0000-4000-8000-000000000000 not found')).toBeUndefined();
    expect(invalidGrantDescription('token eyJhbGciOiJFUzI1NiJ9.x.y')).toBeUndefined();
    expect(invalidGrantDescription(undefined)).toBeUndefined();
  });

  it('a revoked device: its refresh token is refused, saying it was revoked', async () => {
    const cy = await h.member('Revokers', 'cy@revokers.test');
    const config = await h.desktop();
    const da = await client.initiateDeviceAuthorization(config, (await deviceEnrolment()).params);
    await h.guarded(cy.auth, (tx) => approveDeviceAuthorization(h.oauth, tx, cy.auth, da.user_code));
    const tokens = await pollOnce(config, da);
    const deviceId = decodeJwt(tokens.access_token)['did'];
    const owner = await issueAccessToken(h.db, h.config, {
      tenantId: cy.tenantId,
      userId: cy.userId,
      role: 'OWNER',
      scopes: ['api:read', 'api:write'],
    });
    const res = await fetch(`${h.issuer}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${owner}` },
      body: JSON.stringify({
        query:
          'mutation($id: ID!) { revokeDevice(id: $id, idempotencyKey: "revoke-1") { device { status } } }',
        variables: { id: deviceId },
      }),
    });
    expect(((await res.json()) as { data: unknown }).data).toEqual({
      revokeDevice: { device: { status: 'REVOKED' } },
    });
    expect(await refusal(client.refreshTokenGrant(config, tokens.refresh_token!))).toEqual({
      error: 'invalid_grant',
      error_description: expect.stringContaining('device revoked'),
    });
  });
});

describe("oidc-provider's own user-code pages", () => {
  it('are out of reach: /device/, /DEVICE and /device/<uid> send browsers to identity’s /device page', async () => {
    for (const path of ['/device/', '/DEVICE', '/device/some-uid', '/device/some-uid/']) {
      const get = await fetch(`${h.issuer}${path}?user_code=BCDF-GHJK`, { redirect: 'manual' });
      expect(get.status, path).toBe(303);
      expect(get.headers.get('location')).toBe('/device?user_code=BCDF-GHJK');
      const post = await fetch(`${h.issuer}${path}`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'user_code=BCDFGHJK',
      });
      expect(post.status, path).toBe(404);
    }
  });
});

describe('access-token expiry leeway', () => {
  it('every verifier refuses a token 6 s past exp and accepts one 3 s past (fake clock)', async () => {
    const { tenantId, userId } = await h.member('Leeway', 'lee@leeway.test');
    const issuedAt = new Date('2031-05-01T08:00:00.000Z');
    const token = await issueAccessToken(
      h.db,
      h.config,
      { tenantId, userId, role: 'VIEWER', scopes: ['api:read'] },
      issuedAt,
    );
    const expiry = issuedAt.getTime() + 15 * 60_000;
    const verifierAt = (ms: number) =>
      createTokenVerifier({
        issuer: h.issuer,
        audience: h.config.tokenAudience,
        keys: `${h.issuer}/.well-known/jwks.json`,
        now: () => new Date(expiry + ms),
      });
    expect((await verifierAt(3_000)(`Bearer ${token}`))?.principalId).toBe(userId);
    const late = await verifierAt(6_000)(`Bearer ${token}`).catch((e: unknown) => e as AppError);
    expect(late).toMatchObject({ code: 'UNAUTHENTICATED', message: expect.stringContaining('expired') });
  });
});

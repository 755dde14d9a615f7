/**
 * RFC 8628 against our server with a real OAuth client (panva's openid-client): discovery, device authorization with
 * the device's public key, polling with authorization_pending and slow_down, approval by a member, tokens with the
 * tenant/device claims, refresh rotation and reuse detection, RFC 8693 token exchange, RFC 7009 revocation.
 */
import { decodeJwt, decodeProtectedHeader } from 'jose';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withTenant, type AuthContext, type Queryable } from '@agentgraph/runtime';
import {
  approveDeviceAuthorization,
  denyDeviceAuthorization,
  findDeviceAuthorization,
} from '../../src/oauth/device-approval.js';
import { TOKEN_EXCHANGE_GRANT, TOKEN_TYPE_ACCESS_TOKEN } from '../../src/oauth/constants.js';
import { deviceEnrolment, startOAuthIdentity, type OAuthHarness } from './harness.js';

let h: OAuthHarness;
beforeAll(async () => {
  h = await startOAuthIdentity();
});
afterAll(async () => {
  await h?.close();
});

const guarded = <T>(auth: AuthContext, fn: (tx: Queryable) => Promise<T>): Promise<T> => h.guarded(auth, fn);

/** A fetch that records every token-endpoint answer (to see what the client was told). */
function recordingFetch(answers: string[]): client.CustomFetch {
  return async (url, options) => {
    const res = await fetch(url, options as RequestInit);
    if (url.endsWith('/oauth/token')) {
      const body = (await res.clone().json()) as { error?: string };
      answers.push(body.error ?? 'tokens');
    }
    return res;
  };
}

describe('device authorization grant (RFC 8628) with openid-client', () => {
  it('publishes RFC 8414 metadata with the device, revocation and token-exchange endpoints', async () => {
    const res = await fetch(`${h.issuer}/.well-known/oauth-authorization-server`);
    expect(res.status).toBe(200);
    const m = (await res.json()) as Record<string, unknown>;
    expect(m['issuer']).toBe(h.issuer);
    expect(m['device_authorization_endpoint']).toBe(`${h.issuer}/oauth/device_authorization`);
    expect(m['revocation_endpoint']).toBe(`${h.issuer}/oauth/revoke`);
    expect(m['jwks_uri']).toBe(`${h.issuer}/.well-known/jwks.json`);
    expect(m['grant_types_supported']).toEqual(
      expect.arrayContaining([
        'authorization_code',
        'refresh_token',
        'urn:ietf:params:oauth:grant-type:device_code',
        TOKEN_EXCHANGE_GRANT,
      ]),
    );
    expect(m['code_challenge_methods_supported']).toEqual(['S256']);
    const oauth2 = await client.discovery(new URL(h.issuer), 'agentgraph-desktop', undefined, client.None(), {
      algorithm: 'oauth2',
      execute: [client.allowInsecureRequests],
    });
    expect(oauth2.serverMetadata().issuer).toBe(h.issuer);
  });

  it('enrols a device: pending, one slow_down, approval, tokens with tenant and device; refresh, exchange, revoke', async () => {
    const ada = await h.member('Acme', 'ada@acme.test');
    const config = await h.desktop();
    const answers: string[] = [];
    config[client.customFetch] = recordingFetch(answers);
    const device = await deviceEnrolment();

    const da = await client.initiateDeviceAuthorization(config, device.params);
    expect(da.user_code).toMatch(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
    expect(da.device_code.length).toBeGreaterThanOrEqual(32);
    expect(da.interval).toBe(1);
    expect(da.verification_uri).toBe(`${h.issuer}/device`);
    expect(da.verification_uri_complete).toBe(`${h.issuer}/device?user_code=${da.user_code}`);

    // The user looks the code up (lower case, no dash is fine) and sees what is asking.
    const view = await guarded(ada.auth, (tx) =>
      findDeviceAuthorization(h.oauth, tx, ada.auth, da.user_code.toLowerCase().replace('-', '')),
    );
    expect(view).toMatchObject({
      userCode: da.user_code,
      clientId: 'agentgraph-desktop',
      deviceName: 'Ada’s laptop',
      platform: 'linux',
      scopes: ['openid', 'offline_access', 'api:read', 'api:write'],
    });
    expect(view.keyThumbprint).toMatch(/^[A-Za-z0-9_-]{43}$/);

    // Before approval: authorization_pending, answered to a raw poll at the advertised interval... the client
    // below is told interval 0, so its first poll is too soon: slow_down; it then waits 5 s more (openid-client
    // adds 5 s per slow_down), by which time the user has approved.
    const polling = client.pollDeviceAuthorizationGrant(config, { ...da, interval: 0 });
    await expect.poll(() => answers.length, { timeout: 10_000, interval: 50 }).toBeGreaterThanOrEqual(1);
    const { deviceId } = await guarded(ada.auth, (tx) =>
      approveDeviceAuthorization(h.oauth, tx, ada.auth, da.user_code),
    );
    const tokens = await polling;
    expect(answers).toEqual(['slow_down', 'tokens']);
    expect(tokens.token_type.toLowerCase()).toBe('bearer');
    expect(tokens.expires_in).toBe(900);
    expect(tokens.refresh_token).toBeTruthy();
    expect(tokens.id_token).toBeTruthy();

    const header = decodeProtectedHeader(tokens.access_token);
    expect(header).toMatchObject({ alg: 'ES256', typ: 'at+jwt' });
    expect(header.kid).toBeTruthy();
    const claims = decodeJwt(tokens.access_token);
    expect(claims).toMatchObject({
      iss: h.issuer,
      sub: ada.userId,
      aud: 'agentgraph',
      tid: ada.tenantId,
      role: 'OWNER',
      did: deviceId,
      client_id: 'agentgraph-desktop',
      scope: 'api:read api:write',
    });
    expect(claims.exp! - claims.iat!).toBe(900);
    const auth = await h.verify(`Bearer ${tokens.access_token}`);
    expect(auth).toMatchObject({ tenantId: ada.tenantId, principalId: ada.userId, deviceId });

    const row = await withTenant(h.db, ada.auth, (tx) =>
      tx.query<{ status: string; key_thumbprint: string; owner_id: string }>(
        'SELECT status, key_thumbprint, owner_id FROM identity.devices WHERE id = $1',
        [deviceId],
      ),
    );
    expect(row.rows[0]).toEqual({
      status: 'ENROLLED',
      key_thumbprint: view.keyThumbprint,
      owner_id: ada.userId,
    });

    // The code is spent: looking it up again is a wrong guess.
    await expect(
      guarded(ada.auth, (tx) => findDeviceAuthorization(h.oauth, tx, ada.auth, da.user_code)),
    ).rejects.toMatchObject({ code: 'NOT_FOUND' });

    // Refresh with rotation: a new refresh token each time.
    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
    expect(refreshed.refresh_token).toBeTruthy();
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
    expect(decodeJwt(refreshed.access_token)).toMatchObject({ did: deviceId, tid: ada.tenantId });

    // Token exchange (RFC 8693) for the sidecar: narrower and shorter-lived, no refresh token.
    const exchanged = await client.genericGrantRequest(config, TOKEN_EXCHANGE_GRANT, {
      subject_token: refreshed.access_token,
      subject_token_type: TOKEN_TYPE_ACCESS_TOKEN,
      requested_token_type: TOKEN_TYPE_ACCESS_TOKEN,
      audience: 'agentgraph',
      scope: 'api:read',
    });
    expect(exchanged.issued_token_type).toBe(TOKEN_TYPE_ACCESS_TOKEN);
    expect(exchanged.refresh_token).toBeUndefined();
    expect(exchanged.scope).toBe('api:read');
    const sub = decodeJwt(refreshed.access_token);
    const ex = decodeJwt(exchanged.access_token);
    expect(ex).toMatchObject({ sub: ada.userId, tid: ada.tenantId, did: deviceId, scope: 'api:read' });
    expect(ex.exp!).toBeLessThan(sub.exp!);
    expect(ex.exp! - ex.iat!).toBeLessThanOrEqual(300);
    expect(ex['act']).toEqual({ sub: 'agentgraph-desktop' });
    expect(await h.verify(`Bearer ${exchanged.access_token}`)).toMatchObject({ scopes: ['api:read'] });

    // Broader than the subject: refused.
    await expect(
      client.genericGrantRequest(config, TOKEN_EXCHANGE_GRANT, {
        subject_token: refreshed.access_token,
        subject_token_type: TOKEN_TYPE_ACCESS_TOKEN,
        scope: 'api:read api:admin',
      }),
    ).rejects.toMatchObject({ error: 'invalid_scope' });
    // An exchanged token is not exchanged again (the sidecar cannot mint tokens at identity), not even narrower.
    await expect(
      client.genericGrantRequest(config, TOKEN_EXCHANGE_GRANT, {
        subject_token: exchanged.access_token,
        subject_token_type: TOKEN_TYPE_ACCESS_TOKEN,
        scope: 'api:read',
      }),
    ).rejects.toMatchObject({ error: 'invalid_grant' });

    // Reusing the rotated-away refresh token revokes the whole family: the live refresh token and access tokens.
    await expect(client.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
    await expect(client.refreshTokenGrant(config, refreshed.refresh_token!)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
    await expect.poll(() => h.revocations.isRevoked(auth!), { timeout: 1000, interval: 10 }).toBe(true);
    await expect(h.verify(`Bearer ${refreshed.access_token}`)).rejects.toMatchObject({
      code: 'UNAUTHENTICATED',
    });
    await expect(h.verify(`Bearer ${exchanged.access_token}`)).rejects.toMatchObject({
      code: 'UNAUTHENTICATED',
    });
  }, 30_000);

  it('revokes a JWT access token (RFC 7009) and a refresh token with openid-client', async () => {
    const bob = await h.member('Bobco', 'bob@bobco.test');
    const config = await h.desktop();
    const device = await deviceEnrolment('Bob’s desktop', 'windows');
    const da = await client.initiateDeviceAuthorization(config, device.params);
    await guarded(bob.auth, (tx) => approveDeviceAuthorization(h.oauth, tx, bob.auth, da.user_code));
    const tokens = await client.pollDeviceAuthorizationGrant(config, da);
    expect(await h.verify(`Bearer ${tokens.access_token}`)).toMatchObject({ tenantId: bob.tenantId });

    await client.tokenRevocation(config, tokens.access_token);
    await expect
      .poll(
        () =>
          h.verify(`Bearer ${tokens.access_token}`).then(
            () => 'ok',
            (e: { code?: string }) => e.code,
          ),
        {
          timeout: 1000,
          interval: 10,
        },
      )
      .toBe('UNAUTHENTICATED');
    // The refresh token still works (revoking an access token revokes that token only) ...
    const next = await client.refreshTokenGrant(config, tokens.refresh_token!);
    // ... until it is revoked itself, which ends the grant and its access tokens.
    await client.tokenRevocation(config, next.refresh_token!, { token_type_hint: 'refresh_token' });
    await expect(client.refreshTokenGrant(config, next.refresh_token!)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
    await expect
      .poll(
        () =>
          h.verify(`Bearer ${next.access_token}`).then(
            () => 'ok',
            (e: { code?: string }) => e.code,
          ),
        {
          timeout: 1000,
          interval: 10,
        },
      )
      .toBe('UNAUTHENTICATED');
  }, 30_000);

  it('answers access_denied after the user denies, and expired_token after expiry', async () => {
    const cy = await h.member('Cyco', 'cy@cyco.test');
    const config = await h.desktop();
    const da = await client.initiateDeviceAuthorization(config, (await deviceEnrolment()).params);
    await guarded(cy.auth, (tx) => denyDeviceAuthorization(h.oauth, tx, cy.auth, da.user_code));
    await expect(client.pollDeviceAuthorizationGrant(config, da)).rejects.toMatchObject({
      error: 'access_denied',
    });
    // Nothing was written for a denied request.
    const devices = await withTenant(h.db, cy.auth, (tx) => tx.query('SELECT 1 FROM identity.devices'));
    expect(devices.rowCount).toBe(0);

    // A code whose 10 minutes are over (its stored expiry moved into the past): expired_token.
    const late = await client.initiateDeviceAuthorization(config, (await deviceEnrolment()).params);
    await h.db.query(
      `UPDATE identity.oauth_store SET payload = jsonb_set(payload, '{exp}', to_jsonb(extract(epoch FROM now())::int - 1))
        WHERE model = 'DeviceCode' AND user_code = $1`,
      [late.user_code.replace('-', '')],
    );
    await expect(client.pollDeviceAuthorizationGrant(config, late)).rejects.toMatchObject({
      error: 'expired_token',
    });
  }, 30_000);
});

/**
 * Wrong requests to the OAuth endpoints: each refused with the RFC's error code, and nothing written (the OAuth
 * store, devices and grants are counted before and after).
 */
import { SignJWT, decodeJwt, exportJWK, generateKeyPair } from 'jose';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withTenant, type AuthContext, type Queryable } from '@agentgraph/runtime';
import { issueAccessToken } from '../../src/index.js';
import { approveDeviceAuthorization, findDeviceAuthorization } from '../../src/oauth/device-approval.js';
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

async function form(path: string, params: Record<string, string>) {
  const res = await fetch(`${h.issuer}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(params),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, string>) : {} };
}

/** Rows the OAuth authority may write (oauth_store counted without its rate-limit side tables). */
async function written(): Promise<number> {
  const r = await h.db.query<{ n: string }>('SELECT count(*)::text AS n FROM identity.oauth_store');
  return Number(r.rows[0]!.n);
}

async function enrolledDevice(email: string) {
  const m = await h.member(email.split('@')[1]!, email);
  const config = await h.desktop();
  const da = await client.initiateDeviceAuthorization(config, (await deviceEnrolment()).params);
  await guarded(m.auth, (tx) => approveDeviceAuthorization(h.oauth, tx, m.auth, da.user_code));
  const tokens = await client.pollDeviceAuthorizationGrant(config, da);
  return { m, config, tokens };
}

describe('token endpoint refusals', () => {
  it('refuses unknown and unregistered grant types', async () => {
    const before = await written();
    expect(
      await form('/oauth/token', { grant_type: 'password', client_id: 'agentgraph-desktop' }),
    ).toMatchObject({
      status: 400,
      body: { error: 'unsupported_grant_type' },
    });
    expect(
      await form('/oauth/token', { grant_type: 'client_credentials', client_id: 'agentgraph-desktop' }),
    ).toMatchObject({ status: 400, body: { error: 'unsupported_grant_type' } });
    // The console may not use the device grant, nor token exchange.
    expect(
      await form('/oauth/token', {
        grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
        client_id: 'agentgraph-console',
        device_code: 'x',
      }),
    ).toMatchObject({ status: 400, body: { error: 'unauthorized_client' } });
    expect(
      await form('/oauth/token', { grant_type: 'authorization_code', client_id: 'nobody' }),
    ).toMatchObject({
      status: 401,
      body: { error: 'invalid_client' },
    });
    expect(await written()).toBe(before);
  });

  it('refuses device authorization without the device description or with a private key', async () => {
    const before = await written();
    const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true });
    const good = { ...(await deviceEnrolment()).params, client_id: 'agentgraph-desktop' };
    const cases: Record<string, string>[] = [
      { ...good, device_name: '' },
      { ...good, device_platform: 'amiga' },
      { ...good, device_jwk: JSON.stringify(await exportJWK(privateKey)) },
      { ...good, device_jwk: '{not json' },
      { ...good, device_jwk: JSON.stringify({ kty: 'RSA', n: 'AQAB', e: 'AQAB' }) },
    ];
    for (const params of cases) {
      expect(await form('/oauth/device_authorization', params)).toMatchObject({
        status: 400,
        body: { error: 'invalid_request' },
      });
    }
    void publicKey;
    expect(await written()).toBe(before);
  });

  it('answers invalid_grant for an unknown device code and for another client’s code', async () => {
    const before = await written();
    expect(
      await form('/oauth/token', {
        grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
        client_id: 'agentgraph-desktop',
        device_code: 'not-a-device-code',
      }),
    ).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect(await written()).toBe(before);
  });

  it('locks a user out after 5 wrong user codes: the 6th is refused even when right, nothing enrolled', async () => {
    const m = await h.member('Guessco', 'eve@guessco.test');
    const config = await h.desktop();
    const da = await client.initiateDeviceAuthorization(config, (await deviceEnrolment()).params);
    const wrong = ['BBBB-BBBB', 'CCCC-CCCC', 'DDDD-DDDD', 'FFFF-FFFF', 'GGGG-GGGG'];
    for (const code of wrong) {
      await expect(
        guarded(m.auth, (tx) => findDeviceAuthorization(h.oauth, tx, m.auth, code)),
      ).rejects.toMatchObject({
        code: 'NOT_FOUND',
      });
    }
    const sixth = guarded(m.auth, (tx) => approveDeviceAuthorization(h.oauth, tx, m.auth, da.user_code));
    await expect(sixth).rejects.toMatchObject({ code: 'RATE_LIMITED' });
    await sixth.catch((e: { extensions: { retryAfterMs: number } }) =>
      expect(e.extensions.retryAfterMs).toBeGreaterThan(0),
    );
    const devices = await withTenant(h.db, m.auth, (tx) => tx.query('SELECT 1 FROM identity.devices'));
    expect(devices.rowCount).toBe(0);
    // Another member is not locked out by Eve's guesses, and the code is still pending.
    const other = await h.member('Otherco', 'oz@otherco.test');
    await expect(
      guarded(other.auth, (tx) => findDeviceAuthorization(h.oauth, tx, other.auth, da.user_code)),
    ).resolves.toMatchObject({ userCode: da.user_code });
  });
});

describe('authorization endpoint refusals (PKCE S256 only, exact redirect URIs)', () => {
  const REDIRECT = 'http://127.0.0.1:9/callback';
  const authorize = async (params: Record<string, string>) => {
    const url = new URL(`${h.issuer}/oauth/authorize`);
    for (const [k, v] of Object.entries({
      client_id: 'agentgraph-console',
      response_type: 'code',
      redirect_uri: REDIRECT,
      scope: 'openid api:read',
      state: 'st',
      ...params,
    })) {
      url.searchParams.set(k, v);
    }
    return fetch(url, { redirect: 'manual' });
  };
  const verifier = client.randomPKCECodeVerifier();

  it('redirects back with invalid_request without PKCE or with the plain method', async () => {
    const before = await written();
    const cases: Record<string, string>[] = [
      {},
      { code_challenge: verifier, code_challenge_method: 'plain' },
      { code_challenge: await client.calculatePKCECodeChallenge(verifier) },
    ];
    for (const params of cases) {
      const res = await authorize(params);
      expect(res.status).toBe(303);
      const to = new URL(res.headers.get('location')!);
      expect(`${to.origin}${to.pathname}`).toBe(REDIRECT);
      expect(to.searchParams.get('error')).toBe('invalid_request');
      expect(to.searchParams.get('state')).toBe('st');
    }
    expect(await written()).toBe(before);
  });

  it('never redirects to an unregistered or inexactly matching redirect URI', async () => {
    const before = await written();
    const challenge = await client.calculatePKCECodeChallenge(verifier);
    for (const redirect of [
      'https://evil.example/callback',
      `${REDIRECT}/`,
      `${REDIRECT}?x=1`,
      'http://127.0.0.1:9/Callback',
    ]) {
      const res = await authorize({
        redirect_uri: redirect,
        code_challenge: challenge,
        code_challenge_method: 'S256',
      });
      expect(res.status).toBe(400);
      expect(res.headers.get('location')).toBeNull();
      const page = await res.text();
      expect(page).toContain('invalid_redirect_uri');
      expect(page).toContain('<html lang="en">');
    }
    expect(await written()).toBe(before);
  });
});

describe('token exchange refusals (RFC 8693)', () => {
  it('refuses bad subject tokens, other audiences and resources, actor tokens and other token types', async () => {
    const { m, tokens } = await enrolledDevice('xavier@xco.test');
    const before = await written();
    const base = {
      grant_type: TOKEN_EXCHANGE_GRANT,
      client_id: 'agentgraph-desktop',
      subject_token: tokens.access_token,
      subject_token_type: TOKEN_TYPE_ACCESS_TOKEN,
    };
    const expectError = async (params: Record<string, string>, error: string) =>
      expect(await form('/oauth/token', params)).toMatchObject({ status: 400, body: { error } });

    await expectError({ ...base, subject_token: 'not.a.jwt' }, 'invalid_grant');
    await expectError(
      { ...base, subject_token_type: 'urn:ietf:params:oauth:token-type:refresh_token' },
      'invalid_request',
    );
    await expectError(
      { ...base, requested_token_type: 'urn:ietf:params:oauth:token-type:refresh_token' },
      'invalid_request',
    );
    await expectError({ ...base, audience: 'someone-else' }, 'invalid_target');
    await expectError({ ...base, resource: 'https://evil.example/api' }, 'invalid_target');
    await expectError(
      { ...base, actor_token: tokens.access_token, actor_token_type: TOKEN_TYPE_ACCESS_TOKEN },
      'invalid_request',
    );
    await expectError({ ...base, scope: 'api:admin' }, 'invalid_scope');

    // alg none, a token signed by someone else, another audience, an expired one: invalid_grant.
    const claims = decodeJwt(tokens.access_token);
    const none =
      Buffer.from(JSON.stringify({ alg: 'none', typ: 'at+jwt' })).toString('base64url') +
      '.' +
      Buffer.from(JSON.stringify(claims)).toString('base64url') +
      '.';
    await expectError({ ...base, subject_token: none }, 'invalid_grant');
    const { privateKey } = await generateKeyPair('ES256');
    const forged = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: 'forged' })
      .sign(privateKey);
    await expectError({ ...base, subject_token: forged }, 'invalid_grant');
    const otherAudience = await issueAccessToken(
      h.db,
      { ...h.config, tokenIssuer: h.issuer, tokenAudience: 'another-api' },
      { tenantId: m.tenantId, userId: m.userId, role: 'OWNER', scopes: ['api:read'] },
    );
    await expectError({ ...base, subject_token: otherAudience }, 'invalid_grant');
    const expired = await issueAccessToken(
      h.db,
      h.config,
      { tenantId: m.tenantId, userId: m.userId, role: 'OWNER', scopes: ['api:read'] },
      new Date(Date.now() - 3600_000),
    );
    await expectError({ ...base, subject_token: expired }, 'invalid_grant');
    // A token of another client (here: minted for no OAuth client at all) cannot be exchanged by the desktop.
    const unclaimed = await issueAccessToken(h.db, h.config, {
      tenantId: m.tenantId,
      userId: m.userId,
      role: 'OWNER',
      scopes: ['api:read'],
    });
    await expectError({ ...base, subject_token: unclaimed }, 'invalid_grant');
    expect(await written()).toBe(before);
  });
});

describe('revocation endpoint (RFC 7009)', () => {
  it('answers 200 for an unknown or malformed token and refuses another client’s token', async () => {
    const { tokens } = await enrolledDevice('yan@yco.test');
    expect(await form('/oauth/revoke', { client_id: 'agentgraph-desktop', token: 'garbage' })).toEqual({
      status: 200,
      body: {},
    });
    expect(
      await form('/oauth/revoke', { client_id: 'agentgraph-console', token: tokens.access_token }),
    ).toMatchObject({ status: 400, body: { error: 'invalid_request' } });
    expect(await h.verify(`Bearer ${tokens.access_token}`)).toBeTruthy();
    // A refresh token presented by another client is not revoked.
    await form('/oauth/revoke', { client_id: 'agentgraph-console', token: tokens.refresh_token! });
    const config = await h.desktop();
    await expect(client.refreshTokenGrant(config, tokens.refresh_token!)).resolves.toBeTruthy();
  });
});

/**
 * Authorization code + PKCE (RFC 7636, S256) with a real OAuth client, panva's openid-client: it builds the
 * authorization URL, a user signs in on identity's real pages (a cookie-keeping HTTP user agent), and openid-client
 * checks the callback (state, issuer) and redeems the code; then refresh with rotation. Also the refusals a
 * code-holder can meet: a mismatched code_verifier, a replayed code, an expired code, a wrong redirect URI.
 */
import { decodeJwt } from 'jose';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { csrfOf, startWeb, type Browser, type WebHarness } from '../web/harness.js';

const REDIRECT_URI = 'http://127.0.0.1:9/callback';
const SCOPE = 'openid offline_access api:read api:write';

let h: WebHarness;
let config: client.Configuration;
beforeAll(async () => {
  h = await startWeb();
  config = await client.discovery(new URL(h.issuer), 'agentgraph-console', undefined, client.None(), {
    execute: [client.allowInsecureRequests],
  });
});
afterAll(async () => {
  await h?.close();
});

/** Runs the browser part: authorization request, sign-in on the interaction page, back to the redirect URI. */
async function signInForCode(b: Browser, user: { email: string; password: string }) {
  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT_URI,
    scope: SCOPE,
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
    // OpenID Connect grants offline_access (a refresh token) only with prompt=consent.
    prompt: 'consent',
  });
  let page = await b.get(url.href);
  expect(page.status).toBe(303);
  const interaction = page.location!;
  const form = await b.get(interaction);
  page = await b.post(interaction, { csrf: csrfOf(form), email: user.email, password: user.password });
  for (let hops = 0; page.location && !page.location.startsWith(REDIRECT_URI); hops++) {
    expect(hops).toBeLessThan(5);
    page = await b.get(page.location);
  }
  expect(page.status).toBe(303);
  return { callback: new URL(page.location!), verifier, state };
}

describe('authorization code + PKCE with openid-client', () => {
  it('signs a user in, redeems the code with the verifier, refreshes with rotation', async () => {
    const ada = await h.user({ tenant: 'Acme', email: 'ada@acme.test' });
    const { callback, verifier, state } = await signInForCode(h.browser(), ada);
    const tokens = await client.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: verifier,
      expectedState: state,
    });
    expect(tokens.token_type.toLowerCase()).toBe('bearer');
    // The access token is for the API resource: its scope is the API's (openid/offline_access shaped the grant).
    expect(tokens.scope).toBe('api:read api:write');
    expect(tokens.id_token).toBeTruthy();
    expect(tokens.claims()?.sub).toBe(ada.userId);
    expect(decodeJwt(tokens.access_token)).toMatchObject({
      iss: h.issuer,
      sub: ada.userId,
      aud: 'agentgraph',
      tid: ada.tenantId,
      role: 'OWNER',
      client_id: 'agentgraph-console',
    });
    expect(decodeJwt(tokens.access_token)).not.toHaveProperty('did');

    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
    // The rotated-away refresh token is dead, and using it ends the family.
    await expect(client.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
    await expect(client.refreshTokenGrant(config, refreshed.refresh_token!)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
  });

  it('refuses a mismatched code_verifier', async () => {
    const bo = await h.user({ tenant: 'Bo', email: 'bo@bo.test' });
    const { callback, state } = await signInForCode(h.browser(), bo);
    await expect(
      client.authorizationCodeGrant(config, callback, {
        pkceCodeVerifier: client.randomPKCECodeVerifier(),
        expectedState: state,
      }),
    ).rejects.toMatchObject({
      error: 'invalid_grant',
      error_description: expect.stringContaining('PKCE verification failed: code_verifier does not match'),
    });
  });

  it('refuses a replayed code and revokes what the first redemption issued', async () => {
    const cy = await h.user({ tenant: 'Cy', email: 'cy@cy.test' });
    const { callback, verifier, state } = await signInForCode(h.browser(), cy);
    const first = await client.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: verifier,
      expectedState: state,
    });
    await expect(
      client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state }),
    ).rejects.toMatchObject({
      error: 'invalid_grant',
      error_description: expect.stringContaining('the authorization code was already used'),
    });
    // RFC 6749 §4.1.2: a reused code revokes the tokens issued from it.
    await expect(client.refreshTokenGrant(config, first.refresh_token!)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
  });

  it('refuses an expired code (its 60 s are over)', async () => {
    const di = await h.user({ tenant: 'Di', email: 'di@di.test' });
    const { callback, verifier, state } = await signInForCode(h.browser(), di);
    await h.asOwner(
      `UPDATE identity.oauth_store SET payload = jsonb_set(payload, '{exp}', to_jsonb(extract(epoch FROM now())::int - 1))
        WHERE model = 'AuthorizationCode'`,
    );
    await expect(
      client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state }),
    ).rejects.toMatchObject({
      error: 'invalid_grant',
      error_description: expect.stringContaining('the authorization code has expired'),
    });
  });

  it('refuses to redeem a code at another redirect URI than the one it was issued for', async () => {
    const ed = await h.user({ tenant: 'Ed', email: 'ed@ed.test' });
    const { callback, verifier } = await signInForCode(h.browser(), ed);
    const res = await fetch(`${h.issuer}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        client_id: 'agentgraph-console',
        code: callback.searchParams.get('code')!,
        code_verifier: verifier,
        redirect_uri: 'http://127.0.0.1:9/other',
      }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toBe('invalid_grant');
  });
});

/**
 * Signing-key rotation: the next key is published before it signs anything; after rotation new tokens carry its kid,
 * tokens signed by the retired key still verify (it stays published for an hour), and a verifier that cached the
 * JWKS before the rotation verifies new tokens without an unknown kid.
 */
import { decodeProtectedHeader } from 'jose';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyVault, createTokenVerifier, withTenant } from '@agentgraph/runtime';
import { issuerKeys, publishedJwks, rotateSigningKey } from '../../src/keys.js';
import { approveDeviceAuthorization, withUserCodeGuard } from '../../src/oauth/device-approval.js';
import { deviceEnrolment, startOAuthIdentity, type OAuthHarness } from './harness.js';

let h: OAuthHarness;
beforeAll(async () => {
  h = await startOAuthIdentity();
});
afterAll(async () => {
  await h?.close();
});

describe('signing-key rotation', () => {
  it('publishes the next key ahead, signs with it after rotation, keeps the retired key published', async () => {
    const vault = keyVault(h.config);
    const before = await issuerKeys(h.db, vault);
    expect(before.map((k) => k.state)).toEqual(['active', 'pending']);
    const [active, pending] = before;
    const jwks = await publishedJwks(h.db);
    expect(jwks.keys.map((k) => k.kid)).toEqual([active!.kid, pending!.kid]);
    expect(jwks.keys.every((k) => k.d === undefined)).toBe(true);

    const m = await h.member('Rotaco', 'rita@rotaco.test');
    const config = await h.desktop();
    const enrol = async () => {
      const da = await client.initiateDeviceAuthorization(config, (await deviceEnrolment()).params);
      await withUserCodeGuard(h.oauth, m.auth, () =>
        withTenant(h.db, m.auth, (tx) => approveDeviceAuthorization(h.oauth, tx, m.auth, da.user_code)),
      );
      return client.pollDeviceAuthorizationGrant(config, da);
    };
    const first = await enrol();
    expect(decodeProtectedHeader(first.access_token).kid).toBe(active!.kid);

    // A verifier that fetched the JWKS before the rotation (it holds active + pending).
    const cached = createTokenVerifier({
      issuer: h.issuer,
      audience: h.config.tokenAudience,
      keys: `${h.issuer}/.well-known/jwks.json`,
    });
    await cached(`Bearer ${first.access_token}`);

    // A scheduled rotation does nothing while the key is young; a forced one rotates.
    expect(await rotateSigningKey(h.db, vault, 3600)).toEqual({ kid: null });
    expect(await rotateSigningKey(h.db, vault)).toEqual({ kid: pending!.kid });
    await h.oauth.refreshKeys();
    const after = await issuerKeys(h.db, vault);
    expect(after.map((k) => [k.kid, k.state])).toEqual([
      [pending!.kid, 'active'],
      [after[1]!.kid, 'pending'],
      [active!.kid, 'retired'],
    ]);

    const second = await enrol();
    expect(decodeProtectedHeader(second.access_token).kid).toBe(pending!.kid);
    // Refresh under the new key too; the old token still verifies.
    const refreshed = await client.refreshTokenGrant(config, first.refresh_token!);
    expect(decodeProtectedHeader(refreshed.access_token).kid).toBe(pending!.kid);
    await expect(cached(`Bearer ${second.access_token}`)).resolves.toMatchObject({ tenantId: m.tenantId });
    await expect(cached(`Bearer ${first.access_token}`)).resolves.toMatchObject({ tenantId: m.tenantId });
    expect((await publishedJwks(h.db)).keys.map((k) => k.kid)).toEqual([
      pending!.kid,
      active!.kid,
      after[1]!.kid,
    ]);
  }, 30_000);
});

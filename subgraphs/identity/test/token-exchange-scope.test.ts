/**
 * RFC 8693 token exchange without a `scope` parameter (identity README, "Who may call what"): the sidecar's token is read-only unless the
 * host asks for more. A device enrols for real (/oauth/device_authorization, approval through GraphQL, a token-endpoint
 * poll), then exchanges its own access token at /oauth/token: no scope → `api:read` only; `api:read api:write` → both
 * (what the C# host's broker asks for a sidecar that writes). PGlite, or PostgreSQL when DATABASE_URL is set.
 */
import { randomUUID } from 'node:crypto';
import { decodeJwt, exportJWK, generateKeyPair } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startIdentity, type Harness, type Member } from './harness.js';

const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';

let h: Harness;
let acme: Member;
/** The enrolled device's own access token (api:read api:write). */
let deviceToken: string;

async function form(path: string, params: Record<string, string>): Promise<Record<string, any>> {
  const res = await fetch(`${h.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(params),
  });
  return { status: res.status, ...((await res.json()) as Record<string, unknown>) };
}

beforeAll(async () => {
  h = await startIdentity({ DEVICE_POLL_INTERVAL_SECONDS: '1' });
  acme = await h.tenant('Acme', 'ada@acme.test');
  const jwk = await exportJWK((await generateKeyPair('ES256', { extractable: true })).publicKey);
  const asked = await form('/oauth/device_authorization', {
    client_id: 'agentgraph-desktop',
    scope: 'openid offline_access api:read api:write',
    device_name: 'Ada laptop',
    device_platform: 'linux',
    device_jwk: JSON.stringify(jwk),
  });
  expect(asked['status']).toBe(200);
  const approved = await h.gql(
    'mutation($c: String!, $k: ID!) { approveDeviceAuthorization(userCode: $c, idempotencyKey: $k) { device { id } } }',
    { c: asked['user_code'], k: randomUUID() },
    acme.token,
  );
  expect(approved.body.errors).toBeUndefined();
  // The poll is due at once: the polling clock is moved back instead of the test waiting out the interval.
  await h.asOwner("UPDATE identity.device_polls SET last_poll_at = last_poll_at - interval '1 hour'");
  const tokens = await form('/oauth/token', {
    grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
    device_code: asked['device_code'],
    client_id: 'agentgraph-desktop',
  });
  expect(tokens['status']).toBe(200);
  deviceToken = tokens['access_token'];
  expect(decodeJwt(deviceToken)['scope']).toBe('api:read api:write');
});

afterAll(async () => {
  await h?.close();
});

const exchange = (extra: Record<string, string> = {}) =>
  form('/oauth/token', {
    grant_type: TOKEN_EXCHANGE,
    client_id: 'agentgraph-desktop',
    subject_token: deviceToken,
    subject_token_type: ACCESS_TOKEN_TYPE,
    ...extra,
  });

describe('token exchange scope', () => {
  it('issues api:read only when the request names no scope, though the subject holds api:write', async () => {
    const r = await exchange();
    expect(r['status']).toBe(200);
    expect(r['scope']).toBe('api:read');
    expect(decodeJwt(r['access_token'])).toMatchObject({
      scope: 'api:read',
      act: { sub: 'agentgraph-desktop' },
    });
    expect((await h.verify(`Bearer ${r['access_token']}`))?.scopes).toEqual(['api:read']);
    // It reads, and cannot write.
    expect((await h.gql('{ viewer { user { id } } }', {}, r['access_token'])).body.data.viewer.user.id).toBe(
      acme.userId,
    );
  });

  it('issues api:read api:write when asked for explicitly (the subject holds both)', async () => {
    const r = await exchange({ scope: 'api:read api:write' });
    expect(r['status']).toBe(200);
    expect(r['scope']).toBe('api:read api:write');
    expect((await h.verify(`Bearer ${r['access_token']}`))?.scopes).toEqual(['api:read', 'api:write']);
  });

  it('still refuses a scope the subject lacks', async () => {
    const r = await exchange({ scope: 'api:read api:admin' });
    expect(r['status']).toBe(400);
    expect(r['error']).toBe('invalid_scope');
  });
});

/**
 * Device enrolment through identity's GraphQL (RFC 8628, the user's side): a device asks at
 * /oauth/device_authorization over real HTTP, a member looks the code up (Query.deviceAuthorization) and approves or
 * denies it (idempotent mutations), and the polling device gets its tokens or access_denied. Also the role rules,
 * wrong-code rate limiting, and codes another tenant already used. PGlite, or PostgreSQL when DATABASE_URL is set.
 */
import { calculateJwkThumbprint, decodeJwt, exportJWK, generateKeyPair, type JWK } from 'jose';
import { GATEWAY_SECRET_HEADER } from '@agentgraph/runtime';
import { Agent, fetch as undiciFetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startIdentity, type GraphQLAnswer, type Harness, type Member } from './harness.js';

let h: Harness;
let acme: Member;
let globex: Member;

let serial = 0;
const key = (label: string) => `${label}-${++serial}-${'x'.repeat(8)}`;
const code = (a: GraphQLAnswer) => a.body.errors?.[0]?.extensions['code'];

const VIEW = `query($code: String!) { deviceAuthorization(userCode: $code) {
  userCode clientId clientName scopes deviceName platform keyThumbprint expiresAt } }`;
const APPROVE = `mutation($code: String!, $key: ID!) { approveDeviceAuthorization(userCode: $code, idempotencyKey: $key) {
  device { id name platform status remoteActionsEnabled enrolledAt revokedAt keyThumbprint owner { id } } } }`;
const DENY = `mutation($code: String!, $key: ID!) { denyDeviceAuthorization(userCode: $code, idempotencyKey: $key) { denied } }`;

interface Asked {
  userCode: string;
  deviceCode: string;
  jwk: JWK;
}

/** What the desktop does first: ask for a device code, with its name, platform and public key. */
async function ask(name = 'Ada laptop', platform = 'linux'): Promise<Asked> {
  const jwk = await exportJWK((await generateKeyPair('ES256', { extractable: true })).publicKey);
  const res = await fetch(`${h.url}/oauth/device_authorization`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      client_id: 'agentgraph-desktop',
      scope: 'openid offline_access api:read api:write',
      device_name: name,
      device_platform: platform,
      device_jwk: JSON.stringify(jwk),
    }),
  });
  expect(res.status).toBe(200);
  const body = (await res.json()) as { user_code: string; device_code: string };
  return { userCode: body.user_code, deviceCode: body.device_code, jwk };
}

/**
 * One poll of the token endpoint by the device, made when it is due: the polling clock (identity.device_polls) is
 * moved back past the interval instead of the test waiting it out (slow_down is the OAuth tests' subject).
 */
async function poll(deviceCode: string): Promise<Record<string, string>> {
  await h.asOwner("UPDATE identity.device_polls SET last_poll_at = last_poll_at - interval '1 hour'");
  const res = await fetch(`${h.url}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
      device_code: deviceCode,
      client_id: 'agentgraph-desktop',
    }),
  });
  return (await res.json()) as Record<string, string>;
}

async function member(tenant: Member, email: string, role: string): Promise<Member> {
  const [u] = await h.asOwner<{ id: string }>(
    'INSERT INTO identity.users (email, display_name) VALUES ($1, $1) RETURNING id',
    [email],
  );
  await h.asOwner('INSERT INTO identity.memberships (tenant_id, user_id, role) VALUES ($1, $2, $3)', [
    tenant.tenantId,
    u!.id,
    role,
  ]);
  const m = { tenantId: tenant.tenantId, userId: u!.id };
  return { ...m, token: await h.token(m, role as never) };
}

const deviceCount = async () =>
  (await h.asOwner<{ n: number }>('SELECT count(*)::int AS n FROM identity.devices'))[0]!.n;

beforeAll(async () => {
  h = await startIdentity({ DEVICE_POLL_INTERVAL_SECONDS: '1' });
  acme = await h.tenant('Acme', 'ada@acme.test');
  globex = await h.tenant('Globex', 'hank@globex.test');
});

afterAll(async () => {
  await h?.close();
});

describe('Query.deviceAuthorization', () => {
  it('shows what is asking: client, device, platform, key thumbprint, scopes, expiry', async () => {
    const asked = await ask('Build box', 'windows');
    // People type codes in lower case, without the dash.
    const a = await h.gql(VIEW, { code: asked.userCode.toLowerCase().replace('-', '') }, acme.token);
    expect(a.body.errors).toBeUndefined();
    const view = a.body.data.deviceAuthorization;
    expect(view).toMatchObject({
      userCode: asked.userCode,
      clientId: 'agentgraph-desktop',
      deviceName: 'Build box',
      platform: 'windows',
      keyThumbprint: await calculateJwkThumbprint(asked.jwk, 'sha256'),
      scopes: ['openid', 'offline_access', 'api:read', 'api:write'],
    });
    expect(view.clientName.length).toBeGreaterThan(0);
    expect(new Date(view.expiresAt).getTime()).toBeGreaterThan(Date.now());
  });

  it('answers NOT_FOUND for an unknown code, and needs a token', async () => {
    const a = await h.gql(VIEW, { code: 'BCDF-GHJK' }, globex.token);
    expect(code(a)).toBe('NOT_FOUND');
    expect(a.body.data.deviceAuthorization).toBeNull();
    expect(code(await h.gql(VIEW, { code: 'BCDF-GHJK' }))).toBe('UNAUTHENTICATED');
  });

  it('validates the code length without echoing it', async () => {
    const a = await h.gql(VIEW, { code: 'Z'.repeat(40) }, acme.token);
    expect(code(a)).toBe('BAD_USER_INPUT');
    expect(a.body.errors?.[0]?.extensions['field']).toBe('userCode');
    expect(a.body.errors?.[0]?.message).not.toContain('ZZZZ');
  });
});

describe('approveDeviceAuthorization', () => {
  it('enrols the device for the caller; the polling device gets tokens for it; replay returns the same device', async () => {
    const asked = await ask('Ada laptop', 'linux');
    const vars = { code: asked.userCode, key: key('approve') };
    const a = await h.gql(APPROVE, vars, acme.token);
    expect(a.body.errors).toBeUndefined();
    const device = a.body.data.approveDeviceAuthorization.device;
    expect(device).toMatchObject({
      name: 'Ada laptop',
      platform: 'linux',
      status: 'ENROLLED',
      remoteActionsEnabled: false,
      revokedAt: null,
      keyThumbprint: await calculateJwkThumbprint(asked.jwk, 'sha256'),
      owner: { id: acme.userId },
    });
    expect(device.enrolledAt).not.toBeNull();

    const replay = await h.gql(APPROVE, vars, acme.token);
    expect(replay.body.extensions?.['idempotentReplay']).toBe(true);
    expect(replay.body.data).toEqual(a.body.data);

    // The device's poll gets tokens naming it.
    const tokens = await poll(asked.deviceCode);
    expect(tokens['error']).toBeUndefined();
    const claims = decodeJwt(tokens['access_token']!);
    expect(claims).toMatchObject({ sub: acme.userId, tid: acme.tenantId, did: device.id });
    // With its own token the device can now flip its remote-actions switch.
    const remote = await h.gql(
      `mutation($key: ID!) { setRemoteActionsEnabled(enabled: true, idempotencyKey: $key) { device { id remoteActionsEnabled } } }`,
      { key: key('remote') },
      tokens['access_token'],
    );
    expect(remote.body.data.setRemoteActionsEnabled.device).toEqual({
      id: device.id,
      remoteActionsEnabled: true,
    });
  });

  it('refuses the same key for another code (IDEMPOTENCY_KEY_REUSED), leaving that code pending', async () => {
    const first = await ask();
    const second = await ask();
    const k = key('approve');
    expect((await h.gql(APPROVE, { code: first.userCode, key: k }, acme.token)).body.errors).toBeUndefined();
    expect(code(await h.gql(APPROVE, { code: second.userCode, key: k }, acme.token))).toBe(
      'IDEMPOTENCY_KEY_REUSED',
    );
    expect((await poll(second.deviceCode))['error']).toBe('authorization_pending');
  });

  it('needs OPERATOR or higher; a VIEWER may look but not approve, and nothing is enrolled', async () => {
    const viewer = await member(acme, 'vic@acme.test', 'VIEWER');
    const asked = await ask();
    expect((await h.gql(VIEW, { code: asked.userCode }, viewer.token)).body.errors).toBeUndefined();
    const before = await deviceCount();
    const a = await h.gql(APPROVE, { code: asked.userCode, key: key('approve') }, viewer.token);
    expect(code(a)).toBe('FORBIDDEN');
    expect(code(await h.gql(DENY, { code: asked.userCode, key: key('deny') }, viewer.token))).toBe(
      'FORBIDDEN',
    );
    expect(await deviceCount()).toBe(before);
    expect((await poll(asked.deviceCode))['error']).toBe('authorization_pending');
  });

  it("is FORBIDDEN with a device's token: enrolment is a person's decision", async () => {
    const laptop = await h.enrolledDevice(acme, 'Existing laptop');
    const t = await h.deviceToken(acme, laptop);
    const asked = await ask();
    const before = await deviceCount();
    expect(code(await h.gql(APPROVE, { code: asked.userCode, key: key('approve') }, t))).toBe('FORBIDDEN');
    expect(await deviceCount()).toBe(before);
  });

  it('rate-limits wrong codes: after 5 wrong guesses the next attempt is RATE_LIMITED, also with the right code', async () => {
    const guesser = await member(acme, 'gus@acme.test', 'OPERATOR');
    const asked = await ask();
    // Five wrong guesses, by approve, deny and look-up alike, are each NOT_FOUND ...
    for (const [i, q] of [APPROVE, DENY, VIEW, APPROVE, VIEW].entries()) {
      const a = await h.gql(q, { code: `BCDF-GHJ${'BCDFG'[i]}`, key: key('guess') }, guesser.token);
      expect(code(a)).toBe('NOT_FOUND');
    }
    // ... and the 6th attempt is refused, even with the right code; nothing is enrolled.
    const before = await deviceCount();
    const sixth = await h.gql(APPROVE, { code: asked.userCode, key: key('guess') }, guesser.token);
    expect(code(sixth)).toBe('RATE_LIMITED');
    expect(sixth.body.errors?.[0]?.extensions['retryAfterMs']).toBeGreaterThan(0);
    expect(code(await h.gql(VIEW, { code: asked.userCode }, guesser.token))).toBe('RATE_LIMITED');
    expect(await deviceCount()).toBe(before);
    // Others are not locked out by this guesser.
    expect((await h.gql(VIEW, { code: asked.userCode }, acme.token)).body.errors).toBeUndefined();
  });

  it('a right code between wrong ones resets nothing; wrong codes also count per client address', async () => {
    // As the gateway forwards a request (it proves itself with the gateway secret): the client's address is the last
    // x-forwarded-for hop (SubgraphContext.origin).
    const from = async (
      address: string,
      query: string,
      variables: Record<string, unknown>,
      token: string,
    ) => {
      const res = await fetch(`${h.url}/graphql`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/graphql-response+json',
          authorization: `Bearer ${token}`,
          [GATEWAY_SECRET_HEADER]: h.config.gatewaySecret,
          'x-forwarded-for': address,
        },
        body: JSON.stringify({ query, variables }),
      });
      return { status: res.status, body: (await res.json()) as GraphQLAnswer['body'] };
    };
    const own = async () => (await ask()).userCode;

    // 4 wrong, then a code the guesser minted, then 1 wrong: that is 5 wrong in the window, and the next is refused.
    const gwen = await member(acme, 'gwen@acme.test', 'OPERATOR');
    for (let i = 0; i < 4; i++) {
      expect(code(await from('203.0.113.7', VIEW, { code: 'BCDF-GHJK' }, gwen.token))).toBe('NOT_FOUND');
    }
    expect((await from('203.0.113.7', VIEW, { code: await own() }, gwen.token)).body.errors).toBeUndefined();
    expect(code(await from('203.0.113.7', VIEW, { code: 'BCDF-GHJK' }, gwen.token))).toBe('NOT_FOUND');
    const refused = await from('203.0.113.7', APPROVE, { code: await own(), key: key('guess') }, gwen.token);
    expect(code(refused)).toBe('RATE_LIMITED');
    expect(refused.body.errors?.[0]?.extensions['retryAfterMs']).toBeGreaterThan(0);

    // Five members guess 4 wrong codes each from one address (none reaches 5 of their own): the address is locked,
    // also for a member who never guessed; the same member from another address is not.
    const sprayers: Member[] = [];
    for (let m = 0; m < 6; m++) sprayers.push(await member(acme, `spray${m}@acme.test`, 'OPERATOR'));
    for (const m of sprayers.slice(0, 5)) {
      for (let i = 0; i < 4; i++) {
        expect(code(await from('203.0.113.8', VIEW, { code: 'BCDF-GHJK' }, m.token))).toBe('NOT_FOUND');
      }
    }
    expect(code(await from('203.0.113.8', VIEW, { code: await own() }, sprayers[5]!.token))).toBe(
      'RATE_LIMITED',
    );
    expect(
      (await from('203.0.113.9', VIEW, { code: await own() }, sprayers[5]!.token)).body.errors,
    ).toBeUndefined();
  });

  it('trusts x-forwarded-for only from the gateway: a direct caller cannot spread guesses over made-up addresses', async () => {
    // A caller that reaches identity directly (no gateway secret), from its own loopback address, claiming a new
    // address in x-forwarded-for on every guess: all of them count for the address it really comes from.
    const dispatcher = new Agent({ localAddress: '127.0.0.2' });
    let n = 0;
    const direct = async (query: string, variables: Record<string, unknown>, token: string) => {
      const res = await undiciFetch(`${h.url}/graphql`, {
        dispatcher,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/graphql-response+json',
          authorization: `Bearer ${token}`,
          'x-forwarded-for': `198.51.100.${++n}`,
        },
        body: JSON.stringify({ query, variables }),
      });
      return { status: res.status, body: (await res.json()) as GraphQLAnswer['body'] };
    };
    try {
      const spoofers: Member[] = [];
      for (let m = 0; m < 6; m++) spoofers.push(await member(acme, `spoof${m}@acme.test`, 'OPERATOR'));
      for (const m of spoofers.slice(0, 5)) {
        for (let i = 0; i < 4; i++) {
          expect(code(await direct(VIEW, { code: 'BCDF-GHJK' }, m.token))).toBe('NOT_FOUND');
        }
      }
      // 20 wrong guesses from 127.0.0.2, whatever they claimed: that address is locked for everyone.
      expect(code(await direct(VIEW, { code: (await ask()).userCode }, spoofers[5]!.token))).toBe(
        'RATE_LIMITED',
      );
    } finally {
      await dispatcher.close();
    }
  });
});

describe('denyDeviceAuthorization', () => {
  it('denies: the device gets access_denied, the code is gone, replay answers the same', async () => {
    const asked = await ask('Unknown box');
    const before = await deviceCount();
    const vars = { code: asked.userCode, key: key('deny') };
    const a = await h.gql(DENY, vars, acme.token);
    expect(a.body.errors).toBeUndefined();
    expect(a.body.data.denyDeviceAuthorization).toEqual({ denied: true });
    const replay = await h.gql(DENY, vars, acme.token);
    expect(replay.body.extensions?.['idempotentReplay']).toBe(true);
    expect(replay.body.data).toEqual(a.body.data);
    expect((await poll(asked.deviceCode))['error']).toBe('access_denied');
    expect(code(await h.gql(VIEW, { code: asked.userCode }, acme.token))).toBe('NOT_FOUND');
    expect(code(await h.gql(APPROVE, { code: asked.userCode, key: key('approve') }, acme.token))).toBe(
      'NOT_FOUND',
    );
    expect(await deviceCount()).toBe(before);
  });
});

describe('tenant isolation of device codes', () => {
  it("another tenant cannot see, approve or deny a code Acme approved; Acme's device is untouched", async () => {
    const asked = await ask('Acme only');
    const approved = await h.gql(APPROVE, { code: asked.userCode, key: key('approve') }, acme.token);
    const deviceId = approved.body.data.approveDeviceAuthorization.device.id;
    const snapshot = await h.asOwner('SELECT * FROM identity.devices WHERE id = $1', [deviceId]);
    const view = await h.gql(VIEW, { code: asked.userCode }, globex.token);
    expect(code(view)).toBe('NOT_FOUND');
    expect(view.body.data.deviceAuthorization).toBeNull();
    expect(code(await h.gql(APPROVE, { code: asked.userCode, key: key('approve') }, globex.token))).toBe(
      'NOT_FOUND',
    );
    expect(code(await h.gql(DENY, { code: asked.userCode, key: key('deny') }, globex.token))).toBe(
      'NOT_FOUND',
    );
    expect(await h.asOwner('SELECT * FROM identity.devices WHERE id = $1', [deviceId])).toEqual(snapshot);
    expect(
      (
        await h.asOwner<{ n: number }>(
          'SELECT count(*)::int AS n FROM identity.devices WHERE tenant_id = $1',
          [globex.tenantId],
        )
      )[0]!.n,
    ).toBe(0);
    const tokens = await poll(asked.deviceCode);
    expect(decodeJwt(tokens['access_token']!)).toMatchObject({ tid: acme.tenantId, did: deviceId });
  });
});

import { randomUUID } from 'node:crypto';
import { createLocalJWKSet, exportJWK, generateKeyPair, SignJWT, type JWTPayload } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { createTokenVerifier, type TokenVerifier } from '../src/auth.js';
import { expectAppError } from './helpers.js';

const ISSUER = 'http://127.0.0.1:4101';
const AUDIENCE = 'agentgraph';
const NOW = new Date('2030-06-01T12:00:00Z');
const nowSeconds = Math.floor(NOW.getTime() / 1000);
const tenantId = randomUUID();

type Key = Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];

describe('createTokenVerifier', () => {
  let signingKey: Key;
  let otherKey: Key;
  let rsaKey: Key;
  let verify: TokenVerifier;

  beforeAll(async () => {
    const pair = await generateKeyPair('ES256');
    signingKey = pair.privateKey;
    otherKey = (await generateKeyPair('ES256')).privateKey;
    rsaKey = (await generateKeyPair('RS256')).privateKey;
    const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
    verify = createTokenVerifier({
      issuer: ISSUER,
      audience: AUDIENCE,
      keys: createLocalJWKSet({ keys: [jwk] }),
      now: () => NOW,
    });
  });

  const claims = (over: JWTPayload = {}): JWTPayload => ({
    sub: 'user-1',
    tid: tenantId,
    role: 'ADMIN',
    scope: 'memory:read memory:write',
    iss: ISSUER,
    aud: AUDIENCE,
    iat: nowSeconds - 60,
    exp: nowSeconds + 600,
    ...over,
  });

  const sign = (payload: JWTPayload, key: Key = signingKey, alg = 'ES256', kid = 'k1') =>
    new SignJWT(payload).setProtectedHeader({ alg, kid, typ: 'at+jwt' }).sign(key);

  const bearer = async (payload: JWTPayload = claims(), key?: Key, alg?: string) =>
    `Bearer ${await sign(payload, key, alg)}`;

  it('turns a valid ES256 token into an AuthContext', async () => {
    expect(await verify(await bearer())).toEqual({
      tenantId,
      principalId: 'user-1',
      role: 'ADMIN',
      scopes: ['memory:read', 'memory:write'],
    });
  });

  it('accepts a token without scope as having none', async () => {
    const { scope: _, ...noScope } = claims();
    expect((await verify(await bearer(noScope)))?.scopes).toEqual([]);
  });

  it('answers null without an Authorization header (anonymous)', async () => {
    expect(await verify(undefined)).toBeNull();
    expect(await verify('')).toBeNull();
  });

  it('rejects an expired token, saying so', async () => {
    const e = await expectAppError(
      verify(await bearer(claims({ iat: nowSeconds - 3600, exp: nowSeconds - 120 }))),
      'UNAUTHENTICATED',
    );
    expect(e.message).toContain('expired');
  });

  it('allows a small clock skew', async () => {
    expect(await verify(await bearer(claims({ exp: nowSeconds - 10 })))).not.toBeNull();
    await expectAppError(verify(await bearer(claims({ nbf: nowSeconds + 120 }))), 'UNAUTHENTICATED');
  });

  it.each([
    ['wrong issuer', { iss: 'https://evil.example' }],
    ['wrong audience', { aud: 'someone-else' }],
    ['no exp', { exp: undefined }],
    ['no sub', { sub: undefined }],
    ['no tenant', { tid: undefined }],
    ['a tenant that is not a uuid', { tid: 'tenant-1' }],
    ['an unknown role', { role: 'ROOT' }],
  ])('rejects a token with %s', async (_, over) => {
    await expectAppError(verify(await bearer(claims(over as JWTPayload))), 'UNAUTHENTICATED');
  });

  it('rejects a token signed by another key', async () => {
    await expectAppError(verify(await bearer(claims(), otherKey)), 'UNAUTHENTICATED');
  });

  it('rejects a token with another algorithm', async () => {
    await expectAppError(verify(await bearer(claims(), rsaKey, 'RS256')), 'UNAUTHENTICATED');
    const hs = await new SignJWT(claims())
      .setProtectedHeader({ alg: 'HS256', kid: 'k1' })
      .sign(new TextEncoder().encode('a shared secret that is long enough!'));
    await expectAppError(verify(`Bearer ${hs}`), 'UNAUTHENTICATED');
  });

  it('rejects an unsigned token (alg none)', async () => {
    const header = Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url');
    const body = Buffer.from(JSON.stringify(claims())).toString('base64url');
    await expectAppError(verify(`Bearer ${header}.${body}.`), 'UNAUTHENTICATED');
    await expectAppError(verify(`Bearer ${header}.${body}.AAAA`), 'UNAUTHENTICATED');
  });

  it('rejects a token whose payload was altered', async () => {
    const [h, , s] = (await sign(claims())).split('.');
    const forged = Buffer.from(JSON.stringify(claims({ role: 'OWNER' }))).toString('base64url');
    await expectAppError(verify(`Bearer ${h}.${forged}.${s}`), 'UNAUTHENTICATED');
  });

  it.each([
    ['garbage', 'Bearer garbage'],
    ['three dots of nothing', 'Bearer a.b.c'],
    ['another scheme', 'Basic dXNlcjpwYXNz'],
    ['no scheme', 'eyJhbGciOiJFUzI1NiJ9.e30.sig'],
    ['an extra space', 'Bearer  x.y.z'],
  ])('rejects %s with UNAUTHENTICATED', async (_, header) => {
    await expectAppError(verify(header), 'UNAUTHENTICATED');
  });

  it('never echoes the token in its error', async () => {
    const token = await sign(claims({ aud: 'elsewhere' }));
    const e = await expectAppError(verify(`Bearer ${token}`), 'UNAUTHENTICATED');
    expect(JSON.stringify(e.toJSON())).not.toContain(token.split('.')[1]!);
  });
});

describe('createTokenVerifier: scheme, typ, cache and key outages', () => {
  it('takes the scheme case-insensitively, refuses a token without typ at+jwt, and re-checks expiry of cached tokens', async () => {
    const pair = await generateKeyPair('ES256');
    const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256' };
    let now = NOW;
    const verify = createTokenVerifier({
      issuer: ISSUER,
      audience: AUDIENCE,
      keys: createLocalJWKSet({ keys: [jwk] }),
      now: () => now,
      clockToleranceSeconds: 0,
    });
    const payload = {
      sub: 'u',
      tid: tenantId,
      role: 'VIEWER',
      iss: ISSUER,
      aud: AUDIENCE,
      exp: nowSeconds + 60,
    };
    const token = await new SignJWT(payload)
      .setProtectedHeader({ alg: 'ES256', kid: 'k1', typ: 'at+jwt' })
      .sign(pair.privateKey);
    expect((await verify(`bearer ${token}`))?.principalId).toBe('u');
    const untyped = await new SignJWT(payload)
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .sign(pair.privateKey);
    await expectAppError(verify(`Bearer ${untyped}`), 'UNAUTHENTICATED');
    now = new Date((nowSeconds + 61) * 1000);
    await expectAppError(verify(`Bearer ${token}`), 'UNAUTHENTICATED');
  });

  it('answers SERVICE_UNAVAILABLE, not UNAUTHENTICATED, when the JWKS cannot be fetched', async () => {
    const { createServer } = await import('node:net');
    const port = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    const verify = createTokenVerifier({
      issuer: ISSUER,
      audience: AUDIENCE,
      keys: `http://127.0.0.1:${port}/.well-known/jwks.json`,
      now: () => NOW,
    });
    const pair = await generateKeyPair('ES256');
    const token = await new SignJWT({
      sub: 'u',
      tid: tenantId,
      role: 'VIEWER',
      iss: ISSUER,
      aud: AUDIENCE,
      exp: nowSeconds + 60,
    })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1', typ: 'at+jwt' })
      .sign(pair.privateKey);
    await expectAppError(verify(`Bearer ${token}`), 'SERVICE_UNAVAILABLE');
  });
});

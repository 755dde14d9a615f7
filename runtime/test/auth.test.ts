import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  createLocalJWKSet,
  exportJWK,
  exportSPKI,
  generateKeyPair,
  SignJWT,
  type JWK,
  type JWTPayload,
} from 'jose';
import { GraphQLObjectType, GraphQLSchema, GraphQLString } from 'graphql';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  assertOperationScope,
  CLOCK_TOLERANCE_SECONDS,
  createTokenVerifier,
  JWKS_REFETCH_COOLDOWN_MS,
  type TokenVerifier,
} from '../src/auth.js';
import { loadConfig } from '../src/config.js';
import type { Database } from '../src/db/types.js';
import { createLogger } from '../src/log.js';
import { subjectKey, type RevocationKind, type RevocationList } from '../src/revocation.js';
import { createSubgraphServer, type RunningServer } from '../src/subgraph-server.js';
import type { AuthContext } from '../src/tenancy.js';
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
      issuedAt: expect.any(Number),
      expiresAt: expect.any(Number),
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

  it('allows a clock skew of at most 5 s: 3 s past exp is accepted, 6 s past is refused', async () => {
    expect(CLOCK_TOLERANCE_SECONDS).toBeLessThanOrEqual(5);
    expect(await verify(await bearer(claims({ exp: nowSeconds - 3 })))).not.toBeNull();
    const late = await expectAppError(
      verify(await bearer(claims({ exp: nowSeconds - 6 }))),
      'UNAUTHENTICATED',
    );
    expect(late.message).toContain('expired');
    expect(await verify(await bearer(claims({ nbf: nowSeconds + 3 })))).not.toBeNull();
    await expectAppError(verify(await bearer(claims({ nbf: nowSeconds + 6 }))), 'UNAUTHENTICATED');
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

  it('rejects HS256 signed with the public key (algorithm confusion)', async () => {
    const pair = await generateKeyPair('ES256', { extractable: true });
    const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256' };
    const confused = createTokenVerifier({
      issuer: ISSUER,
      audience: AUDIENCE,
      keys: createLocalJWKSet({ keys: [jwk] }),
      now: () => NOW,
    });
    // What a verifier that took the algorithm from the header would check an HMAC against: the key as published.
    for (const secret of [await exportSPKI(pair.publicKey), JSON.stringify(jwk)]) {
      const hs = await new SignJWT(claims())
        .setProtectedHeader({ alg: 'HS256', kid: 'k1', typ: 'at+jwt' })
        .sign(new TextEncoder().encode(secret));
      await expectAppError(confused(`Bearer ${hs}`), 'UNAUTHENTICATED');
    }
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

  it('puts jti, gid, did and client_id into the AuthContext', async () => {
    const deviceId = randomUUID();
    const auth = await verify(
      await bearer(claims({ jti: 'jti-1', gid: 'grant-1', did: deviceId, client_id: 'agentgraph-desktop' })),
    );
    expect(auth).toEqual({
      tenantId,
      principalId: 'user-1',
      role: 'ADMIN',
      scopes: ['memory:read', 'memory:write'],
      tokenId: 'jti-1',
      grantId: 'grant-1',
      deviceId,
      clientId: 'agentgraph-desktop',
      issuedAt: expect.any(Number),
      expiresAt: expect.any(Number),
    });
  });

  it('names the acting client of an exchanged token (act.sub, RFC 8693)', async () => {
    const auth = await verify(await bearer(claims({ act: { sub: 'agentgraph-desktop' } })));
    expect(auth?.actor).toBe('agentgraph-desktop');
    await expect(verify(await bearer(claims({ act: { sub: 7 } })))).rejects.toMatchObject({
      code: 'UNAUTHENTICATED',
    });
  });

  it.each([
    ['a numeric jti', { jti: 7 }],
    ['an empty grant id', { gid: '' }],
    ['a device id that is an object', { did: { id: 'x' } }],
    ['an overlong client id', { client_id: 'c'.repeat(201) }],
  ])('rejects a token with %s', async (_, over) => {
    await expectAppError(verify(await bearer(claims(over as JWTPayload))), 'UNAUTHENTICATED');
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

/** A revocation list held in memory (the real one, fed by PostgreSQL, is tested in revocation.test.ts). */
function memoryRevocations(): RevocationList & { revoke(kind: RevocationKind, value: string): void } {
  const revoked = new Set<string>();
  return {
    revoke: (kind, value) => void revoked.add(`${kind}:${value}`),
    isRevoked: (a: AuthContext) =>
      revoked.has(`jti:${a.tokenId}`) ||
      revoked.has(`grant:${a.grantId}`) ||
      revoked.has(`device:${a.deviceId}`) ||
      revoked.has(`subject:${subjectKey(a.tenantId, a.principalId)}`),
    ready: Promise.resolve(),
    size: 0,
    loadedAt: 0,
    notificationLagMs: undefined,
    subscribe: () => () => undefined,
    close: async () => undefined,
  };
}

describe('createTokenVerifier: revocation', () => {
  let key: Key;
  let jwks: ReturnType<typeof createLocalJWKSet>;

  beforeAll(async () => {
    const pair = await generateKeyPair('ES256');
    key = pair.privateKey;
    jwks = createLocalJWKSet({ keys: [{ ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256' }] });
  });

  const token = (over: JWTPayload) =>
    new SignJWT({
      sub: 'user-1',
      tid: tenantId,
      role: 'OPERATOR',
      iss: ISSUER,
      aud: AUDIENCE,
      iat: nowSeconds - 10,
      exp: nowSeconds + 600,
      jti: randomUUID(),
      ...over,
    })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1', typ: 'at+jwt' })
      .sign(key);

  it.each([
    ['jti', (t: JWTPayload) => t.jti as string],
    ['grant', (t: JWTPayload) => t['gid'] as string],
    ['device', (t: JWTPayload) => t['did'] as string],
    ['subject', (t: JWTPayload) => subjectKey(t['tid'] as string, t.sub!)],
  ] as const)(
    'refuses a token revoked by %s at once, also when its signature check is cached',
    async (kind, valueOf) => {
      const revocations = memoryRevocations();
      const verify = createTokenVerifier({
        issuer: ISSUER,
        audience: AUDIENCE,
        keys: jwks,
        now: () => NOW,
        revocations,
      });
      const payload = {
        jti: randomUUID(),
        gid: `grant-${randomUUID()}`,
        did: randomUUID(),
        sub: randomUUID(),
      };
      const first = `Bearer ${await token(payload)}`;
      const bystander = `Bearer ${await token({ sub: randomUUID() })}`;
      expect(await verify(first)).not.toBeNull(); // verified and cached
      expect(await verify(bystander)).not.toBeNull();
      revocations.revoke(kind, valueOf({ ...payload, tid: tenantId }));
      const e = await expectAppError(verify(first), 'UNAUTHENTICATED');
      expect(e.message).toContain('revoked');
      expect(await verify(bystander)).not.toBeNull();
      // A token never seen before that matches the revocation is refused too (jti: the same token again).
      const sibling = kind === 'jti' ? first : `Bearer ${await token({ ...payload, jti: randomUUID() })}`;
      await expectAppError(verify(sibling), 'UNAUTHENTICATED');
    },
  );
});

describe('createTokenVerifier: JWKS fetched over HTTP', () => {
  let server: Server | undefined;
  afterEach(async () => {
    vi.useRealTimers();
    await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
    server = undefined;
  });

  it('re-fetches the JWKS for an unknown kid at most once per cooldown, so a rotated key verifies at once', async () => {
    const k1 = await generateKeyPair('ES256');
    const k2 = await generateKeyPair('ES256');
    const published: JWK[] = [{ ...(await exportJWK(k1.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' }];
    let fetches = 0;
    server = createServer((_req, res) => {
      fetches++;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: published }));
    });
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', () => r()));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/.well-known/jwks.json`;
    // jose times its cooldown with Date.now(): a fake Date moves it exactly, nothing else is faked.
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
    const verify = createTokenVerifier({ issuer: ISSUER, audience: AUDIENCE, keys: url, now: () => NOW });
    const sign = (key: Key, kid: string) =>
      new SignJWT({
        sub: 'u',
        tid: tenantId,
        role: 'VIEWER',
        iss: ISSUER,
        aud: AUDIENCE,
        exp: nowSeconds + 60,
      })
        .setProtectedHeader({ alg: 'ES256', kid, typ: 'at+jwt' })
        .sign(key)
        .then((t) => `Bearer ${t}`);

    expect(await verify(await sign(k1.privateKey, 'k1'))).not.toBeNull();
    expect(fetches).toBe(1);

    // Identity rotates: k2 is published and signs from now on.
    published.push({ ...(await exportJWK(k2.publicKey)), kid: 'k2', alg: 'ES256', use: 'sig' });
    const rotated = await sign(k2.privateKey, 'k2');
    // Within the cooldown after a fetch, unknown kids are refused without fetching (forged kids cost nothing).
    for (let i = 0; i < 5; i++) await expectAppError(verify(rotated), 'UNAUTHENTICATED');
    await expectAppError(verify(await sign(k2.privateKey, 'made-up')), 'UNAUTHENTICATED');
    expect(fetches).toBe(1);

    vi.setSystemTime(Date.now() + JWKS_REFETCH_COOLDOWN_MS);
    expect((await verify(rotated))?.principalId).toBe('u');
    expect(fetches).toBe(2);

    // A made-up kid after the cooldown: one fetch, then refused; again right away: no fetch.
    vi.setSystemTime(Date.now() + JWKS_REFETCH_COOLDOWN_MS);
    await expectAppError(verify(await sign(k2.privateKey, 'made-up')), 'UNAUTHENTICATED');
    await expectAppError(verify(await sign(k2.privateKey, 'made-up-2')), 'UNAUTHENTICATED');
    expect(fetches).toBe(3);
  });
});

describe('assertOperationScope', () => {
  const auth = (scopes: string[]): AuthContext => ({ tenantId, principalId: 'u', role: 'OWNER', scopes });

  it('lets anonymous callers through (resolvers decide what they may see)', () => {
    expect(() => assertOperationScope(null, 'mutation')).not.toThrow();
  });

  it('needs api:read for queries and subscriptions and api:write for mutations', async () => {
    expect(() => assertOperationScope(auth(['api:read']), 'query')).not.toThrow();
    expect(() => assertOperationScope(auth(['api:read']), 'subscription')).not.toThrow();
    expect(() => assertOperationScope(auth(['api:write']), 'mutation')).not.toThrow();
    const e = await expectAppError(() => assertOperationScope(auth(['api:read']), 'mutation'), 'FORBIDDEN');
    expect(e.message).toContain('"api:write"');
    expect(e.extensions['requiredScope']).toBe('api:write');
    await expectAppError(() => assertOperationScope(auth(['api:write', 'openid']), 'query'), 'FORBIDDEN');
    await expectAppError(() => assertOperationScope(auth([]), 'subscription'), 'FORBIDDEN');
  });
});

describe('the subgraph server enforces api:read and api:write', () => {
  let running: RunningServer;
  let sign: (scope: string | undefined) => Promise<string>;
  const effects: string[] = [];

  beforeAll(async () => {
    const pair = await generateKeyPair('ES256');
    const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256' };
    sign = (scope) =>
      new SignJWT({ sub: 'u', tid: tenantId, role: 'OWNER', ...(scope !== undefined && { scope }) })
        .setProtectedHeader({ alg: 'ES256', kid: 'k1', typ: 'at+jwt' })
        .setIssuer(ISSUER)
        .setAudience(AUDIENCE)
        .setIssuedAt()
        .setExpirationTime('5m')
        .sign(pair.privateKey);
    const schema = new GraphQLSchema({
      query: new GraphQLObjectType({
        name: 'Query',
        fields: { hello: { type: GraphQLString, resolve: () => 'hi' } },
      }),
      mutation: new GraphQLObjectType({
        name: 'Mutation',
        fields: {
          write: {
            type: GraphQLString,
            resolve: () => {
              effects.push('write');
              return 'written';
            },
          },
        },
      }),
      subscription: new GraphQLObjectType({
        name: 'Subscription',
        fields: {
          ticks: {
            type: GraphQLString,
            subscribe: async function* () {
              yield { ticks: 'tick' };
            },
          },
        },
      }),
    });
    const config = loadConfig({ DATA_DIR: 'memory://', LOG_LEVEL: 'error', TOKEN_AUDIENCE: AUDIENCE });
    const { listen } = createSubgraphServer({
      name: 'scopes',
      schema,
      config,
      db: {} as Database, // no route here touches the database
      log: createLogger({ service: 'scopes' }, { level: 'error', write: () => undefined }),
      verifyToken: createTokenVerifier({
        issuer: ISSUER,
        audience: AUDIENCE,
        keys: createLocalJWKSet({ keys: [jwk] }),
      }),
    });
    running = await listen(0, '127.0.0.1');
  });
  afterAll(async () => {
    await running?.close();
  });

  const post = async (path: string, query: string, token?: string, accept = 'application/json') => {
    const res = await fetch(`${running.url}${path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept,
        ...(token ? { authorization: `Bearer ${token}` } : {}),
      },
      body: JSON.stringify({ query }),
    });
    return { status: res.status, text: await res.text() };
  };
  const codeOf = (text: string) =>
    (JSON.parse(text) as { errors?: Array<{ extensions?: { code?: string } }> }).errors?.[0]?.extensions
      ?.code;

  it('answers a query with api:read, and refuses one without (403 FORBIDDEN naming the scope)', async () => {
    const ok = await post('/graphql', '{ hello }', await sign('api:read'));
    expect(ok).toEqual({ status: 200, text: JSON.stringify({ data: { hello: 'hi' } }) });
    for (const scope of ['api:write', '', undefined]) {
      const r = await post('/graphql', '{ hello }', await sign(scope));
      expect(r.status).toBe(403);
      expect(codeOf(r.text)).toBe('FORBIDDEN');
      expect(r.text).toContain('api:read');
    }
  });

  it('runs a mutation with api:write only, and nothing runs when it is refused', async () => {
    effects.length = 0;
    const refused = await post('/graphql', 'mutation { write }', await sign('api:read'));
    expect(refused.status).toBe(403);
    expect(codeOf(refused.text)).toBe('FORBIDDEN');
    expect(refused.text).toContain('api:write');
    expect(effects).toEqual([]);
    const ok = await post('/graphql', 'mutation { write }', await sign('api:write'));
    expect(ok.status).toBe(200);
    expect(effects).toEqual(['write']);
  });

  it('picks the operation by operationName in a document with several', async () => {
    const doc = 'query Q { hello } mutation M { write }';
    const res = await fetch(`${running.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${await sign('api:read')}` },
      body: JSON.stringify({ query: doc, operationName: 'M' }),
    });
    expect(res.status).toBe(403);
  });

  it('leaves anonymous requests to the resolvers', async () => {
    expect(await post('/graphql', '{ hello }')).toEqual({
      status: 200,
      text: JSON.stringify({ data: { hello: 'hi' } }),
    });
  });

  it('checks subscriptions on /graphql/stream for api:read', async () => {
    const refused = await post(
      '/graphql/stream',
      'subscription { ticks }',
      await sign('api:write'),
      'text/event-stream',
    );
    expect(refused.status).toBe(403);
    expect(codeOf(refused.text)).toBe('FORBIDDEN');
    const ok = await post(
      '/graphql/stream',
      'subscription { ticks }',
      await sign('api:read'),
      'text/event-stream',
    );
    expect(ok.status).toBe(200);
    expect(ok.text).toContain('"ticks":"tick"');
  });
});

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SignJWT, exportJWK, generateKeyPair, type JWK, type JWTPayload } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentGraphError } from '../../src/errors.js';
import {
  IntentVerificationError,
  MemoryReplayCache,
  createIntentVerifier,
  type IntentVerifierOptions,
} from '../../src/intents/index.js';
import { SqliteReplayCache } from '../../src/intents/index.node.js';
import { TestClock } from '../outbox/fake-clock.js';

const ISS = 'https://coordination.agentgraph.test';
const DEVICE = 'device-7';

interface TestKey {
  kid: string;
  alg: 'ES256' | 'EdDSA' | 'ES384';
  privateKey: CryptoKey;
  publicJwk: JWK;
}

async function makeKey(kid: string, alg: TestKey['alg']): Promise<TestKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  return { kid, alg, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

let es: TestKey;
let ed: TestKey;
let other: TestKey;
let es384: TestKey;
let rotated: TestKey;

beforeAll(async () => {
  [es, ed, other, es384, rotated] = await Promise.all([
    makeKey('k-es', 'ES256'),
    makeKey('k-ed', 'EdDSA'),
    makeKey('k-es', 'ES256'), // same kid as `es`, different key: a forger's
    makeKey('k-384', 'ES384'),
    makeKey('k-new', 'ES256'),
  ]);
});

const NOW = Date.UTC(2026, 0, 1, 12, 0, 0);
const nowSec = NOW / 1000;

function claims(overrides: Record<string, unknown> = {}): JWTPayload {
  return {
    iss: ISS,
    aud: DEVICE,
    sub: 'user-1',
    jti: 'intent-1',
    tid: 'tenant-1',
    seq: 4,
    action: 'open-app',
    params: { app: 'notes' },
    iat: nowSec - 5,
    nbf: nowSec - 5,
    exp: nowSec + 300,
    ...overrides,
  };
}

async function sign(
  key: TestKey,
  payload: JWTPayload = claims(),
  header: Record<string, unknown> = {},
): Promise<string> {
  const clean = Object.fromEntries(Object.entries(payload).filter(([, v]) => v !== undefined));
  return new SignJWT(clean)
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'intent+jwt', ...header })
    .sign(key.privateKey);
}

function verifier(overrides: Partial<IntentVerifierOptions> = {}, clock = new TestClock(NOW)) {
  return createIntentVerifier({
    issuer: ISS,
    deviceId: DEVICE,
    jwks: { keys: [es.publicJwk, ed.publicJwk] },
    replayCache: new MemoryReplayCache(),
    clock,
    ...overrides,
  });
}

async function reason(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(IntentVerificationError);
    expect(error).toBeInstanceOf(AgentGraphError);
    const e = error as IntentVerificationError;
    expect(e.code).toBe(`INTENT_${e.reason}`);
    return e.reason;
  }
  return 'ACCEPTED';
}

describe('intent verification: accepted', () => {
  it('accepts an ES256 intent and names its claims', async () => {
    const intent = await verifier().verify(await sign(es));
    expect(intent).toMatchObject({
      id: 'intent-1',
      tenantId: 'tenant-1',
      deviceId: DEVICE,
      issuer: ISS,
      requester: 'user-1',
      sequence: 4,
      action: 'open-app',
      params: { app: 'notes' },
      issuedAt: NOW - 5000,
      notBefore: NOW - 5000,
      expiresAt: NOW + 300_000,
      kid: 'k-es',
      alg: 'ES256',
    });
  });

  it('accepts an EdDSA intent, and a typ written as application/intent+jwt', async () => {
    expect((await verifier().verify(await sign(ed))).alg).toBe('EdDSA');
    const token = await sign(es, claims({ jti: 'intent-2' }), { typ: 'application/intent+jwt' });
    expect((await verifier().verify(token)).id).toBe('intent-2');
  });

  it('allows the clock skew (30 s) on exp and nbf', async () => {
    expect(await reason(verifier().verify(await sign(es, claims({ exp: nowSec - 29 }))))).toBe('ACCEPTED');
    expect(await reason(verifier().verify(await sign(es, claims({ nbf: nowSec + 29 }))))).toBe('ACCEPTED');
  });
});

describe('intent verification: refused', () => {
  it('forged signature: signed by another key under the trusted kid', async () => {
    expect(await reason(verifier().verify(await sign(other)))).toBe('FORGED_SIGNATURE');
  });

  it('wrong audience, wrong issuer', async () => {
    expect(await reason(verifier().verify(await sign(es, claims({ aud: 'device-8' }))))).toBe(
      'WRONG_AUDIENCE',
    );
    expect(await reason(verifier().verify(await sign(es, claims({ iss: 'https://evil.test' }))))).toBe(
      'WRONG_ISSUER',
    );
  });

  it('expired beyond the skew; not yet valid (nbf or iat in the future beyond the skew)', async () => {
    expect(await reason(verifier().verify(await sign(es, claims({ exp: nowSec - 31 }))))).toBe('EXPIRED');
    expect(await reason(verifier().verify(await sign(es, claims({ nbf: nowSec + 31 }))))).toBe(
      'NOT_YET_VALID',
    );
    expect(await reason(verifier().verify(await sign(es, claims({ iat: nowSec + 31 }))))).toBe(
      'NOT_YET_VALID',
    );
  });

  it('replayed: the same jti a second time; a forged token does not enter the cache', async () => {
    const v = verifier();
    expect(await reason(v.verify(await sign(other)))).toBe('FORGED_SIGNATURE');
    await v.verify(await sign(es));
    expect(await reason(v.verify(await sign(es)))).toBe('REPLAYED');
    // Re-signed with the other trusted key: still the same intent id.
    expect(await reason(v.verify(await sign(ed)))).toBe('REPLAYED');
  });

  it('unknown kid in a given key set', async () => {
    expect(await reason(verifier().verify(await sign(rotated)))).toBe('UNKNOWN_KID');
  });

  it('wrong typ, alg outside the allow-list, no kid, not a JWS', async () => {
    expect(await reason(verifier().verify(await sign(es, claims(), { typ: 'JWT' })))).toBe('WRONG_TYP');
    expect(
      await reason(verifier({ jwks: { keys: [es.publicJwk, es384.publicJwk] } }).verify(await sign(es384))),
    ).toBe('ALG_NOT_ALLOWED');
    expect(await reason(verifier().verify(await sign(es, claims(), { kid: undefined })))).toBe('MALFORMED');
    expect(await reason(verifier().verify('not-a-token'))).toBe('MALFORMED');
    expect(await reason(verifier().verify('a.b.c'))).toBe('MALFORMED');
  });

  it('missing required claims, and claims of the wrong type', async () => {
    for (const claim of ['jti', 'iat', 'nbf', 'exp', 'tid', 'seq', 'action', 'aud', 'iss']) {
      const error = await verifier()
        .verify(await sign(es, claims({ [claim]: undefined })))
        .catch((e: IntentVerificationError) => e);
      expect([claim, (error as IntentVerificationError).reason]).toEqual([claim, 'MISSING_CLAIM']);
    }
    expect(await reason(verifier().verify(await sign(es, claims({ seq: '4' }))))).toBe('INVALID_CLAIM');
    expect(await reason(verifier().verify(await sign(es, claims({ seq: -1 }))))).toBe('INVALID_CLAIM');
    expect(await reason(verifier().verify(await sign(es, claims({ tid: 7 }))))).toBe('INVALID_CLAIM');
    expect(await reason(verifier().verify(await sign(es, claims({ params: [1] }))))).toBe('INVALID_CLAIM');
  });

  it('refuses a key set holding a private key', async () => {
    const { privateKey } = await generateKeyPair('ES256', { extractable: true });
    const jwk = await exportJWK(privateKey);
    expect(() => verifier({ jwks: { keys: [jwk] } })).toThrow(/private key/);
  });
});

describe('intent verification: remote JWKS over real HTTP', () => {
  let server: http.Server;
  let url: string;
  let served: JWK[] = [];
  let requests = 0;
  let status = 200;

  beforeAll(async () => {
    server = http.createServer((_req, res) => {
      requests++;
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: served }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/.well-known/jwks.json`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('an unknown kid refetches once (after the cooldown): a rotated key is then found, a made-up one is not', async () => {
    served = [es.publicJwk];
    requests = 0;
    status = 200;
    const clock = new TestClock(NOW);
    const v = verifier({ jwks: undefined, jwksUrl: url }, clock);
    await v.verify(await sign(es));
    expect(requests).toBe(1);

    // Rotation: the server now publishes k-new too. Within the 30 s cooldown: no refetch.
    served = [es.publicJwk, rotated.publicJwk];
    clock.advance(10_000);
    expect(await reason(v.verify(await sign(rotated, claims({ jti: 'intent-2', iat: nowSec + 10 }))))).toBe(
      'UNKNOWN_KID',
    );
    expect(requests).toBe(1);

    clock.advance(30_000);
    expect((await v.verify(await sign(rotated, claims({ jti: 'intent-3', iat: nowSec + 40 })))).kid).toBe(
      'k-new',
    );
    expect(requests).toBe(2);

    // A kid nobody publishes: exactly one refetch, then UNKNOWN_KID.
    clock.advance(30_000);
    const ghost = { ...rotated, kid: 'k-ghost' };
    expect(await reason(v.verify(await sign(ghost, claims({ jti: 'intent-4' }))))).toBe('UNKNOWN_KID');
    expect(requests).toBe(3);
    expect(v.keySet.fetches).toBe(3);
  });

  it('refetches a cached set older than maxAge; a failing JWKS endpoint is JWKS_UNAVAILABLE (retryable)', async () => {
    served = [es.publicJwk];
    requests = 0;
    status = 200;
    const clock = new TestClock(NOW);
    const v = verifier({ jwks: undefined, jwksUrl: url, jwksMaxAgeMs: 60_000 }, clock);
    await v.verify(await sign(es));
    clock.advance(61_000);
    status = 503;
    const error = await v
      .verify(await sign(es, claims({ jti: 'intent-9', iat: nowSec + 61 })))
      .catch((e) => e);
    expect(error).toMatchObject({ reason: 'JWKS_UNAVAILABLE', retryable: true });
    expect(requests).toBe(2);
  });
});

describe('replay caches', () => {
  it('SqliteReplayCache remembers across a restart, until keepUntil', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'replay-'));
    try {
      const file = join(dir, 'replay.db');
      const first = SqliteReplayCache.open(file);
      expect(await first.remember('j-1', 2_000, 1_000)).toBe(true);
      expect(await first.remember('j-1', 2_000, 1_000)).toBe(false);
      await first.close();
      const second = SqliteReplayCache.open(file);
      expect(await second.remember('j-1', 2_000, 1_500)).toBe(false);
      expect(await second.remember('j-1', 3_000, 2_000)).toBe(true); // kept until 2 000 only
      await second.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a verifier with the SQLite cache refuses a replay after its process restarts', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'replay-'));
    try {
      const file = join(dir, 'replay.db');
      const token = await sign(es);
      const cache1 = SqliteReplayCache.open(file);
      await verifier({ replayCache: cache1 }).verify(token);
      await cache1.close();
      const cache2 = SqliteReplayCache.open(file);
      expect(await reason(verifier({ replayCache: cache2 }).verify(token))).toBe('REPLAYED');
      await cache2.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('MemoryReplayCache forgets entries once keepUntil passed', async () => {
    const cache = new MemoryReplayCache();
    expect(await cache.remember('a', 10, 0)).toBe(true);
    expect(await cache.remember('b', 20, 0)).toBe(true);
    expect(await cache.remember('a', 30, 10)).toBe(true);
    expect(cache.size).toBe(2);
  });
});

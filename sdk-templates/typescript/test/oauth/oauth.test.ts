/**
 * The SDK's OAuth helpers. Unit part: a scripted token endpoint and a fake clock (RFC 8628 polling: the waits, slow_down
 * adding 5 s, pending, denial, expiry; refresh rotation, single flight). End-to-end part: against the real platform's
 * identity service, a device enrols by the device flow with the SDK, uses the generated client with a refreshing
 * token provider (paging through a connection, posting with an idempotency key), and mints a sidecar token.
 */
import { randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, withTenant } from '@agentgraph/runtime';
import { oauthServiceFor } from '../../../../subgraphs/identity/src/oauth/service.js';
import {
  approveDeviceAuthorization,
  withUserCodeGuard,
} from '../../../../subgraphs/identity/src/oauth/device-approval.js';
import { startTestPlatform, type TestPlatform } from '../../../../test/src/platform.js';
// What an app uses: the generated SDK (@agentgraph/sdk), which imports this runtime as @agentgraph/sdk-runtime.
import {
  AgentGraph,
  createIntentVerifier,
  createSubscriptions,
  MemoryReplayCache,
  subscriptions,
} from '../../../../sdks/typescript/src/index.js';
import {
  discover,
  exchangeToken,
  OAuthError,
  pollDeviceToken,
  RefreshingTokenProvider,
  startDeviceAuthorization,
  type OAuthEndpoints,
} from '../../src/oauth/index.js';
import { TestClock } from '../helpers.js';

const ENDPOINTS: OAuthEndpoints = {
  issuer: 'https://id.test',
  token_endpoint: 'https://id.test/oauth/token',
  device_authorization_endpoint: 'https://id.test/oauth/device_authorization',
};

/** A token endpoint that answers from a script, recording what it was sent. */
function scripted(answers: { status: number; body: Record<string, unknown> }[]) {
  const sent: URLSearchParams[] = [];
  const f = (async (_url: string | URL | Request, init?: RequestInit) => {
    sent.push(new URLSearchParams(String(init?.body)));
    const a = answers.shift();
    if (!a) throw new Error('no scripted answer left');
    return new Response(JSON.stringify(a.body), {
      status: a.status,
      headers: { 'content-type': 'application/json' },
    });
  }) as typeof fetch;
  return { fetch: f, sent };
}

const tokens = (n: number) => ({
  status: 200,
  body: { access_token: `at-${n}`, token_type: 'Bearer', expires_in: 900, refresh_token: `rt-${n}` },
});
const err = (error: string, status = 400) => ({ status, body: { error } });

describe('device flow polling (RFC 8628) on a fake clock', () => {
  const authorization = (clock: TestClock) => ({
    deviceCode: 'dc',
    userCode: 'BCDF-GHJK',
    verificationUri: 'https://id.test/device',
    expiresAt: clock.now() + 600_000,
    interval: 5,
  });

  it('waits the interval, keeps polling while pending, adds 5 s per slow_down, returns the tokens', async () => {
    const clock = new TestClock();
    const s = scripted([
      err('authorization_pending'),
      err('slow_down'),
      err('authorization_pending'),
      tokens(1),
    ]);
    const answers: string[] = [];
    const t = await pollDeviceToken(
      ENDPOINTS,
      { clientId: 'agentgraph-desktop', authorization: authorization(clock) },
      { fetch: s.fetch, clock, onPoll: (a) => answers.push(a) },
    );
    expect(t).toMatchObject({ accessToken: 'at-1', refreshToken: 'rt-1', tokenType: 'Bearer' });
    expect(clock.sleeps).toEqual([5000, 5000, 10_000, 10_000]);
    expect(answers).toEqual(['authorization_pending', 'slow_down', 'authorization_pending', 'tokens']);
    expect(s.sent.map((b) => b.get('grant_type'))).toEqual(
      Array(4).fill('urn:ietf:params:oauth:grant-type:device_code'),
    );
    expect(s.sent[0]!.get('device_code')).toBe('dc');
  });

  it('throws the RFC error on access_denied and expired_token, and stops at the code’s expiry', async () => {
    for (const e of ['access_denied', 'expired_token', 'invalid_grant']) {
      const clock = new TestClock();
      const s = scripted([err(e)]);
      await expect(
        pollDeviceToken(
          ENDPOINTS,
          { clientId: 'c', authorization: authorization(clock) },
          { fetch: s.fetch, clock },
        ),
      ).rejects.toMatchObject({ error: e, status: 400 });
    }
    const clock = new TestClock();
    const auth = { ...authorization(clock), expiresAt: clock.now() + 12_000 };
    const s = scripted([err('authorization_pending'), err('authorization_pending')]);
    await expect(
      pollDeviceToken(ENDPOINTS, { clientId: 'c', authorization: auth }, { fetch: s.fetch, clock }),
    ).rejects.toMatchObject({ error: 'expired_token' });
    expect(s.sent).toHaveLength(2);
  });
});

describe('RefreshingTokenProvider', () => {
  it('serves the token until 60 s before expiry, then refreshes once for concurrent callers and keeps the rotation', async () => {
    const clock = new TestClock();
    const s = scripted([tokens(2)]);
    const persisted: string[] = [];
    const p = new RefreshingTokenProvider({
      endpoints: ENDPOINTS,
      clientId: 'agentgraph-desktop',
      tokens: {
        accessToken: 'at-1',
        tokenType: 'Bearer',
        expiresAt: clock.now() + 900_000,
        refreshToken: 'rt-1',
      },
      fetch: s.fetch,
      clock,
      onTokens: (t) => void persisted.push(t.refreshToken!),
    });
    expect(await p.getToken()).toBe('at-1');
    await clock.sleep(840_001);
    const [a, b] = await Promise.all([p.getToken(), p.getToken()]);
    expect([a, b]).toEqual(['at-2', 'at-2']);
    expect(s.sent).toHaveLength(1);
    expect(s.sent[0]!.get('refresh_token')).toBe('rt-1');
    expect(persisted).toEqual(['rt-2']);
    expect(p.current.refreshToken).toBe('rt-2');
  });

  it('surfaces invalid_grant (a revoked family) as an OAuthError', async () => {
    const s = scripted([err('invalid_grant')]);
    const p = new RefreshingTokenProvider({
      endpoints: ENDPOINTS,
      clientId: 'c',
      tokens: { accessToken: 'x', tokenType: 'Bearer', expiresAt: 0, refreshToken: 'rt' },
      fetch: s.fetch,
      clock: new TestClock(),
    });
    await expect(p.getToken()).rejects.toBeInstanceOf(OAuthError);
  });
});

describe('end to end against the platform', () => {
  let p: TestPlatform;
  beforeAll(async () => {
    // A 1 s polling interval keeps the device flow's real waits short.
    p = await startTestPlatform({ DEVICE_POLL_INTERVAL_SECONDS: '1' });
  });
  afterAll(async () => {
    await p?.close();
  });

  it('enrols a device by the device flow, then pages, posts idempotently, mints a sidecar token, and receives and verifies an intent', async () => {
    const owner = await p.tokenFor({ tenant: 'sdk-oauth' });
    const issuer = p.platform.config.tokenIssuer;
    const endpoints = await discover(issuer);
    const key = await generateKeyPair('ES256', { extractable: true });
    const da = await startDeviceAuthorization(endpoints, {
      clientId: 'agentgraph-desktop',
      scope: 'openid offline_access api:read api:write',
      extra: {
        device_name: 'SDK test box',
        device_platform: 'linux',
        device_jwk: JSON.stringify(await exportJWK(key.publicKey)),
      },
    });
    expect(da.verificationUriComplete).toBe(`${issuer}/device?user_code=${da.userCode}`);

    // The member approves (what the /device page or approveDeviceAuthorization in GraphQL does).
    // The platform's identity already made the service for this database; this returns that one.
    const oauth = oauthServiceFor({
      config: p.platform.config,
      db: p.platform.dbs.identity,
      log: createLogger({ service: 'sdk-oauth-test' }, { write: () => undefined }),
    });
    const auth = { tenantId: owner.tenantId, principalId: owner.userId, role: 'OWNER' as const, scopes: [] };
    const polling = pollDeviceToken(endpoints, { clientId: 'agentgraph-desktop', authorization: da });
    const { deviceId } = await withUserCodeGuard(oauth, auth, () =>
      withTenant(p.platform.dbs.identity, auth, (tx) =>
        approveDeviceAuthorization(oauth, tx, auth, da.userCode),
      ),
    );
    const tokens = await polling;
    expect(decodeJwt(tokens.accessToken)).toMatchObject({ did: deviceId, tid: owner.tenantId });

    const provider = new RefreshingTokenProvider({ endpoints, clientId: 'agentgraph-desktop', tokens });
    const sdk = new AgentGraph({
      baseUrl: `${p.gatewayUrl}/graphql`,
      tokenProvider: provider,
      privacyPolicy: { allow: ['PUBLIC', 'INTERNAL', 'PERSONAL'] },
    });
    const viewer = await sdk.viewer({});
    expect(viewer.viewer.user.id).toBe(owner.userId);

    // Page through a connection: five rooms, two per page.
    for (let i = 0; i < 5; i++) await sdk.createRoom({ input: { name: `room ${i}` } });
    const names: string[] = [];
    for await (const room of sdk.paginateRooms({ first: 2 })) names.push(room.name);
    expect(names).toHaveLength(5);

    // Post with an idempotency key; the same key again is a replay, not a second message.
    const rooms = await sdk.rooms({ first: 1 });
    const roomId = rooms.rooms.edges[0]!.node.id;
    const idempotencyKey = randomUUID();
    const first = await sdk.postMessage({ roomId, input: { body: 'from the device' } }, { idempotencyKey });
    const again = await sdk
      .postMessage({ roomId, input: { body: 'from the device' } }, { idempotencyKey })
      .withResponse();
    expect(again.replayed).toBe(true);
    expect(again.data.postMessage.message.id).toBe(first.postMessage.message.id);

    // A forced refresh rotates the refresh token; the SDK keeps working with the new access token.
    const before = provider.current.refreshToken;
    await provider.refresh();
    expect(provider.current.refreshToken).not.toBe(before);
    expect((await sdk.viewer({})).viewer.user.id).toBe(owner.userId);

    // The sidecar's token: narrower and shorter-lived; it reads but cannot write.
    const sidecar = await exchangeToken(endpoints, {
      clientId: 'agentgraph-desktop',
      subjectToken: await provider.getToken(),
      scope: 'api:read',
    });
    expect(sidecar.refreshToken).toBeUndefined();
    expect(sidecar.issuedTokenType).toBe('urn:ietf:params:oauth:token-type:access_token');
    const readOnly = new AgentGraph({
      baseUrl: `${p.gatewayUrl}/graphql`,
      tokenProvider: { getToken: async () => sidecar.accessToken, refresh: async () => sidecar.accessToken },
    });
    expect((await readOnly.viewer({})).viewer.user.id).toBe(owner.userId);
    await expect(readOnly.createRoom({ input: { name: 'nope' } })).rejects.toMatchObject({
      code: 'FORBIDDEN',
    });

    // Intents: the device's local user allows remote actions (the device's own token), a member asks for an action,
    // and the device receives it on its stream through the SDK and verifies the signature against the JWKS.
    await sdk.setRemoteActionsEnabled({ enabled: true });
    const created = await p.gql(
      `mutation C($input: CreateIntentInput!, $k: ID!) { createIntent(input: $input, idempotencyKey: $k) { intent { id seq } } }`,
      {
        input: {
          deviceId,
          action: 'open-app',
          params: JSON.stringify({ app: 'notes' }),
          expiresInSeconds: 300,
        },
        k: randomUUID(),
      },
      owner.token,
    );
    expect(created.errors).toBeUndefined();
    const coordination = new URL(p.subgraphs.coordination).origin;
    const verifier = createIntentVerifier({
      issuer: coordination,
      deviceId,
      jwksUrl: `${coordination}/.well-known/intent-jwks.json`,
      replayCache: new MemoryReplayCache(),
    });
    const streams = createSubscriptions(sdk.client, {
      streamUrl: `${p.gatewayUrl}/graphql/stream`,
      tokenProvider: provider,
    });
    const abort = new AbortController();
    type IntentEvent = { id: string; seq: number; jws: string; action: string };
    const items = streams.subscribe<
      IntentEvent,
      Awaited<ReturnType<typeof verifier.verify>>,
      { deviceIntents: IntentEvent }
    >(
      subscriptions.DeviceIntentsSubscription,
      { afterSeq: 0 },
      {
        resume: { cursorVariable: 'afterSeq', seqOf: (e) => e.seq, after: 0 },
        select: (d) => d.deviceIntents,
        verify: (e) => verifier.verify(e.jws),
        signal: abort.signal,
      },
    );
    let received = 0;
    for await (const item of items) {
      received++;
      expect(item.type).toBe('event');
      if (item.type !== 'event') break;
      expect(item.seq).toBe(1);
      expect(item.event.id).toBe(created.data.createIntent.intent.id);
      expect(item.verified).toMatchObject({
        deviceId,
        action: 'open-app',
        params: { app: 'notes' },
        sequence: 1,
      });
      abort.abort();
      break;
    }
    expect(received).toBe(1);
  }, 60_000);
});

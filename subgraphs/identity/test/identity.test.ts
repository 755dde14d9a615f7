/**
 * The identity subgraph end to end over real HTTP: JWKS, tokens, viewer, devices (idempotent registration),
 * tenant isolation (queries and _entities), capabilities, connection paging and /dev/token.
 * Runs on in-memory PGlite, or on PostgreSQL when DATABASE_URL is set.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { calculateJwkThumbprint, decodeJwt, decodeProtectedHeader, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEV_TOKEN_PATH, JWKS_PATH } from '../src/index.js';
import { startIdentity, type Harness, type Member } from './harness.js';

let h: Harness;
let acme: Member;
let globex: Member;
const issued: string[] = [];

const VIEWER = `query { viewer { role user { id email displayName } tenant { id name } } }`;
const REGISTER = `mutation R($input: RegisterDeviceInput!, $key: ID!) {
  registerDevice(input: $input, idempotencyKey: $key) { device { id name platform status remoteActionsEnabled owner { id } } }
}`;
const DEVICES = `query D($first: Int, $after: String) {
  viewer { tenant { devices(first: $first, after: $after) { edges { cursor node { id name } } pageInfo { hasNextPage endCursor } } } }
}`;
const MEMBERS = `query M($first: Int, $after: String) {
  viewer { tenant { members(first: $first, after: $after) { edges { cursor node { role user { email } } } pageInfo { hasNextPage endCursor } } } }
}`;

beforeAll(async () => {
  h = await startIdentity();
  acme = await h.tenant('Acme', 'ada@acme.test');
  globex = await h.tenant('Globex', 'hank@globex.test');
  issued.push(acme.token, globex.token);
});

afterAll(async () => {
  // Whatever happened above, no token may have reached the logs.
  const all = h?.logs.join('\n') ?? '';
  for (const t of issued) expect(all).not.toContain(t.split('.')[2]);
  await h?.close();
});

const code = (a: { body: { errors?: { extensions: Record<string, unknown> }[] } }) =>
  a.body.errors?.[0]?.extensions['code'];

describe('JWKS', () => {
  it('serves only public keys, cacheable for 5 minutes, kid = RFC 7638 thumbprint', async () => {
    const res = await fetch(`${h.url}${JWKS_PATH}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toContain('max-age=300');
    const jwks = (await res.json()) as { keys: JWK[] };
    // The active key, then the pending one published ahead of the next rotation.
    expect(jwks.keys).toHaveLength(2);
    for (const key of jwks.keys) {
      expect(Object.keys(key).sort()).toEqual(['alg', 'crv', 'kid', 'kty', 'use', 'x', 'y']);
      expect(key).not.toHaveProperty('d');
      expect(key).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig' });
      expect(key.kid).toBe(await calculateJwkThumbprint(key, 'sha256'));
    }
  });

  it('answers 405 to other methods', async () => {
    const res = await fetch(`${h.url}${JWKS_PATH}`, { method: 'POST', body: '{}' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, HEAD');
  });
});

describe('access tokens', () => {
  it('have the at+jwt header and the claims services rely on, and verify with createTokenVerifier', async () => {
    const header = decodeProtectedHeader(acme.token);
    const jwks = (await (await fetch(`${h.url}${JWKS_PATH}`)).json()) as { keys: JWK[] };
    expect(header).toEqual({ alg: 'ES256', kid: jwks.keys[0]!.kid, typ: 'at+jwt' });
    const claims = decodeJwt(acme.token);
    expect(claims).toMatchObject({
      iss: 'http://identity.test',
      aud: 'agentgraph',
      sub: acme.userId,
      tid: acme.tenantId,
      role: 'OWNER',
      scope: 'api:read api:write',
    });
    expect(claims.exp! - claims.iat!).toBe(900);
    expect(claims.jti).toMatch(/^[0-9a-f-]{36}$/);
    expect(await h.verify(`Bearer ${acme.token}`)).toEqual({
      tenantId: acme.tenantId,
      principalId: acme.userId,
      role: 'OWNER',
      scopes: ['api:read', 'api:write'],
      tokenId: claims.jti,
      issuedAt: claims.iat,
      expiresAt: claims.exp,
    });
  });

  it('puts space-separated scopes in "scope"', async () => {
    const { issueAccessToken } = await import('../src/index.js');
    const t = await issueAccessToken(h.db, h.config, {
      ...acme,
      role: 'ADMIN',
      scopes: ['devices:read', 'memory:write'],
    });
    expect(decodeJwt(t).scope).toBe('devices:read memory:write');
    expect((await h.verify(`Bearer ${t}`))?.scopes).toEqual(['devices:read', 'memory:write']);
  });

  it('rejects a tampered token as UNAUTHENTICATED (HTTP 401)', async () => {
    const [head, payload, sig] = acme.token.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
    const forged = Buffer.from(JSON.stringify({ ...claims, tid: globex.tenantId })).toString('base64url');
    const a = await h.gql(VIEWER, {}, `${head}.${forged}.${sig}`);
    expect(a.status).toBe(401);
    expect(code(a)).toBe('UNAUTHENTICATED');
  });

  it('rejects an expired token as UNAUTHENTICATED and says so', async () => {
    const old = await h.token(acme, 'OWNER', new Date(Date.now() - 60 * 60 * 1000));
    issued.push(old);
    const a = await h.gql(VIEWER, {}, old);
    expect(a.status).toBe(401);
    expect(code(a)).toBe('UNAUTHENTICATED');
    expect(a.body.errors?.[0]?.message).toContain('expired');
  });
});

describe('viewer', () => {
  it('returns the user, tenant and role of the token', async () => {
    const a = await h.gql(VIEWER, {}, acme.token);
    expect(a.body.errors).toBeUndefined();
    expect(a.body.data.viewer).toEqual({
      role: 'OWNER',
      user: { id: acme.userId, email: 'ada@acme.test', displayName: 'Acme owner' },
      tenant: { id: acme.tenantId, name: 'Acme' },
    });
  });

  it('needs a token', async () => {
    const a = await h.gql(VIEWER);
    expect(code(a)).toBe('UNAUTHENTICATED');
    expect(a.body.errors?.[0]?.message).toContain('Authorization: Bearer');
  });

  it('reports the lesser role of a down-scoped token', async () => {
    const t = await h.token(acme, 'VIEWER');
    issued.push(t);
    const a = await h.gql(`query { viewer { role } }`, {}, t);
    expect(a.body.data.viewer.role).toBe('VIEWER');
  });
});

describe('capabilities', () => {
  it('answers without a token, with the schema version and the configured limits', async () => {
    const a = await h.gql(`query { capabilities {
      schemaVersion idempotencyRetentionSeconds
      limits { maxBodyBytes maxDepth maxAliases maxPageSize maxPayloadBytes }
      client { pollIntervalMs retryMaxAttempts retryBudgetMs telemetryEnabled } } }`);
    expect(a.status).toBe(200);
    const api = readFileSync(new URL('../../../schemas/api.graphql', import.meta.url));
    expect(a.body.data.capabilities).toEqual({
      schemaVersion: createHash('sha256').update(api).digest('hex').slice(0, 12),
      idempotencyRetentionSeconds: 86_400,
      limits: { ...h.config.limits },
      client: { ...h.config.client },
    });
    expect(a.body.data.capabilities.limits.maxPayloadBytes).toBe(5 * 1024 * 1024);
  });
});

describe('registerDevice', () => {
  it('registers a PENDING device owned by the caller, remote actions off', async () => {
    const a = await h.gql(
      REGISTER,
      { input: { name: 'Ada laptop', platform: 'linux' }, key: 'reg-first-0001' },
      acme.token,
    );
    expect(a.body.errors).toBeUndefined();
    expect(a.body.data.registerDevice.device).toMatchObject({
      name: 'Ada laptop',
      platform: 'linux',
      status: 'PENDING',
      remoteActionsEnabled: false,
      owner: { id: acme.userId },
    });
  });

  it('replays: same key and arguments → same device, marked idempotentReplay, one row', async () => {
    const vars = { input: { name: 'Build box', platform: 'windows' }, key: 'reg-replay-0001' };
    const first = await h.gql(REGISTER, vars, acme.token);
    const second = await h.gql(REGISTER, vars, acme.token);
    expect(first.body.extensions?.['idempotentReplay']).toBeUndefined();
    expect(second.body.extensions?.['idempotentReplay']).toBe(true);
    expect(second.body.data).toEqual(first.body.data);
    const rows = await h.asOwner<{ n: number }>(
      "SELECT count(*)::int AS n FROM identity.devices WHERE tenant_id = $1 AND name = 'Build box'",
      [acme.tenantId],
    );
    expect(rows[0]!.n).toBe(1);
  });

  it('refuses the same key with other arguments (IDEMPOTENCY_KEY_REUSED) and writes nothing', async () => {
    await h.gql(
      REGISTER,
      { input: { name: 'Mac mini', platform: 'macos' }, key: 'reg-reused-0001' },
      acme.token,
    );
    const a = await h.gql(
      REGISTER,
      { input: { name: 'Mac maxi', platform: 'macos' }, key: 'reg-reused-0001' },
      acme.token,
    );
    expect(code(a)).toBe('IDEMPOTENCY_KEY_REUSED');
    const rows = await h.asOwner<{ n: number }>(
      "SELECT count(*)::int AS n FROM identity.devices WHERE name = 'Mac maxi'",
    );
    expect(rows[0]!.n).toBe(0);
  });

  it('validates input: field named, value not echoed, nothing stored', async () => {
    const bad = await h.gql(
      REGISTER,
      { input: { name: 'x', platform: 'beos-r5' }, key: 'reg-invalid-0001' },
      acme.token,
    );
    expect(code(bad)).toBe('BAD_USER_INPUT');
    expect(bad.body.errors?.[0]?.extensions['field']).toBe('input.platform');
    expect(bad.body.errors?.[0]?.message).not.toContain('beos-r5');
    const blank = await h.gql(
      REGISTER,
      { input: { name: '   ', platform: 'linux' }, key: 'reg-invalid-0002' },
      acme.token,
    );
    expect(blank.body.errors?.[0]?.extensions['field']).toBe('input.name');
    const long = await h.gql(
      REGISTER,
      { input: { name: 'n'.repeat(101), platform: 'linux' }, key: 'reg-invalid-0003' },
      acme.token,
    );
    expect(long.body.errors?.[0]?.extensions['field']).toBe('input.name');
    // The key was not consumed by the failed attempt: a valid request with it succeeds.
    const ok = await h.gql(
      REGISTER,
      { input: { name: 'x', platform: 'linux' }, key: 'reg-invalid-0001' },
      acme.token,
    );
    expect(ok.body.errors).toBeUndefined();
  });

  it('is FORBIDDEN for a VIEWER token, even when the membership is OWNER', async () => {
    const t = await h.token(acme, 'VIEWER');
    issued.push(t);
    const a = await h.gql(
      REGISTER,
      { input: { name: 'Nope', platform: 'linux' }, key: 'reg-viewer-0001' },
      t,
    );
    expect(code(a)).toBe('FORBIDDEN');
  });

  it('is FORBIDDEN for a VIEWER membership, even with an OWNER token (the database is asked)', async () => {
    const [u] = await h.asOwner<{ id: string }>(
      "INSERT INTO identity.users (email, display_name) VALUES ('vic@acme.test', 'Vic') RETURNING id",
    );
    await h.asOwner("INSERT INTO identity.memberships (tenant_id, user_id, role) VALUES ($1, $2, 'VIEWER')", [
      acme.tenantId,
      u!.id,
    ]);
    const t = await h.token({ tenantId: acme.tenantId, userId: u!.id }, 'OWNER');
    issued.push(t);
    const a = await h.gql(
      REGISTER,
      { input: { name: 'Nope', platform: 'linux' }, key: 'reg-viewer-0002' },
      t,
    );
    expect(code(a)).toBe('FORBIDDEN');
    expect(a.body.errors?.[0]?.message).toContain('VIEWER');
  });
});

describe('updateProfile', () => {
  it('changes the display name through an idempotent mutation', async () => {
    const m = `mutation U($name: String!, $key: ID!) { updateProfile(input: { displayName: $name }, idempotencyKey: $key) { user { id displayName } } }`;
    const a = await h.gql(m, { name: 'Hank Scorpio', key: 'profile-0001' }, globex.token);
    expect(a.body.data.updateProfile.user).toEqual({ id: globex.userId, displayName: 'Hank Scorpio' });
    const again = await h.gql(m, { name: 'Hank Scorpio', key: 'profile-0001' }, globex.token);
    expect(again.body.extensions?.['idempotentReplay']).toBe(true);
    const bad = await h.gql(m, { name: '', key: 'profile-0002' }, globex.token);
    expect(code(bad)).toBe('BAD_USER_INPUT');
    expect(bad.body.errors?.[0]?.extensions['field']).toBe('input.displayName');
  });
});

describe('tenant isolation', () => {
  let acmeDevice: string;
  beforeAll(async () => {
    const a = await h.gql(
      REGISTER,
      { input: { name: 'Secret rig', platform: 'linux' }, key: 'iso-0001' },
      acme.token,
    );
    acmeDevice = a.body.data.registerDevice.device.id;
  });

  it('device(id) of another tenant is null', async () => {
    expect(
      (await h.gql(`query($id: ID!) { device(id: $id) { id } }`, { id: acmeDevice }, acme.token)).body.data
        .device,
    ).toEqual({ id: acmeDevice });
    const a = await h.gql(
      `query($id: ID!) { device(id: $id) { id name } }`,
      { id: acmeDevice },
      globex.token,
    );
    expect(a.body.errors).toBeUndefined();
    expect(a.body.data.device).toBeNull();
  });

  it('a malformed id is simply not found', async () => {
    const a = await h.gql(`query { device(id: "not-a-uuid") { id } }`, {}, acme.token);
    expect(a.body.errors).toBeUndefined();
    expect(a.body.data.device).toBeNull();
  });

  it('_entities resolves Device, Tenant and User only within the caller’s tenant', async () => {
    const q = `query($r: [_Any!]!) { _entities(representations: $r) {
      ... on Device { id name } ... on Tenant { id name } ... on User { id email } } }`;
    const representations = [
      { __typename: 'Device', id: acmeDevice },
      { __typename: 'Tenant', id: acme.tenantId },
      { __typename: 'User', id: acme.userId },
    ];
    const own = await h.gql(q, { r: representations }, acme.token);
    expect(own.body.data._entities.map((e: { id: string } | null) => e?.id)).toEqual([
      acmeDevice,
      acme.tenantId,
      acme.userId,
    ]);
    const foreign = await h.gql(q, { r: representations }, globex.token);
    expect(foreign.body.errors).toBeUndefined();
    expect(foreign.body.data._entities).toEqual([null, null, null]);
  });

  it('_entities needs a token', async () => {
    const a = await h.gql(`query($r: [_Any!]!) { _entities(representations: $r) { ... on Device { id } } }`, {
      r: [{ __typename: 'Device', id: acmeDevice }],
    });
    expect(code(a)).toBe('UNAUTHENTICATED');
  });

  it('holds in the database: RLS hides other tenants and signing keys from the app role', async () => {
    const { withTenant } = await import('@agentgraph/runtime');
    const auth = {
      tenantId: globex.tenantId,
      principalId: globex.userId,
      role: 'OWNER' as const,
      scopes: [],
    };
    const seen = await withTenant(h.db, auth, async (tx) => ({
      devices: (await tx.query<{ n: number }>('SELECT count(*)::int AS n FROM identity.devices')).rows[0]!.n,
      tenants: (await tx.query<{ id: string }>('SELECT id FROM identity.tenants')).rows.map((r) => r.id),
      users: (await tx.query<{ id: string }>('SELECT id FROM identity.users')).rows.map((r) => r.id),
    }));
    expect(seen).toEqual({ devices: 0, tenants: [globex.tenantId], users: [globex.userId] });
    await expect(h.db.query('SELECT kid FROM identity.signing_keys')).rejects.toThrow(/permission denied/);
    await expect(
      withTenant(h.db, auth, (tx) => tx.query("INSERT INTO identity.tenants (name) VALUES ('Rogue')")),
    ).rejects.toThrow(/permission denied/);
    await expect(
      withTenant(h.db, auth, (tx) =>
        tx.query(
          "INSERT INTO identity.devices (tenant_id, owner_id, name, platform) VALUES ($1, $2, 'x', 'linux')",
          [acme.tenantId, acme.userId],
        ),
      ),
    ).rejects.toThrow(/row-level security/);
  });
});

describe('connections', () => {
  beforeAll(async () => {
    for (let i = 1; i <= 5; i++) {
      await h.gql(
        REGISTER,
        { input: { name: `Fleet ${i}`, platform: 'linux' }, key: `fleet-000${i}` },
        globex.token,
      );
    }
    // Four members joining in one transaction: equal created_at, so the id tie-breaker decides the order.
    await h.asOwner(
      `WITH u AS (
         INSERT INTO identity.users (email, display_name)
         SELECT 'member' || g || '@globex.test', 'Member ' || g FROM generate_series(1, 4) g RETURNING id)
       INSERT INTO identity.memberships (tenant_id, user_id, role) SELECT $1, id, 'OPERATOR' FROM u`,
      [globex.tenantId],
    );
  });

  async function walk(query: string, field: 'devices' | 'members', first: number) {
    const seen: string[] = [];
    let after: string | null = null;
    let pages = 0;
    for (;;) {
      const a = await h.gql(query, { first, after }, globex.token);
      expect(a.body.errors).toBeUndefined();
      const conn = a.body.data.viewer.tenant[field];

      seen.push(...conn.edges.map((e: any) => e.node.id ?? e.node.user.email));
      pages++;
      if (!conn.pageInfo.hasNextPage) break;
      after = conn.pageInfo.endCursor;
    }
    return { seen, pages };
  }

  it('pages devices in creation order without gaps or repeats', async () => {
    const { seen, pages } = await walk(DEVICES, 'devices', 2);
    expect(pages).toBe(3);
    expect(seen).toHaveLength(5);
    expect(new Set(seen).size).toBe(5);
    const names = (
      await h.gql(DEVICES, { first: 10 }, globex.token)
    ).body.data.viewer.tenant.devices.edges.map((e: { node: { name: string } }) => e.node.name);
    expect(names).toEqual(['Fleet 1', 'Fleet 2', 'Fleet 3', 'Fleet 4', 'Fleet 5']);
  });

  it('pages members, equal timestamps included', async () => {
    const { seen } = await walk(MEMBERS, 'members', 2);
    expect(seen).toHaveLength(5);
    expect(seen[0]).toBe('hank@globex.test');
    expect(new Set(seen)).toEqual(
      new Set(['hank@globex.test', ...[1, 2, 3, 4].map((i) => `member${i}@globex.test`)]),
    );
  });

  it('rejects a forged cursor, another list’s cursor and another tenant’s cursor with BAD_USER_INPUT', async () => {
    const forged =
      Buffer.from(JSON.stringify(['2020-01-01T00:00:00.000000Z', globex.userId])).toString('base64url') +
      '.AAAAAAAAAAAAAAAAAAAAAA';
    expect(code(await h.gql(DEVICES, { first: 2, after: forged }, globex.token))).toBe('BAD_USER_INPUT');
    expect(code(await h.gql(MEMBERS, { first: 2, after: 'garbage' }, globex.token))).toBe('BAD_USER_INPUT');
    const devicesCursor = (await h.gql(DEVICES, { first: 1 }, globex.token)).body.data.viewer.tenant.devices
      .pageInfo.endCursor;
    expect(code(await h.gql(MEMBERS, { first: 2, after: devicesCursor }, globex.token))).toBe(
      'BAD_USER_INPUT',
    );
    const acmeCursor = (await h.gql(DEVICES, { first: 1 }, acme.token)).body.data.viewer.tenant.devices
      .pageInfo.endCursor;
    const a = await h.gql(DEVICES, { first: 2, after: acmeCursor }, globex.token);
    expect(code(a)).toBe('BAD_USER_INPUT');
    expect(a.body.errors?.[0]?.message).toContain('Start again without "after"');
  });

  it('caps the page size', async () => {
    const a = await h.gql(DEVICES, { first: 100_000 }, globex.token);
    expect(a.status).toBe(400);
    expect(code(a)).toBe('BAD_USER_INPUT');
    const neg = await h.gql(DEVICES, { first: -1 }, globex.token);
    expect(code(neg)).toBe('BAD_USER_INPUT');
  });
});

describe('/dev/token (development mode)', () => {
  const post = (body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${h.url}${DEV_TOKEN_PATH}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });

  it('issues a 15-minute bearer token for an existing membership', async () => {
    const res = await post({ email: 'ADA@acme.test' });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const body = (await res.json()) as Record<string, string | number>;
    issued.push(String(body['access_token']));
    expect(body).toMatchObject({
      token_type: 'Bearer',
      expires_in: 900,
      tenant_id: acme.tenantId,
      user_id: acme.userId,
    });
    const a = await h.gql(`query { viewer { user { email } } }`, {}, String(body['access_token']));
    expect(a.body.data.viewer.user.email).toBe('ada@acme.test');
  });

  it('picks the tenant when given, and asks for it when the user has several', async () => {
    const second = await h.tenant('Acme Labs', 'ada@acme.test');
    issued.push(second.token);
    const several = await post({ email: 'ada@acme.test' });
    expect(several.status).toBe(400);
    const err = ((await several.json()) as { errors: { extensions: Record<string, unknown> }[] }).errors[0]!;
    expect(err.extensions['code']).toBe('BAD_USER_INPUT');
    expect(err.extensions['tenantIds']).toEqual([acme.tenantId, second.tenantId]);
    const picked = await post({ email: 'ada@acme.test', tenantId: second.tenantId });
    expect(((await picked.json()) as { tenant_id: string }).tenant_id).toBe(second.tenantId);
  });

  it('answers NOT_FOUND (404) without a membership, 400 on a bad body, 405 on GET', async () => {
    const unknown = await post({ email: 'nobody@acme.test' });
    expect(unknown.status).toBe(404);
    const wrongTenant = await post({ email: 'hank@globex.test', tenantId: acme.tenantId });
    expect(wrongTenant.status).toBe(404);
    expect((await post('{not json')).status).toBe(400);
    expect((await post({ email: 'not an e-mail' })).status).toBe(400);
    expect((await fetch(`${h.url}${DEV_TOKEN_PATH}`)).status).toBe(405);
  });

  it('refuses requests that came through a proxy', async () => {
    const res = await post({ email: 'hank@globex.test' }, { 'x-forwarded-for': '203.0.113.9' });
    expect(res.status).toBe(403);
  });
});

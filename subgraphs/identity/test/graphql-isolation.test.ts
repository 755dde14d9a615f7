/**
 * Tenant isolation of every identity query and mutation that takes an id (no BOLA): called by Globex's OWNER with
 * Acme's ids, each answers NOT_FOUND or null, never Acme's data, and nothing in the database changes. (Device codes
 * another tenant approved: graphql-enrolment.test.ts.) PGlite, or PostgreSQL when DATABASE_URL is set.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startIdentity, type GraphQLAnswer, type Harness, type Member } from './harness.js';

let h: Harness;
let acme: Member;
let globex: Member;
/** Acme's OPERATOR, with a device. */
let acmeOperator: Member;
let acmeDevice: string;

let serial = 0;
const key = (label: string) => `${label}-${++serial}-${'x'.repeat(8)}`;
const code = (a: GraphQLAnswer) => a.body.errors?.[0]?.extensions['code'];

/** Everything an identity mutation could touch, as the migration owner sees it. */
async function snapshot() {
  const all = (sql: string) => h.asOwner(sql);
  return {
    devices: await all('SELECT * FROM identity.devices ORDER BY id'),
    memberships: await all('SELECT * FROM identity.memberships ORDER BY tenant_id, user_id'),
    users: await all('SELECT * FROM identity.users ORDER BY id'),
    grants: await all('SELECT * FROM identity.oauth_grants ORDER BY grant_id'),
    store: await all('SELECT model, id_hash, grant_id FROM identity.oauth_store ORDER BY model, id_hash'),
    revocations: await all('SELECT kind, value FROM runtime.token_revocations ORDER BY kind, value'),
    keys: await all('SELECT tenant_id, principal_id, key FROM runtime.idempotency_keys ORDER BY key'),
  };
}

beforeAll(async () => {
  h = await startIdentity();
  acme = await h.tenant('Acme', 'ada@acme.test');
  globex = await h.tenant('Globex', 'hank@globex.test');
  const [u] = await h.asOwner<{ id: string }>(
    "INSERT INTO identity.users (email, display_name) VALUES ('opal@acme.test', 'Opal') RETURNING id",
  );
  await h.asOwner("INSERT INTO identity.memberships (tenant_id, user_id, role) VALUES ($1, $2, 'OPERATOR')", [
    acme.tenantId,
    u!.id,
  ]);
  acmeOperator = {
    tenantId: acme.tenantId,
    userId: u!.id,
    token: await h.token({ tenantId: acme.tenantId, userId: u!.id }, 'OPERATOR'),
  };
  acmeDevice = await h.enrolledDevice(acmeOperator, 'Acme secret rig');
  await h.asOwner(
    `INSERT INTO identity.oauth_grants (grant_id, tenant_id, user_id, device_id, client_id)
     VALUES ('g-acme', $1, $2, $3, 'agentgraph-desktop')`,
    [acme.tenantId, acmeOperator.userId, acmeDevice],
  );
  await h.asOwner(
    `INSERT INTO identity.oauth_store (model, id_hash, payload, grant_id)
     VALUES ('RefreshToken', sha256(convert_to('rt-acme', 'UTF8')), '{}'::jsonb, 'g-acme')`,
  );
});

afterAll(async () => {
  await h?.close();
});

describe("Globex's OWNER, with Acme's ids", () => {
  it('device(id) is null', async () => {
    const a = await h.gql(
      'query($id: ID!) { device(id: $id) { id name } }',
      { id: acmeDevice },
      globex.token,
    );
    expect(a.body.errors).toBeUndefined();
    expect(a.body.data.device).toBeNull();
  });

  it('_entities resolves Acme’s Device, User and Tenant to null (their lists included)', async () => {
    const q = `query($r: [_Any!]!) { _entities(representations: $r) {
      ... on Device { id name keyThumbprint }
      ... on User { id email }
      ... on Tenant { id name members(first: 5) { edges { node { user { email } } } } devices(first: 5) { edges { node { id } } } }
    } }`;
    const r = [
      { __typename: 'Device', id: acmeDevice },
      { __typename: 'User', id: acmeOperator.userId },
      { __typename: 'Tenant', id: acme.tenantId },
    ];
    const own = await h.gql(q, { r }, acme.token);
    expect(own.body.data._entities.map((e: { id: string } | null) => e?.id)).toEqual([
      acmeDevice,
      acmeOperator.userId,
      acme.tenantId,
    ]);
    const foreign = await h.gql(q, { r }, globex.token);
    expect(foreign.body.errors).toBeUndefined();
    expect(foreign.body.data._entities).toEqual([null, null, null]);
  });

  it('the id-taking mutations answer NOT_FOUND and change nothing', async () => {
    const before = await snapshot();
    const calls: [string, string, Record<string, unknown>][] = [
      [
        'renameDevice',
        'mutation($id: ID!, $key: ID!) { renameDevice(id: $id, name: "Pwned", idempotencyKey: $key) { device { id name } } }',
        { id: acmeDevice },
      ],
      [
        'revokeDevice',
        'mutation($id: ID!, $key: ID!) { revokeDevice(id: $id, idempotencyKey: $key) { device { id status } } }',
        { id: acmeDevice },
      ],
      [
        'changeMemberRole',
        'mutation($id: ID!, $key: ID!) { changeMemberRole(userId: $id, role: VIEWER, idempotencyKey: $key) { membership { role } } }',
        { id: acmeOperator.userId },
      ],
      [
        'changeMemberRole (an owner)',
        'mutation($id: ID!, $key: ID!) { changeMemberRole(userId: $id, role: OWNER, idempotencyKey: $key) { membership { role } } }',
        { id: acme.userId },
      ],
      [
        'removeMember',
        'mutation($id: ID!, $key: ID!) { removeMember(userId: $id, idempotencyKey: $key) { userId } }',
        { id: acmeOperator.userId },
      ],
    ];
    for (const [name, query, vars] of calls) {
      const a = await h.gql(query, { ...vars, key: key('iso') }, globex.token);
      expect([name, code(a)]).toEqual([name, 'NOT_FOUND']);
      expect(a.body.data ?? null).toBeNull();
      expect(JSON.stringify(a.body)).not.toContain('Acme secret rig');
      expect(JSON.stringify(a.body)).not.toContain('opal@acme.test');
    }
    expect(await snapshot()).toEqual(before);
  });

  it("setRemoteActionsEnabled with a Globex token naming Acme's device is NOT_FOUND and changes nothing", async () => {
    const before = await snapshot();
    const forged = await h.deviceToken(globex, acmeDevice);
    const a = await h.gql(
      'mutation($key: ID!) { setRemoteActionsEnabled(enabled: true, idempotencyKey: $key) { device { id name } } }',
      { key: key('iso') },
      forged,
    );
    expect(code(a)).toBe('NOT_FOUND');
    expect(JSON.stringify(a.body)).not.toContain('Acme secret rig');
    expect(await snapshot()).toEqual(before);
  });

  it('Query.tenant and the lists are only ever Globex’s own', async () => {
    const a = await h.gql(
      '{ tenant { id members(first: 10) { edges { node { user { email } } } } devices(first: 10) { edges { node { id } } } } }',
      {},
      globex.token,
    );
    expect(a.body.data.tenant).toEqual({
      id: globex.tenantId,
      members: { edges: [{ node: { user: { email: 'hank@globex.test' } } }] },
      devices: { edges: [] },
    });
  });
});

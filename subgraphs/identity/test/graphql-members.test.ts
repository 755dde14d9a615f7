/**
 * Identity GraphQL for members and roles over real HTTP: addMember, changeMemberRole, removeMember, with the role
 * rules (ADMIN+, OWNER changes only by an OWNER, never without an owner), idempotent replay/reuse, and what removal
 * ends (grant state, tokens, devices). Runs on in-memory PGlite, or on PostgreSQL when DATABASE_URL is set.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startIdentity, type GraphQLAnswer, type Harness, type Member } from './harness.js';
import type { Role } from '../src/models.js';

let h: Harness;

let serial = 0;
const key = (label: string) => `${label}-${++serial}-${'x'.repeat(8)}`;
const code = (a: GraphQLAnswer) => a.body.errors?.[0]?.extensions['code'];

const ADD = `mutation($input: AddMemberInput!, $key: ID!) {
  addMember(input: $input, idempotencyKey: $key) { membership { role createdAt user { id email displayName } } } }`;
const CHANGE = `mutation($userId: ID!, $role: Role!, $key: ID!) {
  changeMemberRole(userId: $userId, role: $role, idempotencyKey: $key) { membership { role user { id } } } }`;
const REMOVE = `mutation($userId: ID!, $key: ID!) { removeMember(userId: $userId, idempotencyKey: $key) { userId } }`;

/** A user without any membership (as the admin CLI or sign-up creates them). */
async function user(email: string): Promise<string> {
  const [u] = await h.asOwner<{ id: string }>(
    'INSERT INTO identity.users (email, display_name) VALUES ($1, $2) RETURNING id',
    [email, email.split('@')[0]],
  );
  return u!.id;
}

async function join(tenant: Member, email: string, role: Role): Promise<Member> {
  const userId = await user(email);
  await h.asOwner('INSERT INTO identity.memberships (tenant_id, user_id, role) VALUES ($1, $2, $3)', [
    tenant.tenantId,
    userId,
    role,
  ]);
  const m = { tenantId: tenant.tenantId, userId };
  return { ...m, token: await h.token(m, role) };
}

async function roleIn(tenant: Member, userId: string): Promise<string | null> {
  const rows = await h.asOwner<{ role: string }>(
    'SELECT role FROM identity.memberships WHERE tenant_id = $1 AND user_id = $2',
    [tenant.tenantId, userId],
  );
  return rows[0]?.role ?? null;
}

beforeAll(async () => {
  h = await startIdentity();
});

afterAll(async () => {
  await h?.close();
});

describe('addMember', () => {
  let acme: Member;
  let admin: Member;
  beforeAll(async () => {
    acme = await h.tenant('Acme', 'ada@acme.test');
    admin = await join(acme, 'adam@acme.test', 'ADMIN');
  });

  it('adds an existing user with a role (ADMIN+); the user becomes visible in the tenant', async () => {
    const userId = await user('bea@example.test');
    const vars = { input: { email: '  BEA@example.test ', role: 'OPERATOR' }, key: key('add') };
    const a = await h.gql(ADD, vars, admin.token);
    expect(a.body.errors).toBeUndefined();
    expect(a.body.data.addMember.membership).toMatchObject({
      role: 'OPERATOR',
      user: { id: userId, email: 'bea@example.test', displayName: 'bea' },
    });
    expect(await roleIn(acme, userId)).toBe('OPERATOR');
    const replay = await h.gql(ADD, vars, admin.token);
    expect(replay.body.extensions?.['idempotentReplay']).toBe(true);
    expect(replay.body.data).toEqual(a.body.data);
    const reused = await h.gql(ADD, { ...vars, input: { ...vars.input, role: 'ADMIN' } }, admin.token);
    expect(code(reused)).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(await roleIn(acme, userId)).toBe('OPERATOR');
    const listed = await h.gql(
      '{ tenant { members(first: 10) { edges { node { role user { email } } } } } }',
      {},
      admin.token,
    );
    expect(
      listed.body.data.tenant.members.edges.map(
        (e: { node: { user: { email: string } } }) => e.node.user.email,
      ),
    ).toContain('bea@example.test');
  });

  it('answers NOT_FOUND with a hint when no user has the e-mail, and creates nobody', async () => {
    const a = await h.gql(
      ADD,
      { input: { email: 'ghost@example.test', role: 'VIEWER' }, key: key('add') },
      admin.token,
    );
    expect(code(a)).toBe('NOT_FOUND');
    expect(a.body.errors?.[0]?.message).toContain('admin CLI');
    expect(a.body.errors?.[0]?.message).not.toContain('ghost');
    const rows = await h.asOwner("SELECT 1 FROM identity.users WHERE email = 'ghost@example.test'");
    expect(rows).toHaveLength(0);
  });

  it('refuses a user who is a member already (BAD_USER_INPUT), keeping their role', async () => {
    const a = await h.gql(
      ADD,
      { input: { email: 'adam@acme.test', role: 'VIEWER' }, key: key('add') },
      acme.token,
    );
    expect(code(a)).toBe('BAD_USER_INPUT');
    expect(a.body.errors?.[0]?.message).toContain('changeMemberRole');
    expect(await roleIn(acme, admin.userId)).toBe('ADMIN');
  });

  it('validates the e-mail (field named, value not echoed)', async () => {
    const a = await h.gql(
      ADD,
      { input: { email: 'not-an-email', role: 'VIEWER' }, key: key('add') },
      admin.token,
    );
    expect(code(a)).toBe('BAD_USER_INPUT');
    expect(a.body.errors?.[0]?.extensions['field']).toBe('input.email');
    expect(a.body.errors?.[0]?.message).not.toContain('not-an-email');
  });

  it('lets only an OWNER add an OWNER', async () => {
    const userId = await user('olga@example.test');
    const byAdmin = await h.gql(
      ADD,
      { input: { email: 'olga@example.test', role: 'OWNER' }, key: key('add') },
      admin.token,
    );
    expect(code(byAdmin)).toBe('FORBIDDEN');
    expect(byAdmin.body.errors?.[0]?.extensions['requiredRole']).toBe('OWNER');
    // An OWNER's token down-scoped to ADMIN acts as ADMIN.
    const downScoped = await h.token(acme, 'ADMIN');
    expect(
      code(
        await h.gql(
          ADD,
          { input: { email: 'olga@example.test', role: 'OWNER' }, key: key('add') },
          downScoped,
        ),
      ),
    ).toBe('FORBIDDEN');
    expect(await roleIn(acme, userId)).toBeNull();
    const byOwner = await h.gql(
      ADD,
      { input: { email: 'olga@example.test', role: 'OWNER' }, key: key('add') },
      acme.token,
    );
    expect(byOwner.body.data.addMember.membership.role).toBe('OWNER');
  });

  it('is FORBIDDEN below ADMIN, also for an OWNER token of a member demoted in the database', async () => {
    const userId = await user('carl@example.test');
    const operator = await join(acme, 'opal@acme.test', 'OPERATOR');
    const demoted = await join(acme, 'dora@acme.test', 'VIEWER');
    for (const t of [operator.token, await h.token(demoted, 'OWNER')]) {
      const a = await h.gql(
        ADD,
        { input: { email: 'carl@example.test', role: 'VIEWER' }, key: key('add') },
        t,
      );
      expect(code(a)).toBe('FORBIDDEN');
    }
    expect(await roleIn(acme, userId)).toBeNull();
  });
});

describe('changeMemberRole', () => {
  let tenant: Member;
  let admin: Member;
  let operator: Member;
  beforeAll(async () => {
    tenant = await h.tenant('Initech', 'bill@initech.test');
    admin = await join(tenant, 'peter@initech.test', 'ADMIN');
    operator = await join(tenant, 'milton@initech.test', 'OPERATOR');
  });

  it('changes a role (ADMIN+), replays, and refuses a reused key', async () => {
    const vars = { userId: operator.userId, role: 'VIEWER', key: key('role') };
    const a = await h.gql(CHANGE, vars, admin.token);
    expect(a.body.errors).toBeUndefined();
    expect(a.body.data.changeMemberRole.membership).toEqual({
      role: 'VIEWER',
      user: { id: operator.userId },
    });
    expect(await roleIn(tenant, operator.userId)).toBe('VIEWER');
    // The demoted member's tokens (which say OPERATOR) are revoked at once; the next one carries the new role.
    expect(code(await h.gql('{ viewer { role } }', {}, operator.token))).toBe('UNAUTHENTICATED');
    expect((await h.gql(CHANGE, vars, admin.token)).body.extensions?.['idempotentReplay']).toBe(true);
    expect(code(await h.gql(CHANGE, { ...vars, role: 'ADMIN' }, admin.token))).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(await roleIn(tenant, operator.userId)).toBe('VIEWER');
  });

  it('is FORBIDDEN below ADMIN', async () => {
    // A token issued after the demotion above (iat has one-second resolution; tokens of the demotion's second are
    // revoked with it).
    const viewer = await h.token(operator, 'VIEWER', new Date(Date.now() + 2000));
    expect(
      code(await h.gql(CHANGE, { userId: admin.userId, role: 'VIEWER', key: key('role') }, viewer)),
    ).toBe('FORBIDDEN');
    expect(await roleIn(tenant, admin.userId)).toBe('ADMIN');
  });

  it('lets only an OWNER make or unmake an OWNER', async () => {
    const promote = await h.gql(
      CHANGE,
      { userId: operator.userId, role: 'OWNER', key: key('role') },
      admin.token,
    );
    expect(code(promote)).toBe('FORBIDDEN');
    const demote = await h.gql(
      CHANGE,
      { userId: tenant.userId, role: 'ADMIN', key: key('role') },
      admin.token,
    );
    expect(code(demote)).toBe('FORBIDDEN');
    expect(await roleIn(tenant, tenant.userId)).toBe('OWNER');
    expect(await roleIn(tenant, operator.userId)).toBe('VIEWER');
  });

  it('never leaves the tenant without an OWNER', async () => {
    const last = await h.gql(
      CHANGE,
      { userId: tenant.userId, role: 'ADMIN', key: key('role') },
      tenant.token,
    );
    expect(code(last)).toBe('FORBIDDEN');
    expect(last.body.errors?.[0]?.message).toContain('only OWNER');
    expect(await roleIn(tenant, tenant.userId)).toBe('OWNER');
    // With a second owner, the first may step down.
    const promote = await h.gql(
      CHANGE,
      { userId: admin.userId, role: 'OWNER', key: key('role') },
      tenant.token,
    );
    expect(promote.body.data.changeMemberRole.membership.role).toBe('OWNER');
    const stepDown = await h.gql(
      CHANGE,
      { userId: tenant.userId, role: 'ADMIN', key: key('role') },
      tenant.token,
    );
    expect(stepDown.body.data.changeMemberRole.membership.role).toBe('ADMIN');
    // Stepping down revoked Bill's old OWNER token.
    const stale = await h.gql(
      CHANGE,
      { userId: admin.userId, role: 'VIEWER', key: key('role') },
      tenant.token,
    );
    expect(code(stale)).toBe('UNAUTHENTICATED');
    // Now Peter is the only owner, and Bill (ADMIN now, whatever a later token says) cannot change that.
    const later = await h.token(tenant, 'OWNER', new Date(Date.now() + 2000));
    const back = await h.gql(CHANGE, { userId: admin.userId, role: 'VIEWER', key: key('role') }, later);
    expect(code(back)).toBe('FORBIDDEN');
    expect(await roleIn(tenant, admin.userId)).toBe('OWNER');
  });

  it('two owners demoting each other at the same time leave one owner', async () => {
    const t = await h.tenant('Hooli', 'gavin@hooli.test');
    const other = await join(t, 'jack@hooli.test', 'OWNER');
    const [a, b] = await Promise.all([
      h.gql(CHANGE, { userId: other.userId, role: 'ADMIN', key: key('race') }, t.token),
      h.gql(CHANGE, { userId: t.userId, role: 'ADMIN', key: key('race') }, other.token),
    ]);
    expect([code(a), code(b)].filter((c) => c === undefined)).toHaveLength(1);
    // The loser is refused by the last-owner rule, or, when its request is checked after the winner committed, as a
    // demoted member whose token was revoked by that demotion.
    expect([code(a), code(b)].filter((c) => c === 'FORBIDDEN' || c === 'UNAUTHENTICATED')).toHaveLength(1);
    const owners = await h.asOwner(
      "SELECT user_id FROM identity.memberships WHERE tenant_id = $1 AND role = 'OWNER'",
      [t.tenantId],
    );
    expect(owners).toHaveLength(1);
  });

  it('answers NOT_FOUND for a user who is not a member, and for a malformed id', async () => {
    const outsider = await user('outsider@example.test');
    expect(
      code(await h.gql(CHANGE, { userId: outsider, role: 'VIEWER', key: key('role') }, admin.token)),
    ).toBe('NOT_FOUND');
    expect(code(await h.gql(CHANGE, { userId: 'abc', role: 'VIEWER', key: key('role') }, admin.token))).toBe(
      'NOT_FOUND',
    );
  });

  it('validates the role through the schema', async () => {
    const a = await h.gql(CHANGE, { userId: operator.userId, role: 'GOD', key: key('role') }, admin.token);
    expect(code(a)).toBe('BAD_USER_INPUT');
  });
});

describe('the PUBLISHER role', () => {
  let tenant: Member;
  let admin: Member;
  beforeAll(async () => {
    tenant = await h.tenant('Pied Piper', 'erlich@piedpiper.test');
    admin = await join(tenant, 'monica@piedpiper.test', 'ADMIN');
  });

  it('is assignable, and a move sideways from OPERATOR revokes the old tokens like a demotion', async () => {
    const dinesh = await join(tenant, 'dinesh@piedpiper.test', 'OPERATOR');
    const a = await h.gql(
      CHANGE,
      { userId: dinesh.userId, role: 'PUBLISHER', key: key('role') },
      admin.token,
    );
    expect(a.body.errors).toBeUndefined();
    expect(a.body.data.changeMemberRole.membership.role).toBe('PUBLISHER');
    expect(await roleIn(tenant, dinesh.userId)).toBe('PUBLISHER');
    // OPERATOR does not cover PUBLISHER (nor the reverse): the OPERATOR token must not outlive the change.
    expect(code(await h.gql('{ viewer { role } }', {}, dinesh.token))).toBe('UNAUTHENTICATED');
  });

  it('cannot do what OPERATOR may (approve a device), and a PUBLISHER token on an OPERATOR membership acts as VIEWER', async () => {
    const gilfoyle = await join(tenant, 'gilfoyle@piedpiper.test', 'PUBLISHER');
    const approve = await h.gql(
      'mutation($c: String!, $k: ID!) { approveDeviceAuthorization(userCode: $c, idempotencyKey: $k) { device { id } } }',
      { c: 'BCDF-GHJK', k: key('approve') },
      gilfoyle.token,
    );
    expect(code(approve)).toBe('FORBIDDEN');
    expect(approve.body.errors?.[0]?.message).toContain('it needs OPERATOR, ADMIN or OWNER');
    // The token says PUBLISHER but the membership says OPERATOR: the request acts with what both allow (VIEWER).
    const richard = await join(tenant, 'richard@piedpiper.test', 'OPERATOR');
    const mismatched = await h.token(richard, 'PUBLISHER');
    const again = await h.gql(
      'mutation($c: String!, $k: ID!) { approveDeviceAuthorization(userCode: $c, idempotencyKey: $k) { device { id } } }',
      { c: 'BCDF-GHJK', k: key('approve') },
      mismatched,
    );
    expect(code(again)).toBe('FORBIDDEN');
    expect(again.body.errors?.[0]?.message).toContain('Your role VIEWER');
  });
});

describe('removeMember', () => {
  let tenant: Member;
  let admin: Member;
  beforeAll(async () => {
    tenant = await h.tenant('Umbrella', 'albert@umbrella.test');
    admin = await join(tenant, 'ada@umbrella.test', 'ADMIN');
  });

  it('ends the membership, the grant state, the tokens and the devices of the member', async () => {
    const leaver = await join(tenant, 'leon@umbrella.test', 'OPERATOR');
    const laptop = await h.enrolledDevice(leaver, 'Leon laptop');
    const [revoked] = await h.asOwner<{ id: string }>(
      `INSERT INTO identity.devices (tenant_id, owner_id, name, platform, status, revoked_at)
       VALUES ($1, $2, 'Old phone', 'linux', 'REVOKED', now() - interval '1 day') RETURNING id`,
      [tenant.tenantId, leaver.userId],
    );
    for (const [grantId, deviceId] of [
      ['g-leon-web', null],
      ['g-leon-laptop', laptop],
    ] as const) {
      await h.asOwner(
        `INSERT INTO identity.oauth_grants (grant_id, tenant_id, user_id, device_id, client_id)
         VALUES ($1, $2, $3, $4, 'agentgraph-console')`,
        [grantId, tenant.tenantId, leaver.userId, deviceId],
      );
      await h.asOwner(
        `INSERT INTO identity.oauth_store (model, id_hash, payload, grant_id)
         VALUES ('RefreshToken', sha256(convert_to($1, 'UTF8')), '{}'::jsonb, $1)`,
        [grantId],
      );
    }
    // An unrelated grant of someone else stays.
    await h.asOwner(
      `INSERT INTO identity.oauth_grants (grant_id, tenant_id, user_id, client_id) VALUES ('g-ada', $1, $2, 'agentgraph-console')`,
      [tenant.tenantId, admin.userId],
    );
    await h.asOwner(
      `INSERT INTO identity.oauth_store (model, id_hash, payload, grant_id) VALUES ('Grant', sha256('\\x01'::bytea), '{}'::jsonb, 'g-ada')`,
    );
    const deviceToken = await h.deviceToken(leaver, laptop, 'OPERATOR');
    expect((await h.gql('{ viewer { role } }', {}, leaver.token)).body.data.viewer.role).toBe('OPERATOR');

    const vars = { userId: leaver.userId, key: key('remove') };
    const a = await h.gql(REMOVE, vars, admin.token);
    expect(a.body.errors).toBeUndefined();
    expect(a.body.data.removeMember).toEqual({ userId: leaver.userId });

    expect(await roleIn(tenant, leaver.userId)).toBeNull();
    const store = await h.asOwner<{ grant_id: string }>(
      'SELECT grant_id FROM identity.oauth_store WHERE grant_id IS NOT NULL ORDER BY grant_id',
    );
    expect(store.map((r) => r.grant_id)).toEqual(['g-ada']);
    const grants = await h.asOwner<{ grant_id: string }>(
      'SELECT grant_id FROM identity.oauth_grants WHERE tenant_id = $1',
      [tenant.tenantId],
    );
    expect(grants.map((r) => r.grant_id)).toEqual(['g-ada']);
    const devices = await h.asOwner<{ id: string; status: string; owner_id: string; revoked_at: Date }>(
      'SELECT id, status, owner_id, revoked_at FROM identity.devices WHERE id = ANY($1::uuid[]) ORDER BY name',
      [[laptop, revoked!.id]],
    );
    expect(devices.map((d) => [d.id, d.status, d.owner_id])).toEqual([
      [laptop, 'REVOKED', admin.userId],
      [revoked!.id, 'REVOKED', admin.userId],
    ]);
    // The old phone keeps its first revocation time.
    expect(new Date(devices[1]!.revoked_at).getTime()).toBeLessThan(
      new Date(devices[0]!.revoked_at).getTime(),
    );
    const revocations = await h.asOwner<{ kind: string; value: string }>(
      `SELECT kind, value FROM runtime.token_revocations
        WHERE (kind = 'device' AND value IN ($1, $2)) OR value LIKE $3 ORDER BY kind`,
      [laptop, revoked!.id, `%/${leaver.userId}`],
    );
    expect(revocations).toEqual([
      { kind: 'device', value: laptop },
      { kind: 'subject', value: `${tenant.tenantId}/${leaver.userId}` },
    ]);

    for (const t of [leaver.token, deviceToken]) {
      expect(code(await h.gql('{ viewer { role } }', {}, t))).toBe('UNAUTHENTICATED');
    }
    const replay = await h.gql(REMOVE, vars, admin.token);
    expect(replay.body.extensions?.['idempotentReplay']).toBe(true);
    expect(replay.body.data).toEqual(a.body.data);
    // Once removed, the member is not found any more (with a new key).
    expect(code(await h.gql(REMOVE, { userId: leaver.userId, key: key('remove') }, admin.token))).toBe(
      'NOT_FOUND',
    );
  });

  it('lets only an OWNER remove an OWNER, and nobody remove themself', async () => {
    const coOwner = await join(tenant, 'jill@umbrella.test', 'OWNER');
    expect(code(await h.gql(REMOVE, { userId: coOwner.userId, key: key('remove') }, admin.token))).toBe(
      'FORBIDDEN',
    );
    expect(await roleIn(tenant, coOwner.userId)).toBe('OWNER');
    const self = await h.gql(REMOVE, { userId: tenant.userId, key: key('remove') }, tenant.token);
    expect(code(self)).toBe('FORBIDDEN');
    expect(self.body.errors?.[0]?.message).toContain('yourself');
    expect(code(await h.gql(REMOVE, { userId: admin.userId, key: key('remove') }, admin.token))).toBe(
      'FORBIDDEN',
    );
    const byOwner = await h.gql(REMOVE, { userId: coOwner.userId, key: key('remove') }, tenant.token);
    expect(byOwner.body.errors).toBeUndefined();
    expect(await roleIn(tenant, coOwner.userId)).toBeNull();
    expect(await roleIn(tenant, tenant.userId)).toBe('OWNER');
  });

  it('is FORBIDDEN below ADMIN', async () => {
    const operator = await join(tenant, 'chris@umbrella.test', 'OPERATOR');
    const viewer = await join(tenant, 'claire@umbrella.test', 'VIEWER');
    expect(code(await h.gql(REMOVE, { userId: viewer.userId, key: key('remove') }, operator.token))).toBe(
      'FORBIDDEN',
    );
    expect(await roleIn(tenant, viewer.userId)).toBe('VIEWER');
  });
});

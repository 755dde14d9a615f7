/**
 * Identity GraphQL for devices over real HTTP: Query.tenant, the new Device fields, renameDevice, revokeDevice (grant
 * state deleted, tokens revoked) and setRemoteActionsEnabled (a device's own token only), with their role rules and
 * idempotent replay/reuse. Runs on in-memory PGlite, or on PostgreSQL when DATABASE_URL is set.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startIdentity, type GraphQLAnswer, type Harness, type Member } from './harness.js';

let h: Harness;
let acme: Member;
/** OPERATOR of Acme (not an admin). */
let opal: Member;
/** VIEWER of Acme. */
let vic: Member;
/** ADMIN of Acme. */
let adam: Member;

let serial = 0;
const key = (label: string) => `${label}-${++serial}-${'x'.repeat(8)}`;
const code = (a: GraphQLAnswer) => a.body.errors?.[0]?.extensions['code'];

const DEVICE_FIELDS = 'id name status remoteActionsEnabled enrolledAt revokedAt keyThumbprint owner { id }';
const RENAME = `mutation($id: ID!, $name: String!, $key: ID!) {
  renameDevice(id: $id, name: $name, idempotencyKey: $key) { device { ${DEVICE_FIELDS} } } }`;
const REVOKE = `mutation($id: ID!, $key: ID!) {
  revokeDevice(id: $id, idempotencyKey: $key) { device { ${DEVICE_FIELDS} } } }`;
const REMOTE = `mutation($enabled: Boolean!, $key: ID!) {
  setRemoteActionsEnabled(enabled: $enabled, idempotencyKey: $key) { device { ${DEVICE_FIELDS} } } }`;
const DEVICE = `query($id: ID!) { device(id: $id) { ${DEVICE_FIELDS} } }`;

async function member(email: string, role: string): Promise<Member> {
  const [u] = await h.asOwner<{ id: string }>(
    'INSERT INTO identity.users (email, display_name) VALUES ($1, $1) RETURNING id',
    [email],
  );
  await h.asOwner('INSERT INTO identity.memberships (tenant_id, user_id, role) VALUES ($1, $2, $3)', [
    acme.tenantId,
    u!.id,
    role,
  ]);
  const m = { tenantId: acme.tenantId, userId: u!.id };
  return { ...m, token: await h.token(m, role as never) };
}

async function deviceRow(id: string) {
  const [row] = await h.asOwner<{ name: string; status: string; revoked_at: Date | null; owner_id: string }>(
    'SELECT name, status, revoked_at, owner_id FROM identity.devices WHERE id = $1',
    [id],
  );
  return row!;
}

/** A grant of the device with oidc-provider state (a refresh token and the grant itself), as enrolment leaves it. */
async function grantWithState(
  m: { tenantId: string; userId: string },
  deviceId: string | null,
  grantId: string,
) {
  await h.asOwner(
    `INSERT INTO identity.oauth_grants (grant_id, tenant_id, user_id, device_id, client_id)
     VALUES ($1, $2, $3, $4, 'agentgraph-desktop')`,
    [grantId, m.tenantId, m.userId, deviceId],
  );
  for (const model of ['Grant', 'RefreshToken']) {
    await h.asOwner(
      `INSERT INTO identity.oauth_store (model, id_hash, payload, grant_id, expires_at)
       VALUES ($1, sha256(convert_to($2, 'UTF8')), '{}'::jsonb, $3, now() + interval '1 day')`,
      [model, `${model}-${grantId}`, grantId],
    );
  }
}

const storeRowsOf = async (grantId: string) =>
  (
    await h.asOwner<{ n: number }>(
      'SELECT count(*)::int AS n FROM identity.oauth_store WHERE grant_id = $1',
      [grantId],
    )
  )[0]!.n;

beforeAll(async () => {
  h = await startIdentity();
  acme = await h.tenant('Acme', 'ada@acme.test');
  opal = await member('opal@acme.test', 'OPERATOR');
  vic = await member('vic@acme.test', 'VIEWER');
  adam = await member('adam@acme.test', 'ADMIN');
});

afterAll(async () => {
  await h?.close();
});

describe('Query.tenant', () => {
  it("is the caller's tenant", async () => {
    const a = await h.gql('{ tenant { id name createdAt } }', {}, vic.token);
    expect(a.body.errors).toBeUndefined();
    expect(a.body.data.tenant).toMatchObject({ id: acme.tenantId, name: 'Acme' });
    expect(new Date(a.body.data.tenant.createdAt).toISOString()).toBe(a.body.data.tenant.createdAt);
  });

  it('needs a token', async () => {
    expect(code(await h.gql('{ tenant { id } }'))).toBe('UNAUTHENTICATED');
  });
});

describe('Device fields', () => {
  it('a PENDING device (registerDevice) has no enrolment time, revocation time or key', async () => {
    const reg = await h.gql(
      `mutation($key: ID!) { registerDevice(input: { name: "Old style", platform: "linux" }, idempotencyKey: $key) {
        device { ${DEVICE_FIELDS} } } }`,
      { key: key('reg') },
      acme.token,
    );
    expect(reg.body.errors).toBeUndefined();
    expect(reg.body.data.registerDevice.device).toMatchObject({
      status: 'PENDING',
      enrolledAt: null,
      revokedAt: null,
      keyThumbprint: null,
    });
  });

  it('an ENROLLED device shows when it was enrolled and the thumbprint of its key', async () => {
    const id = await h.enrolledDevice(acme, 'Enrolled rig');
    const [row] = await h.asOwner<{ key_thumbprint: string; enrolled_at: Date }>(
      'SELECT key_thumbprint, enrolled_at FROM identity.devices WHERE id = $1',
      [id],
    );
    const a = await h.gql(DEVICE, { id }, acme.token);
    expect(a.body.data.device).toMatchObject({
      status: 'ENROLLED',
      enrolledAt: new Date(row!.enrolled_at).toISOString(),
      revokedAt: null,
      keyThumbprint: row!.key_thumbprint,
    });
    expect(row!.key_thumbprint).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('registerDevice is deprecated in favour of the device authorization grant', async () => {
    const a = await h.gql(
      '{ __type(name: "Mutation") { fields(includeDeprecated: true) { name isDeprecated deprecationReason } } }',
      {},
      acme.token,
    );
    const fields = a.body.data.__type.fields as {
      name: string;
      isDeprecated: boolean;
      deprecationReason: string;
    }[];
    expect(fields.find((f) => f.name === 'registerDevice')).toEqual({
      name: 'registerDevice',
      isDeprecated: true,
      deprecationReason:
        'Devices enrol with the device authorization grant (RFC 8628); see approveDeviceAuthorization.',
    });
    expect(fields.filter((f) => f.isDeprecated).map((f) => f.name)).toEqual(['registerDevice']);
  });
});

describe('renameDevice', () => {
  let opalDevice: string;
  beforeAll(async () => {
    opalDevice = await h.enrolledDevice(opal, 'Opal laptop');
  });

  it("lets the device's owner rename it, and replays the same key", async () => {
    const vars = { id: opalDevice, name: '  Opal work laptop ', key: key('rename') };
    const a = await h.gql(RENAME, vars, opal.token);
    expect(a.body.errors).toBeUndefined();
    expect(a.body.data.renameDevice.device).toMatchObject({ id: opalDevice, name: 'Opal work laptop' });
    const again = await h.gql(RENAME, vars, opal.token);
    expect(again.body.extensions?.['idempotentReplay']).toBe(true);
    expect(again.body.data).toEqual(a.body.data);
    expect(code(await h.gql(RENAME, { ...vars, name: 'Other' }, opal.token))).toBe('IDEMPOTENCY_KEY_REUSED');
    expect((await deviceRow(opalDevice)).name).toBe('Opal work laptop');
  });

  it("lets a VIEWER rename their own device, but not someone else's", async () => {
    const vicDevice = await h.enrolledDevice(vic, 'Vic tablet');
    const own = await h.gql(RENAME, { id: vicDevice, name: 'Vic pad', key: key('rename') }, vic.token);
    expect(own.body.errors).toBeUndefined();
    const other = await h.gql(RENAME, { id: opalDevice, name: 'Mine now', key: key('rename') }, vic.token);
    expect(code(other)).toBe('FORBIDDEN');
    expect(other.body.errors?.[0]?.message).toContain("device's owner or an ADMIN or OWNER");
    expect((await deviceRow(opalDevice)).name).toBe('Opal work laptop');
  });

  it('lets an ADMIN or OWNER rename any device of the tenant; an OPERATOR only their own', async () => {
    const adaDevice = await h.enrolledDevice(acme, 'Ada desktop');
    expect(code(await h.gql(RENAME, { id: adaDevice, name: 'x', key: key('rename') }, opal.token))).toBe(
      'FORBIDDEN',
    );
    const byAdmin = await h.gql(
      RENAME,
      { id: opalDevice, name: 'Renamed by admin', key: key('rename') },
      adam.token,
    );
    expect(byAdmin.body.data.renameDevice.device.name).toBe('Renamed by admin');
    const byOwner = await h.gql(
      RENAME,
      { id: opalDevice, name: 'Renamed by owner', key: key('rename') },
      acme.token,
    );
    expect(byOwner.body.data.renameDevice.device.name).toBe('Renamed by owner');
  });

  it('acts with the lesser of the token role and the membership role', async () => {
    // Ada is OWNER in the database; a token down-scoped to OPERATOR may not rename someone else's device.
    const downScoped = await h.token(acme, 'OPERATOR');
    const a = await h.gql(RENAME, { id: opalDevice, name: 'Nope', key: key('rename') }, downScoped);
    expect(code(a)).toBe('FORBIDDEN');
    expect(a.body.errors?.[0]?.message).toContain('OPERATOR');
  });

  it('validates the name (field named, value not echoed) and keeps the key unused', async () => {
    const k = key('rename');
    const blank = await h.gql(RENAME, { id: opalDevice, name: '   ', key: k }, acme.token);
    expect(code(blank)).toBe('BAD_USER_INPUT');
    expect(blank.body.errors?.[0]?.extensions['field']).toBe('name');
    const long = await h.gql(
      RENAME,
      { id: opalDevice, name: 'q'.repeat(101), key: key('rename') },
      acme.token,
    );
    expect(long.body.errors?.[0]?.extensions['field']).toBe('name');
    expect(long.body.errors?.[0]?.message).not.toContain('qqqq');
    const ok = await h.gql(RENAME, { id: opalDevice, name: 'Fine', key: k }, acme.token);
    expect(ok.body.errors).toBeUndefined();
  });

  it('answers NOT_FOUND for an unknown or malformed id', async () => {
    const unknown = '00000000-0000-4000-8000-000000000000';
    expect(code(await h.gql(RENAME, { id: unknown, name: 'x', key: key('rename') }, acme.token))).toBe(
      'NOT_FOUND',
    );
    expect(code(await h.gql(RENAME, { id: 'nope', name: 'x', key: key('rename') }, acme.token))).toBe(
      'NOT_FOUND',
    );
  });
});

describe('revokeDevice', () => {
  it('marks the device REVOKED, deletes its grant state and revokes its tokens for 20 minutes', async () => {
    const id = await h.enrolledDevice(opal, 'Lost phone');
    await grantWithState(opal, id, `grant-${id}`);
    await grantWithState(opal, null, `grant-web-${id}`);
    const deviceToken = await h.deviceToken(opal, id, 'OPERATOR');
    expect((await h.gql('{ viewer { role } }', {}, deviceToken)).body.data.viewer.role).toBe('OPERATOR');

    const vars = { id, key: key('revoke') };
    const a = await h.gql(REVOKE, vars, opal.token);
    expect(a.body.errors).toBeUndefined();
    const device = a.body.data.revokeDevice.device;
    expect(device).toMatchObject({ id, status: 'REVOKED', owner: { id: opal.userId } });
    const row = await deviceRow(id);
    expect(device.revokedAt).toBe(new Date(row.revoked_at!).toISOString());

    expect(await storeRowsOf(`grant-${id}`)).toBe(0);
    // The member's other sign-ins are not the device's.
    expect(await storeRowsOf(`grant-web-${id}`)).toBe(2);
    const revocations = await h.asOwner<{ kind: string; ms: number }>(
      `SELECT kind, (extract(epoch FROM expires_at - $2::timestamptz) * 1000)::int AS ms
         FROM runtime.token_revocations WHERE value = $1`,
      [id, row.revoked_at],
    );
    expect(revocations).toEqual([{ kind: 'device', ms: 20 * 60 * 1000 }]);

    // The device's token is refused at once; the owner's own token is not affected.
    expect(code(await h.gql('{ viewer { role } }', {}, deviceToken))).toBe('UNAUTHENTICATED');
    expect((await h.gql('{ viewer { role } }', {}, opal.token)).body.data.viewer.role).toBe('OPERATOR');

    const replay = await h.gql(REVOKE, vars, opal.token);
    expect(replay.body.extensions?.['idempotentReplay']).toBe(true);
    expect(replay.body.data).toEqual(a.body.data);
  });

  it('changes nothing when the device is revoked already (first revocation time kept)', async () => {
    const id = await h.enrolledDevice(acme, 'Twice');
    const first = await h.gql(REVOKE, { id, key: key('revoke') }, acme.token);
    const second = await h.gql(REVOKE, { id, key: key('revoke') }, acme.token);
    expect(second.body.errors).toBeUndefined();
    expect(second.body.extensions?.['idempotentReplay']).toBeUndefined();
    expect(second.body.data.revokeDevice.device.revokedAt).toBe(
      first.body.data.revokeDevice.device.revokedAt,
    );
  });

  it('lets the owner (any role) or an ADMIN+ revoke; another OPERATOR or VIEWER gets FORBIDDEN and nothing changes', async () => {
    const opalDevice = await h.enrolledDevice(opal, 'Opal desk');
    for (const t of [vic.token, await h.token(adam, 'OPERATOR')]) {
      const a = await h.gql(REVOKE, { id: opalDevice, key: key('revoke') }, t);
      expect(code(a)).toBe('FORBIDDEN');
    }
    expect((await deviceRow(opalDevice)).status).toBe('ENROLLED');
    const byAdmin = await h.gql(REVOKE, { id: opalDevice, key: key('revoke') }, adam.token);
    expect(byAdmin.body.data.revokeDevice.device.status).toBe('REVOKED');
    const vicDevice = await h.enrolledDevice(vic, 'Vic phone');
    const byViewerOwner = await h.gql(REVOKE, { id: vicDevice, key: key('revoke') }, vic.token);
    expect(byViewerOwner.body.data.revokeDevice.device.status).toBe('REVOKED');
  });

  it('answers NOT_FOUND for an unknown or malformed id', async () => {
    expect(code(await h.gql(REVOKE, { id: 'x', key: key('revoke') }, acme.token))).toBe('NOT_FOUND');
    expect(
      code(
        await h.gql(REVOKE, { id: '00000000-0000-4000-8000-000000000001', key: key('revoke') }, acme.token),
      ),
    ).toBe('NOT_FOUND');
  });
});

describe('setRemoteActionsEnabled', () => {
  let laptop: string;
  let laptopToken: string;
  beforeAll(async () => {
    laptop = await h.enrolledDevice(opal, 'Remote laptop');
    laptopToken = await h.deviceToken(opal, laptop, 'OPERATOR');
  });

  it("is FORBIDDEN with a user's token, whatever the role, and changes nothing", async () => {
    for (const t of [opal.token, acme.token]) {
      const a = await h.gql(REMOTE, { enabled: true, key: key('remote') }, t);
      expect(code(a)).toBe('FORBIDDEN');
      expect(a.body.errors?.[0]?.message).toContain("Only the device itself, on its local user's decision");
    }
    expect(
      (
        await h.asOwner<{ on: boolean }>(
          'SELECT remote_actions_enabled AS on FROM identity.devices WHERE id = $1',
          [laptop],
        )
      )[0]!.on,
    ).toBe(false);
  });

  it("switches the calling device's setting with its own token, idempotently", async () => {
    const vars = { enabled: true, key: key('remote') };
    const on = await h.gql(REMOTE, vars, laptopToken);
    expect(on.body.errors).toBeUndefined();
    expect(on.body.data.setRemoteActionsEnabled.device).toMatchObject({
      id: laptop,
      remoteActionsEnabled: true,
    });
    const replay = await h.gql(REMOTE, vars, laptopToken);
    expect(replay.body.extensions?.['idempotentReplay']).toBe(true);
    expect(code(await h.gql(REMOTE, { ...vars, enabled: false }, laptopToken))).toBe(
      'IDEMPOTENCY_KEY_REUSED',
    );
    const off = await h.gql(REMOTE, { enabled: false, key: key('remote') }, laptopToken);
    expect(off.body.data.setRemoteActionsEnabled.device.remoteActionsEnabled).toBe(false);
    // The setting is visible to web users, who cannot change it.
    expect((await h.gql(DEVICE, { id: laptop }, acme.token)).body.data.device.remoteActionsEnabled).toBe(
      false,
    );
  });

  it('is FORBIDDEN with an exchanged (sidecar) token of the device', async () => {
    const sidecar = await h.deviceToken(opal, laptop, 'OPERATOR', {
      scope: 'api:read api:write',
      act: { sub: 'agentgraph-desktop' },
    });
    const a = await h.gql(REMOTE, { enabled: true, key: key('remote') }, sidecar);
    expect(code(a)).toBe('FORBIDDEN');
    expect(a.body.errors?.[0]?.message).toContain('token exchange');
  });

  it('refuses to enable remote actions on a device that is not ENROLLED; disabling is always allowed', async () => {
    const [pending] = await h.asOwner<{ id: string }>(
      "INSERT INTO identity.devices (tenant_id, owner_id, name, platform) VALUES ($1, $2, 'Pending', 'macos') RETURNING id",
      [opal.tenantId, opal.userId],
    );
    const t = await h.deviceToken(opal, pending!.id, 'OPERATOR');
    const a = await h.gql(REMOTE, { enabled: true, key: key('remote') }, t);
    expect(code(a)).toBe('FORBIDDEN');
    expect(a.body.errors?.[0]?.message).toContain('PENDING');
    const off = await h.gql(REMOTE, { enabled: false, key: key('remote') }, t);
    expect(off.body.errors).toBeUndefined();
  });

  it("is NOT_FOUND with a token whose device is not the caller's", async () => {
    const adaDevice = await h.enrolledDevice(acme, 'Ada rig');
    // A token naming Ada's device but issued to Opal: not this device's token.
    const t = await h.deviceToken(opal, adaDevice, 'OPERATOR');
    expect(code(await h.gql(REMOTE, { enabled: true, key: key('remote') }, t))).toBe('NOT_FOUND');
    expect(
      (
        await h.asOwner<{ on: boolean }>(
          'SELECT remote_actions_enabled AS on FROM identity.devices WHERE id = $1',
          [adaDevice],
        )
      )[0]!.on,
    ).toBe(false);
  });
});

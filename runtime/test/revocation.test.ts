import { randomUUID } from 'node:crypto';
import { createLocalJWKSet, exportJWK, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTokenVerifier } from '../src/auth.js';
import type { Database } from '../src/db/types.js';
import { createLogger } from '../src/log.js';
import {
  createRevocationList,
  REVOCATION_GRACE_MS,
  revokeTokens,
  subjectKey,
  type Revocation,
  type RevocationList,
} from '../src/revocation.js';
import type { AuthContext } from '../src/tenancy.js';
import { drivers, expectAppError, openTestDatabase, type TestDb } from './helpers.js';

const MINUTE = 60_000;

function authOf(over: Partial<AuthContext> = {}): AuthContext {
  return {
    tenantId: randomUUID(),
    principalId: randomUUID(),
    role: 'OPERATOR',
    scopes: ['api:read'],
    tokenId: randomUUID(),
    grantId: `grant-${randomUUID()}`,
    deviceId: randomUUID(),
    ...over,
  };
}

/** Resolves once `auth` is revoked in `list` (notifications arrive asynchronously after the commit). */
const revokedIn = (list: RevocationList, auth: AuthContext) =>
  vi.waitFor(() => expect(list.isRevoked(auth)).toBe(true), { timeout: 5000, interval: 5 });

describe('subjectKey', () => {
  it('names a principal within a tenant', () => {
    expect(subjectKey('t-1', 'u-1')).toBe('t-1/u-1');
    expect(subjectKey('t-1', 'u-1')).not.toBe(subjectKey('t-2', 'u-1'));
  });
});

describe.each(drivers)('token revocations on %s', (driver) => {
  let t: TestDb;
  let db: Database;
  const logs: string[] = [];
  const log = createLogger({ service: 'revocation-test' }, { level: 'debug', write: (l) => logs.push(l) });
  const lists: RevocationList[] = [];
  const listOn = async (database: Database = db, now?: () => number) => {
    const list = createRevocationList(database, log, { now });
    lists.push(list);
    await list.ready;
    return list;
  };
  const revoke = (entries: Revocation[]) => db.transaction((tx) => revokeTokens(tx, entries));
  const inMinutes = (n: number) => new Date(Date.now() + n * MINUTE);

  beforeAll(async () => {
    // Identity is the one service that may revoke (runtime migration 005).
    t = await openTestDatabase(driver, [], 'identity');
    db = t.db;
  });
  afterAll(async () => {
    for (const l of lists) await l.close();
    await t?.close();
  });

  it('reaches a listening list when the transaction commits, by jti, grant, device and subject', async () => {
    const list = await listOn();
    const byJti = authOf();
    const byGrant = authOf();
    const byDevice = authOf();
    const bySubject = authOf();
    const bystander = authOf();
    expect(list.isRevoked(byJti)).toBe(false);
    await revoke([
      { kind: 'jti', value: byJti.tokenId!, expiresAt: inMinutes(15) },
      { kind: 'grant', value: byGrant.grantId!, expiresAt: inMinutes(15) },
      { kind: 'device', value: byDevice.deviceId!, expiresAt: inMinutes(15) },
      {
        kind: 'subject',
        value: subjectKey(bySubject.tenantId, bySubject.principalId),
        expiresAt: inMinutes(15),
      },
    ]);
    for (const a of [byJti, byGrant, byDevice, bySubject]) await revokedIn(list, a);
    expect(list.isRevoked(bystander)).toBe(false);
    // Each kind matches its own claim only: the same value in another claim is not revoked.
    expect(list.isRevoked(authOf({ grantId: byJti.tokenId }))).toBe(false);
    // A token of the revoked subject in another tenant is not revoked.
    expect(list.isRevoked(authOf({ principalId: bySubject.principalId }))).toBe(false);
  });

  it('refuses tokens issued up to the revocation, not those issued after it (a member re-added)', async () => {
    const list = await listOn();
    const member = authOf();
    const revokedAtSec = Math.floor(Date.now() / 1000);
    await revoke([
      { kind: 'subject', value: subjectKey(member.tenantId, member.principalId), expiresAt: inMinutes(15) },
    ]);
    const before = { ...member, issuedAt: revokedAtSec - 60 };
    await revokedIn(list, before);
    // Issued in the same second (or within the issuer-clock skew): still refused.
    expect(list.isRevoked({ ...member, issuedAt: revokedAtSec })).toBe(true);
    // Issued well after the revocation committed: a fresh token of the re-added member passes.
    expect(list.isRevoked({ ...member, issuedAt: revokedAtSec + 10 })).toBe(false);
    // A token without iat cannot be placed in time: refused.
    expect(list.isRevoked({ ...member, issuedAt: undefined })).toBe(true);
    // Revoking again moves the line: the token issued after the first revocation is refused now.
    await new Promise((r) => setTimeout(r, 10));
    await revoke([
      { kind: 'subject', value: subjectKey(member.tenantId, member.principalId), expiresAt: inMinutes(15) },
    ]);
    await vi.waitFor(
      () => expect(list.isRevoked({ ...member, issuedAt: Math.floor(Date.now() / 1000) - 1 })).toBe(true),
      { timeout: 5000, interval: 5 },
    );
  });

  it('is not seen before the commit, and never when rolled back', async () => {
    const list = await listOn();
    const rolledBack = authOf();
    const committed = authOf();
    const seenInside = await db
      .transaction(async (tx) => {
        await revokeTokens(tx, [{ kind: 'jti', value: rolledBack.tokenId!, expiresAt: inMinutes(15) }]);
        // Another round trip on the same connection, so a notification sent too early would have arrived.
        await tx.query('SELECT 1');
        const seen = list.isRevoked(rolledBack);
        throw Object.assign(new Error('roll back'), { seen });
      })
      .catch((err: { seen: boolean }) => err.seen);
    expect(seenInside).toBe(false);
    // Notifications arrive in commit order: once the later revocation is in, the rolled-back one would be too.
    await revoke([{ kind: 'jti', value: committed.tokenId!, expiresAt: inMinutes(15) }]);
    await revokedIn(list, committed);
    expect(list.isRevoked(rolledBack)).toBe(false);
    const rows = await db.query('SELECT 1 FROM runtime.token_revocations WHERE value = $1', [
      rolledBack.tokenId,
    ]);
    expect(rows.rowCount).toBe(0);
  });

  it('loads the revocations committed before it started', async () => {
    const earlier = authOf();
    await revoke([{ kind: 'device', value: earlier.deviceId!, expiresAt: inMinutes(15) }]);
    const list = await listOn();
    expect(list.isRevoked(earlier)).toBe(true);
  });

  it('forgets a revocation once it expired (plus the grace for clock tolerance), and does not load expired rows', async () => {
    let now = Date.now();
    const list = await listOn(db, () => now);
    const a = authOf();
    const expiresAt = new Date(now + MINUTE);
    await revoke([{ kind: 'grant', value: a.grantId!, expiresAt }]);
    await revokedIn(list, a);
    now = expiresAt.getTime() + REVOCATION_GRACE_MS - 1;
    expect(list.isRevoked(a)).toBe(true);
    now = expiresAt.getTime() + REVOCATION_GRACE_MS;
    expect(list.isRevoked(a)).toBe(false);

    const old = authOf();
    await revoke([
      { kind: 'jti', value: old.tokenId!, expiresAt: new Date(Date.now() - REVOCATION_GRACE_MS - MINUTE) },
    ]);
    const fresh = await listOn();
    expect(fresh.isRevoked(old)).toBe(false);
  });

  it('keeps the later expiry when the same thing is revoked twice', async () => {
    const a = authOf();
    const later = inMinutes(30);
    await revoke([{ kind: 'device', value: a.deviceId!, expiresAt: later }]);
    await revoke([
      { kind: 'device', value: a.deviceId!, expiresAt: inMinutes(5) },
      { kind: 'device', value: a.deviceId!, expiresAt: inMinutes(10) }, // twice in one call is fine too
    ]);
    const { rows } = await db.query<{ ms: number }>(
      `SELECT (extract(epoch FROM expires_at) * 1000)::float8 AS ms
         FROM runtime.token_revocations WHERE kind = 'device' AND value = $1`,
      [a.deviceId],
    );
    expect(rows.map((r) => Number(r.ms))).toEqual([later.getTime()]);
  });

  it('purges long-expired rows when revoking, a bounded batch at a time', async () => {
    // Only this test's rows are past the grace: exactly 150 to purge.
    await db.query("DELETE FROM runtime.token_revocations WHERE expires_at < now() - interval '2 minutes'");
    await db.query(
      `INSERT INTO runtime.token_revocations (kind, value, expires_at)
       SELECT 'jti', 'stale-' || i, now() - interval '1 day' FROM generate_series(1, 150) AS i`,
    );
    const count = async () =>
      (
        await db.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM runtime.token_revocations WHERE value LIKE 'stale-%'",
        )
      ).rows[0]!.n;
    await revoke([{ kind: 'jti', value: randomUUID(), expiresAt: inMinutes(15) }]);
    expect(await count()).toBe(50);
    await revoke([{ kind: 'jti', value: randomUUID(), expiresAt: inMinutes(15) }]);
    expect(await count()).toBe(0);
  });

  it.each([
    ['an unknown kind', { kind: 'user', value: 'x', expiresAt: new Date() }, /kind/],
    ['an empty value', { kind: 'jti', value: '', expiresAt: new Date() }, /value/],
    ['an overlong value', { kind: 'jti', value: 'v'.repeat(201), expiresAt: new Date() }, /value/],
    ['an invalid date', { kind: 'jti', value: 'x', expiresAt: new Date('nope') }, /expiresAt/],
  ])('refuses %s, writing nothing', async (_, entry, message) => {
    const before = await db.query('SELECT 1 FROM runtime.token_revocations');
    await expect(revoke([entry as Revocation])).rejects.toThrow(message);
    expect((await db.query('SELECT 1 FROM runtime.token_revocations')).rowCount).toBe(before.rowCount);
  });

  it('reloads what it missed when the listener reconnects, and survives a malformed notification', async () => {
    let reconnect: (() => void) | undefined;
    const spy: Database = {
      ...db,
      listen: (channel, onNotify, onReconnect) => {
        reconnect = onReconnect;
        // Deaf to notifications: only a reload can tell this list anything.
        return db.listen(channel, () => undefined);
      },
    };
    const list = await listOn(spy);
    const missed = authOf();
    await db.query(`INSERT INTO runtime.token_revocations (kind, value, expires_at) VALUES ('jti', $1, $2)`, [
      missed.tokenId,
      inMinutes(15).toISOString(),
    ]);
    expect(list.isRevoked(missed)).toBe(false);
    reconnect!();
    await revokedIn(list, missed);

    const listening = await listOn();
    const before = listening.size;
    await db.query(`SELECT pg_notify('token_revocations', 'not json')`);
    const next = authOf();
    await revoke([{ kind: 'jti', value: next.tokenId!, expiresAt: inMinutes(15) }]);
    await revokedIn(listening, next);
    expect(listening.size).toBeGreaterThan(before);
    expect(logs.some((l) => l.includes('malformed token revocation notification'))).toBe(true);
  });

  it('stops listening when closed', async () => {
    const list = createRevocationList(db, log);
    await list.close();
    const a = authOf();
    await revoke([{ kind: 'jti', value: a.tokenId!, expiresAt: inMinutes(15) }]);
    const witness = await listOn();
    await revokedIn(witness, a);
    expect(list.isRevoked(a)).toBe(false);
  });

  it('makes the verifier refuse a revoked token, cached or not, from the commit on', async () => {
    const pair = await generateKeyPair('ES256');
    const keys = createLocalJWKSet({
      keys: [{ ...(await exportJWK(pair.publicKey)), kid: 'k', alg: 'ES256' }],
    });
    const revocations = await listOn();
    const verify = createTokenVerifier({ issuer: 'iss', audience: 'aud', keys, revocations });
    const tenantId = randomUUID();
    const sign = (claims: Record<string, unknown>) =>
      new SignJWT({ tid: tenantId, role: 'VIEWER', scope: 'api:read', ...claims })
        .setProtectedHeader({ alg: 'ES256', kid: 'k', typ: 'at+jwt' })
        .setIssuer('iss')
        .setAudience('aud')
        .setSubject('member-1')
        .setIssuedAt()
        .setExpirationTime('15m')
        .setJti(randomUUID())
        .sign(pair.privateKey)
        .then((tok) => `Bearer ${tok}`);
    const grant = `grant-${randomUUID()}`;
    const token = await sign({ gid: grant });
    const auth = await verify(token);
    expect(auth?.grantId).toBe(grant);
    await revoke([{ kind: 'grant', value: grant, expiresAt: inMinutes(15) }]);
    await revokedIn(revocations, auth!);
    await expectAppError(verify(token), 'UNAUTHENTICATED');
    await expectAppError(verify(await sign({ gid: grant })), 'UNAUTHENTICATED');
    expect(await verify(await sign({ gid: `grant-${randomUUID()}` }))).not.toBeNull();
    const otherGrant = await sign({ gid: `grant-${randomUUID()}` });
    const member = (await verify(otherGrant))!;
    await revoke([{ kind: 'subject', value: subjectKey(tenantId, 'member-1'), expiresAt: inMinutes(15) }]);
    await revokedIn(revocations, member);
    await expectAppError(verify(otherGrant), 'UNAUTHENTICATED');
    await expectAppError(verify(await sign({})), 'UNAUTHENTICATED');
  });
});

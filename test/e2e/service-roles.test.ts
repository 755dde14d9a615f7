/**
 * Least privilege in the database (runtime README, "Database roles"): every service connects as its own role, and no role can reach
 * another service's tables or functions; the private signing keys are stored sealed (envelope encryption with a
 * key-encryption key from the environment), so not even a role that may read them, a dump or a backup holds a key.
 *
 * What was reported: all four subgraphs connected as one role, which could call identity's definer functions that
 * return private signing keys and password hashes, so a memory bug could mint an OWNER token for any tenant.
 * Checked here on a database with every migration, as each service's role (PGlite; PostgreSQL when DATABASE_URL is
 * set, where each role logs in on its own).
 */
import {
  bootstrapTenant,
  issueAccessToken,
  publishedJwks,
  sealStoredSigningKeys,
} from '@agentgraph/identity';
import { sealStoredIntentKeys, ensureIntentKeys } from '@agentgraph/coordination';
import { sealStoredCatalogKeys } from '@agentgraph/catalog';
import {
  createTokenVerifier,
  keyVault,
  KeyVault,
  loadConfig,
  openDatabase,
  serviceRole,
  SERVICES,
  withTenant,
  type Config,
  type Database,
  type DatabaseHandle,
  type Service,
} from '@agentgraph/runtime';
import { createLocalJWKSet, exportJWK, generateKeyPair, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SUBGRAPH_MODULES } from '../../gateway/src/platform.js';
import { issuerKeys } from '../../subgraphs/identity/src/keys.js';
import { openRepository, DEFAULT_TUF_SETTINGS } from '../../subgraphs/catalog/src/tuf/repository.js';
import { activeTufKeys } from '../../subgraphs/catalog/src/tuf/keys.js';
import { provisionTestDatabase, type TestDatabase } from '../src/database.js';

const SCHEMAS = ['identity', 'memory', 'coordination', 'catalog'] as const;
const PERMISSION = /permission denied/i;

let testDb: TestDatabase;
let handle: DatabaseHandle;
let config: Config;
let dbs: Record<Service, Database>;
/** The shared app role's own connections (the runtime's tables only). */
let app: Database;

beforeAll(async () => {
  testDb = await provisionTestDatabase();
  config = loadConfig({ ...testDb.env, LOG_LEVEL: 'error' });
  ({ handle, db: app } = await openDatabase(
    config,
    SUBGRAPH_MODULES.map((m) => m.migrations),
  ));
  dbs = Object.fromEntries(
    await Promise.all(SERVICES.map(async (s) => [s, await handle.app(s)] as const)),
  ) as Record<Service, Database>;
});
afterAll(async () => {
  await handle?.close();
  await testDb?.drop();
});

/** Every role but the one that owns `schema`: the other services', the gateway's and the shared app role. */
function outsiders(schema: (typeof SCHEMAS)[number]): Array<[string, Database]> {
  return [
    ...SERVICES.filter((s) => s !== schema).map((s) => [s, dbs[s]] as [string, Database]),
    ['app', app],
  ];
}

describe('one role per service', () => {
  it('runs each service as its own role', async () => {
    for (const s of SERVICES) {
      const { rows } = await dbs[s].query<{ who: string }>('SELECT current_user::text AS who');
      expect({ s, who: rows[0]!.who }).toEqual({ s, who: serviceRole(config.appRole, s) });
    }
  });

  it("grants no role a privilege on another service's schema, tables or functions (from the catalog)", async () => {
    const roles = [config.appRole, ...SERVICES.map((s) => serviceRole(config.appRole, s))];
    const { rows } = await handle.owner.query<{ role: string; schema: string; what: string }>(
      `SELECT r.role, n.nspname AS schema, 'USAGE' AS what
         FROM unnest($1::text[]) r(role), pg_namespace n
        WHERE n.nspname = ANY($2::text[]) AND has_schema_privilege(r.role, n.oid, 'USAGE')
          AND r.role <> $3 || '_' || n.nspname
       UNION ALL
       SELECT r.role, n.nspname, 'table ' || c.relname
         FROM unnest($1::text[]) r(role), pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = ANY($2::text[]) AND r.role <> $3 || '_' || n.nspname
          AND (has_table_privilege(r.role, c.oid, 'SELECT') OR has_table_privilege(r.role, c.oid, 'INSERT')
               OR has_table_privilege(r.role, c.oid, 'UPDATE') OR has_table_privilege(r.role, c.oid, 'DELETE'))
       UNION ALL
       SELECT r.role, n.nspname, 'function ' || p.oid::regprocedure::text
         FROM unnest($1::text[]) r(role), pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname = ANY($2::text[]) AND r.role <> $3 || '_' || n.nspname
          AND has_function_privilege(r.role, p.oid, 'EXECUTE') AND has_schema_privilege(r.role, n.oid, 'USAGE')`,
      [roles, SCHEMAS, config.appRole],
    );
    expect(rows).toEqual([]);
    // The catalog check reads what it should: each service does hold its own.
    for (const schema of SCHEMAS) {
      const own = await handle.owner.query<{ ok: boolean }>(
        `SELECT has_schema_privilege($1, n.oid, 'USAGE') AS ok FROM pg_namespace n WHERE n.nspname = $2`,
        [serviceRole(config.appRole, schema), schema],
      );
      expect({ schema, ok: own.rows[0]!.ok }).toEqual({ schema, ok: true });
    }
  });

  it("refuses identity's key, password and cross-tenant functions to every other role, when called", async () => {
    const calls = [
      'SELECT * FROM identity.active_signing_key()',
      'SELECT * FROM identity.issuer_signing_keys()',
      "SELECT * FROM identity.user_for_sign_in('owner@acme.test')",
      "SELECT * FROM identity.memberships_by_email('owner@acme.test')",
      "SELECT * FROM identity.bootstrap_tenant('Evil', 'evil@evil.test', 'Evil')",
      "SELECT identity.upgrade_password_hash(gen_random_uuid(), 'a', 'b')",
      'SELECT * FROM identity.signing_keys',
      'SELECT password_hash FROM identity.users',
    ];
    for (const [who, db] of outsiders('identity')) {
      for (const sql of calls) await expect(db.query(sql), `${who}: ${sql}`).rejects.toThrow(PERMISSION);
    }
  });

  it("refuses coordination's and the catalog's keys and cross-tenant functions to every other role", async () => {
    for (const [who, db] of outsiders('coordination')) {
      for (const sql of [
        'SELECT * FROM coordination.active_intent_key()',
        "SELECT coordination.intent_keys_to_seal('x')",
        'SELECT * FROM coordination.intent_signing_keys',
      ])
        await expect(db.query(sql), `${who}: ${sql}`).rejects.toThrow(PERMISSION);
    }
    for (const [who, db] of outsiders('catalog')) {
      for (const sql of [
        "SELECT * FROM catalog.signing_keys_to_seal('x', 10)",
        'SELECT private_key FROM catalog.signing_keys',
        'SELECT * FROM catalog.tuf_repositories_due(now(), 10)',
      ])
        await expect(db.query(sql), `${who}: ${sql}`).rejects.toThrow(PERMISSION);
    }
    for (const [who, db] of outsiders('memory')) {
      await expect(db.query('SELECT * FROM memory.records'), who).rejects.toThrow(PERMISSION);
    }
  });

  it("keeps tenant creation with the operator: identity's own role cannot bootstrap a tenant or an owner", async () => {
    for (const sql of [
      "SELECT * FROM identity.bootstrap_tenant('Evil', 'evil@evil.test', 'Evil')",
      "SELECT identity.set_development_password('scrypt$x')",
    ])
      await expect(dbs.identity.query(sql), sql).rejects.toThrow(PERMISSION);
  });

  it('lets only identity write the revocation list; every service and the gateway read it', async () => {
    const insert = `INSERT INTO runtime.token_revocations (kind, value, expires_at) VALUES ('jti', 'x', now())`;
    for (const who of ['memory', 'coordination', 'catalog', 'gateway'] as const) {
      await expect(dbs[who].query(insert), who).rejects.toThrow(PERMISSION);
      await dbs[who].query('SELECT count(*) FROM runtime.token_revocations');
    }
    await expect(app.query(insert)).rejects.toThrow(PERMISSION);
    await dbs.identity.transaction((tx) => tx.query(insert));
    // The gateway reads the list and nothing else of the runtime's.
    await expect(dbs.gateway.query('SELECT * FROM runtime.idempotency_keys')).rejects.toThrow(PERMISSION);
  });

  it("cannot mint a token as memory: the signing key is identity's (the reported exploit)", async () => {
    const owner = await bootstrapTenant(handle.owner, {
      tenantName: 'Acme',
      email: 'owner@acme.test',
      displayName: 'Owner',
    });
    const subject = {
      tenantId: owner.tenantId,
      userId: owner.userId,
      role: 'OWNER' as const,
      scopes: ['api:read'],
    };
    await expect(issueAccessToken(dbs.memory, config, subject)).rejects.toThrow(PERMISSION);
    // Identity itself still signs (with the key it opens from the sealed row).
    expect((await issueAccessToken(dbs.identity, config, subject)).split('.')).toHaveLength(3);
  });
});

describe('private keys stored sealed', () => {
  const rawIdentityKeys = async () =>
    (
      await handle.owner.query<{ kid: string; private_jwk: Record<string, unknown> }>(
        `SELECT kid, private_jwk FROM identity.signing_keys
         UNION ALL SELECT kid, private_jwk FROM identity.pending_signing_keys`,
      )
    ).rows;

  it("holds identity's, coordination's and the catalog's private keys as ciphertext only", async () => {
    const vault = keyVault(config);
    await issuerKeys(dbs.identity, vault); // the issuer's keys exist once a token was issued (above) or here
    await ensureIntentKeys(dbs.coordination, vault);
    const tenant = await bootstrapTenant(handle.owner, {
      tenantName: 'Sealco',
      email: 'owner@sealco.test',
      displayName: 'Owner',
    });
    const auth = {
      tenantId: tenant.tenantId,
      principalId: tenant.userId,
      role: 'OWNER' as const,
      scopes: [],
    };
    await withTenant(dbs.catalog, auth, (tx) =>
      openRepository(tx, tenant.tenantId, new Date(), DEFAULT_TUF_SETTINGS, vault),
    );
    const identityRows = await rawIdentityKeys();
    const intentRows = (
      await handle.owner.query<{ private_jwk: Record<string, unknown> }>(
        'SELECT private_jwk FROM coordination.intent_signing_keys',
      )
    ).rows.map((r) => r.private_jwk);
    const catalogRows = (
      await handle.owner.query<{ private_key: string }>('SELECT private_key FROM catalog.signing_keys')
    ).rows.map((r) => JSON.parse(r.private_key) as Record<string, unknown>);
    expect(identityRows.length).toBeGreaterThanOrEqual(1);
    expect(intentRows.length).toBe(2);
    expect(catalogRows.length).toBeGreaterThanOrEqual(7);
    for (const sealed of [...identityRows.map((r) => r.private_jwk), ...intentRows, ...catalogRows]) {
      expect(sealed).toMatchObject({ sealed: 1, kek: vault.activeId });
      expect(JSON.stringify(sealed)).not.toMatch(/"d"|PRIVATE KEY/);
    }
    // What the catalog signs with opens from them.
    const keys = await withTenant(dbs.catalog, auth, (tx) => activeTufKeys(tx, vault));
    expect([...keys.keys()].sort()).toEqual([
      'alpha',
      'beta',
      'root',
      'snapshot',
      'stable',
      'targets',
      'timestamp',
    ]);
  });

  it('refuses, in the database, a private key written unsealed (even by the owner)', async () => {
    const { privateKey } = await generateKeyPair('ES256', { extractable: true });
    const plain = JSON.stringify(await exportJWK(privateKey));
    await expect(
      handle.owner.query(
        `INSERT INTO identity.signing_keys (kid, public_jwk, private_jwk, retired_at)
         VALUES ('plain', '{}', $1::text::jsonb, now())`,
        [plain],
      ),
    ).rejects.toThrow(/signing_keys_private_sealed/);
    await expect(
      handle.owner.query(
        `INSERT INTO coordination.intent_signing_keys (kid, state, public_jwk, private_jwk)
         VALUES ('plain', 'retired', '{}', $1::text::jsonb)`,
        [plain],
      ),
    ).rejects.toThrow(/intent_signing_keys_private_sealed/);
    await expect(
      handle.owner.query(
        `INSERT INTO catalog.signing_keys (tenant_id, key_id, role, algorithm, public_key, private_key)
         VALUES (gen_random_uuid(), 'plain', 'root', 'ed25519', 'x', '-----BEGIN PRIVATE KEY-----')`,
      ),
    ).rejects.toThrow(/signing_keys_private_sealed/);
  });

  it('seals keys stored before encryption when the service starts, and they sign as before', async () => {
    const vault = keyVault(config);
    // A key as the previous version stored it: a plain JWK (the constraint admits old rows: NOT VALID).
    const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
    const legacy: JWK = { ...(await exportJWK(privateKey)), kid: 'legacy', alg: 'ES256', use: 'sig' };
    await handle.owner.transaction(async (tx) => {
      await tx.query(
        'ALTER TABLE identity.pending_signing_keys DROP CONSTRAINT pending_signing_keys_private_sealed',
      );
      await tx.query('DELETE FROM identity.pending_signing_keys');
      await tx.query(
        `INSERT INTO identity.pending_signing_keys (kid, public_jwk, private_jwk) VALUES ('legacy', $1::text::jsonb, $2::text::jsonb)`,
        [JSON.stringify(await exportJWK(publicKey)), JSON.stringify(legacy)],
      );
      await tx.query(
        `ALTER TABLE identity.pending_signing_keys ADD CONSTRAINT pending_signing_keys_private_sealed
           CHECK (private_jwk ? 'sealed' AND NOT private_jwk ? 'd') NOT VALID`,
      );
    });
    // Unsealed, it is refused rather than used.
    await expect(issuerKeys(dbs.identity, vault)).rejects.toThrow(/not encrypted/);
    expect(await sealStoredSigningKeys(dbs.identity, vault)).toBe(1);
    expect(await sealStoredSigningKeys(dbs.identity, vault)).toBe(0);
    const pending = (await issuerKeys(dbs.identity, vault)).find((k) => k.kid === 'legacy');
    expect(pending?.privateJwk.d).toBe(legacy.d);
    expect((await rawIdentityKeys()).find((r) => r.kid === 'legacy')?.private_jwk).toMatchObject({
      sealed: 1,
      kek: vault.activeId,
    });
  });

  it('re-seals under a new key-encryption key (rotation), after which the old one can go', async () => {
    const old = keyVault(config);
    const next = Buffer.alloc(32, 42);
    const rotated = new KeyVault([next, ...config.keyEncryptionKeys]);
    const before = await issuerKeys(dbs.identity, old);
    const identitySealed = await sealStoredSigningKeys(dbs.identity, rotated);
    const intentSealed = await sealStoredIntentKeys(dbs.coordination, rotated);
    const catalogSealed = await sealStoredCatalogKeys(dbs.catalog, rotated, 3);
    expect(identitySealed).toBe((await rawIdentityKeys()).length);
    expect(intentSealed).toBe(2);
    expect(catalogSealed).toBeGreaterThanOrEqual(7);
    const onlyNext = new KeyVault([next]);
    expect((await issuerKeys(dbs.identity, onlyNext)).map((k) => k.privateJwk.d)).toEqual(
      before.map((k) => k.privateJwk.d),
    );
    // Under the old key alone nothing opens, and the error names the key it needs (never a key's bytes).
    await expect(issuerKeys(dbs.identity, old)).rejects.toThrow(onlyNext.activeId);
    // A token signed after the rotation verifies against the published keys, as before.
    const tenant = await bootstrapTenant(handle.owner, {
      tenantName: 'Rotaco',
      email: 'owner@rotaco.test',
      displayName: 'Owner',
    });
    const token = await issueAccessToken(
      dbs.identity,
      { ...config, keyEncryptionKeys: [next] },
      { tenantId: tenant.tenantId, userId: tenant.userId, role: 'OWNER', scopes: ['api:read'] },
    );
    const verify = createTokenVerifier({
      issuer: config.tokenIssuer,
      audience: config.tokenAudience,
      keys: createLocalJWKSet(await publishedJwks(dbs.identity)),
    });
    expect((await verify(`Bearer ${token}`))?.tenantId).toBe(tenant.tenantId);
  });

  it('does not open a sealed key copied onto another key (bound to its id)', async () => {
    const vault = new KeyVault([Buffer.alloc(32, 42)]);
    await handle.owner.query(
      `UPDATE identity.pending_signing_keys SET private_jwk = (SELECT private_jwk FROM identity.signing_keys WHERE retired_at IS NULL)`,
    );
    await expect(issuerKeys(dbs.identity, vault)).rejects.toThrow(/does not decrypt/);
  });
});

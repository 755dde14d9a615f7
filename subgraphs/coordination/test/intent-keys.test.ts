/** Intent signing keys on a real database: active + pending published, rotation, private halves never out. */
import {
  keyVault,
  openDatabase,
  loadConfig,
  type Database,
  type DatabaseHandle,
  type KeyVault,
} from '@agentgraph/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { provisionTestDatabase, type TestDatabase } from '../../../test/src/database.js';
import { coordinationSubgraph } from '../src/index.js';
import {
  activeIntentKey,
  ensureIntentKeys,
  publishedIntentJwks,
  rotateIntentKey,
} from '../src/intents/keys.js';

let testDb: TestDatabase;
let db: Database;
let handle: DatabaseHandle;
let vault: KeyVault;

beforeAll(async () => {
  testDb = await provisionTestDatabase();
  const config = loadConfig({ ...testDb.env, LOG_LEVEL: 'error' });
  vault = keyVault(config);
  ({ db, handle } = await openDatabase(config, [coordinationSubgraph.migrations], 'coordination'));
});
afterAll(async () => {
  await handle?.close();
  await testDb?.drop();
});

describe('intent signing keys', () => {
  it('keeps one active and one pending key across concurrent starts, publishes both, rotates', async () => {
    await Promise.all([
      ensureIntentKeys(db, vault),
      ensureIntentKeys(db, vault),
      ensureIntentKeys(db, vault),
    ]);
    const before = await publishedIntentJwks(db);
    expect(before.keys).toHaveLength(2);
    for (const k of before.keys) {
      expect(k).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig' });
      expect(k).not.toHaveProperty('d');
    }
    const active = await activeIntentKey(db, vault, 0);
    expect(before.keys.map((k) => k.kid)).toContain(active.kid);
    const pending = before.keys.find((k) => k.kid !== active.kid)!.kid;

    // Too young to rotate: nothing changes.
    expect(await rotateIntentKey(db, vault, 3600)).toBe(active.kid);
    // Rotation promotes the pending key, retires the active one (still published) and adds a new pending key.
    expect(await rotateIntentKey(db, vault, 0)).toBe(pending);
    const after = await publishedIntentJwks(db);
    expect(after.keys.map((k) => k.kid)).toEqual(expect.arrayContaining([active.kid, pending]));
    expect(after.keys).toHaveLength(3);
    // Stored sealed: the owner (a dump, a backup) sees ciphertext, never the private scalar.
    const raw = await handle.owner.query<{ private_jwk: Record<string, unknown> }>(
      'SELECT private_jwk FROM coordination.intent_signing_keys',
    );
    expect(raw.rows).toHaveLength(3);
    for (const r of raw.rows) {
      expect(r.private_jwk).toMatchObject({ sealed: 1, kek: vault.activeId });
      expect(r.private_jwk).not.toHaveProperty('d');
    }
    // The service's role cannot read the key table itself.
    await expect(db.query('SELECT * FROM coordination.intent_signing_keys')).rejects.toThrow(
      /permission denied/,
    );
  });
});

/** Intent signing keys on a real database: active + pending published, rotation, private halves never out. */
import { openDatabase, loadConfig, type Database, type DatabaseHandle } from '@agentgraph/runtime';
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

beforeAll(async () => {
  testDb = await provisionTestDatabase();
  ({ db, handle } = await openDatabase(loadConfig({ ...testDb.env, LOG_LEVEL: 'error' }), [
    coordinationSubgraph.migrations,
  ]));
});
afterAll(async () => {
  await handle?.close();
  await testDb?.drop();
});

describe('intent signing keys', () => {
  it('keeps one active and one pending key across concurrent starts, publishes both, rotates', async () => {
    await Promise.all([ensureIntentKeys(db), ensureIntentKeys(db), ensureIntentKeys(db)]);
    const before = await publishedIntentJwks(db);
    expect(before.keys).toHaveLength(2);
    for (const k of before.keys) {
      expect(k).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig' });
      expect(k).not.toHaveProperty('d');
    }
    const active = await activeIntentKey(db, 0);
    expect(before.keys.map((k) => k.kid)).toContain(active.kid);
    const pending = before.keys.find((k) => k.kid !== active.kid)!.kid;

    // Too young to rotate: nothing changes.
    expect(await rotateIntentKey(db, 3600)).toBe(active.kid);
    // Rotation promotes the pending key, retires the active one (still published) and adds a new pending key.
    expect(await rotateIntentKey(db, 0)).toBe(pending);
    const after = await publishedIntentJwks(db);
    expect(after.keys.map((k) => k.kid)).toEqual(expect.arrayContaining([active.kid, pending]));
    expect(after.keys).toHaveLength(3);
    // The app role cannot read the key table itself.
    await expect(db.query('SELECT * FROM coordination.intent_signing_keys')).rejects.toThrow(
      /permission denied/,
    );
  });
});

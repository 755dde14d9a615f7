/**
 * A replica's cached view of the emergency stops (emergency/watch.ts) when the notification is late: PostgreSQL
 * delivers NOTIFY to listeners asynchronously after commit, so a stream opened right after a lift on another
 * replica could be refused on stale news. `refresh()` (which the stream guard calls before refusing) must answer
 * with a read that began after it was asked, reads must not pile up, and a tightened answer must end streams.
 * PGlite or PostgreSQL; the notifications are withheld here to make the late case certain.
 */
import { randomUUID } from 'node:crypto';
import { createLogger, withTenant, type AuthContext, type Database } from '@agentgraph/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEmergencyWatch } from '../src/emergency/watch.js';
import { engageStop, liftStop } from '../src/emergency/store.js';
import { startHarness, type Harness } from './harness.js';

let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});

afterAll(async () => {
  await h?.close();
});

/** The app database with notifications withheld and every watch read counted; `hold()` delays read answers. */
function quietDatabase(db: Database) {
  let gate: Promise<void> | null = null;
  let open = () => undefined as void;
  const state = { reads: 0 };
  const quiet: Database = {
    driver: db.driver,
    async query(sql, params) {
      state.reads += 1;
      const r = await db.query(sql, params);
      await gate;
      return r as never;
    },
    transaction: (fn, settings) => db.transaction(fn, settings),
    listen: async () => async () => undefined,
    ping: () => db.ping(),
    close: async () => undefined,
  };
  return {
    db: quiet,
    state,
    hold() {
      gate = new Promise((resolve) => (open = resolve));
    },
    release() {
      gate = null;
      open();
    },
  };
}

const admin = (tenantId: string): AuthContext => ({
  tenantId,
  principalId: randomUUID(),
  role: 'ADMIN',
  scopes: ['api:read', 'api:write'],
});

function change(a: AuthContext) {
  return { tenantId: a.tenantId, actor: a.principalId, at: new Date(), origin: { correlationId: 'c-1' } };
}

describe('emergency watch without its notifications', () => {
  it('answers a refresh with a read begun after it, so a lift elsewhere is seen before a refusal', async () => {
    const a = admin(randomUUID());
    const q = quietDatabase(h.db);
    const watch = createEmergencyWatch({
      db: q.db,
      log: createLogger({ level: 'error' }),
      refreshMs: 3_600_000,
    });
    await watch.ready;
    let tightened = 0;
    watch.subscribe(() => (tightened += 1));
    expect(watch.check(a)).toBeNull();

    await withTenant(h.db, a, (tx) => engageStop(tx, { ...change(a), reason: 'test' }));
    expect(watch.check(a)).toBeNull(); // no notification: the cache cannot know yet
    await watch.refresh!();
    expect(watch.check(a)?.code).toBe('EMERGENCY_STOP');
    expect(tightened).toBe(1);

    // A read is in flight (it saw the stop engaged) when the stop is lifted on "another replica".
    q.hold();
    const reads = q.state.reads;
    const inFlight = watch.refresh!();
    await new Promise((resolve) => setTimeout(resolve, 50));
    await withTenant(h.db, a, (tx) => liftStop(tx, change(a)));
    // Refreshes asked for now share one read after the one in flight, not one each.
    const after = [watch.refresh!(), watch.refresh!(), watch.refresh!()];
    q.release();
    await inFlight;
    await Promise.all(after);
    expect(q.state.reads - reads).toBe(2);
    expect(watch.check(a)).toBeNull();
    expect(tightened).toBe(1); // a lift ends nothing
    await watch.close();
  });
});

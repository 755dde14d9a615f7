/**
 * The room check under concurrent posters: 8 concurrent posters × 500 messages into one room through the gateway. Sequences are
 * 1..4000 without a gap or a duplicate, each poster's messages keep its own order, and posting again with the same
 * idempotency keys (a client retrying after lost responses) adds nothing.
 */
import { randomUUID } from 'node:crypto';
import { withTenant } from '@agentgraph/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestPlatform, type TestPlatform, type TestUser } from '../src/platform.js';

const POSTERS = 8;
const EACH = 500;

let p: TestPlatform;
let user: TestUser;
beforeAll(async () => {
  p = await startTestPlatform({
    // An ordering test under volume, not a rate-limit test (test/e2e/rate-limits.test.ts is that).
    RATE_LIMIT_POST_PRINCIPAL: 'off',
    RATE_LIMIT_POST_TENANT: 'off',
  });
  user = await p.tokenFor({ tenant: 'posters' });
});
afterAll(async () => {
  await p?.close();
});

const POST =
  'mutation P($r: ID!, $b: String!, $k: ID!) { postMessage(roomId: $r, input: { body: $b }, idempotencyKey: $k) { message { seq } } }';

describe('concurrent posters', () => {
  it(`${POSTERS} × ${EACH} messages get sequences 1..${POSTERS * EACH}, in order per poster; replays add nothing`, async () => {
    const created = await p.gql(
      'mutation R($k: ID!) { createRoom(input: { name: "busy" }, idempotencyKey: $k) { room { id } } }',
      { k: randomUUID() },
      user.token,
    );
    const room = created.data.createRoom.room.id as string;
    const keys = Array.from({ length: POSTERS }, () => Array.from({ length: EACH }, () => randomUUID()));

    await Promise.all(
      keys.map(async (own, poster) => {
        for (let i = 0; i < EACH; i++) {
          const r = await p.gql(POST, { r: room, b: `p${poster}-${i}`, k: own[i] }, user.token);
          expect(r.errors).toBeUndefined();
        }
      }),
    );

    // A client that lost responses sends some posts again with their keys: the stored results come back.
    for (let poster = 0; poster < POSTERS; poster++) {
      for (const i of [0, 250, EACH - 1]) {
        const again = await p.gql(POST, { r: room, b: `p${poster}-${i}`, k: keys[poster]![i] }, user.token);
        expect(again.errors).toBeUndefined();
        expect(again.extensions?.['idempotentReplay']).toBe(true);
      }
    }

    const auth = { tenantId: user.tenantId, principalId: user.userId, role: 'OWNER' as const, scopes: [] };
    const rows = await withTenant(p.platform.dbs.coordination, auth, (tx) =>
      tx.query<{ seq: number; body: string }>(
        'SELECT seq, body FROM coordination.messages WHERE room_id = $1 ORDER BY seq',
        [room],
      ),
    );
    expect(rows.rows.map((r) => r.seq)).toEqual(Array.from({ length: POSTERS * EACH }, (_, i) => i + 1));
    for (let poster = 0; poster < POSTERS; poster++) {
      const mine = rows.rows.filter((r) => r.body.startsWith(`p${poster}-`)).map((r) => r.body);
      expect(mine).toEqual(Array.from({ length: EACH }, (_, i) => `p${poster}-${i}`));
    }
  }, 300_000);
});

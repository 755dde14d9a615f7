/**
 * A live subscription ends when its token is revoked: the subgraph sends a last UNAUTHENTICATED event through the
 * gateway and completes the stream, within the revocation list's propagation (the requirement is 1 s), instead of
 * streaming to a revoked device or member until the client disconnects.
 */
import { randomUUID } from 'node:crypto';
import { decodeJwt } from 'jose';
import { revokeTokens } from '@agentgraph/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestPlatform, type TestPlatform, type TestUser } from '../src/platform.js';
import { subscribe } from '../src/sse.js';

let p: TestPlatform;
let alice: TestUser;

beforeAll(async () => {
  p = await startTestPlatform();
  alice = await p.tokenFor({ tenant: 'revoked-streams' });
});
afterAll(async () => {
  await p?.close();
});

const STREAM =
  'subscription S($room: ID!, $after: Int) { roomMessages(roomId: $room, afterSeq: $after) { seq body } }';

describe('streams and revocation', () => {
  it('ends a live stream with UNAUTHENTICATED once its token is revoked', async () => {
    const created = await p.gql(
      'mutation R($k: ID!) { createRoom(input: { name: "watched" }, idempotencyKey: $k) { room { id } } }',
      { k: randomUUID() },
      alice.token,
    );
    const room = created.data.createRoom.room.id as string;
    const bob = await p.tokenFor({ tenant: 'revoked-streams' }); // same member, a second token
    const s = subscribe<{ roomMessages: { seq: number } }>(
      `${p.gatewayUrl}/graphql/stream`,
      bob.token,
      STREAM,
      {
        room,
        after: 0,
      },
    );
    const other = subscribe<{ roomMessages: { seq: number } }>(
      `${p.gatewayUrl}/graphql/stream`,
      alice.token,
      STREAM,
      { room, after: 0 },
    );
    try {
      await p.gql(
        'mutation P($r: ID!, $k: ID!) { postMessage(roomId: $r, input: { body: "hello" }, idempotencyKey: $k) { message { seq } } }',
        { r: room, k: randomUUID() },
        alice.token,
      );
      expect((await s.next()).data?.roomMessages.seq).toBe(1);
      expect((await other.next()).data?.roomMessages.seq).toBe(1);

      const { jti, exp } = decodeJwt(bob.token);
      const started = Date.now();
      await p.platform.dbs.identity.transaction((tx) =>
        revokeTokens(tx, [{ kind: 'jti', value: jti!, expiresAt: new Date(exp! * 1000) }]),
      );
      const last = await s.next();
      const elapsed = Date.now() - started;
      expect(last.errors?.[0]?.extensions?.['code']).toBe('UNAUTHENTICATED');
      expect(last.errors?.[0]?.message).toContain('revoked');
      await s.ended;
      expect(elapsed).toBeLessThan(1000);
      console.log(`stream ended ${elapsed} ms after the revocation committed`);

      // The other token's stream goes on.
      await p.gql(
        'mutation P($r: ID!, $k: ID!) { postMessage(roomId: $r, input: { body: "still here" }, idempotencyKey: $k) { message { seq } } }',
        { r: room, k: randomUUID() },
        alice.token,
      );
      expect((await other.next()).data?.roomMessages.seq).toBe(2);
    } finally {
      s.dispose();
      other.dispose();
    }
  });
});

/**
 * Subscription.roomMessages over real SSE with the graphql-sse client: backlog after a resume point, then live
 * messages, in order with no gap and no duplicate; refusal across tenants; listener release on disconnect; and a
 * clean end when the server shuts down. Every wait awaits an event (no sleeps).
 */
import { createClient, type Client, type ExecutionResult } from 'graphql-sse';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createRoom, post, startHarness, type Caller, type Harness } from './harness.js';

const ROOM_MESSAGES = /* GraphQL */ `
  subscription RoomMessages($roomId: ID!, $afterSeq: Int) {
    roomMessages(roomId: $roomId, afterSeq: $afterSeq) {
      id
      seq
      body
      author {
        id
      }
      room {
        id
      }
    }
  }
`;

interface StreamedMessage {
  id: string;
  seq: number;
  body: string;
  author: { id: string };
  room: { id: string };
}

type Result = ExecutionResult<{ roomMessages: StreamedMessage }, Record<string, unknown>>;

/** One subscription: what arrived, how it ended, and promises that resolve on events. */
class Subscription {
  readonly results: Result[] = [];
  ended: 'complete' | 'error' | null = null;
  error: unknown = null;
  private waiters: (() => void)[] = [];
  readonly dispose: () => void;

  constructor(client: Client, variables: Record<string, unknown>) {
    this.dispose = client.subscribe<Result['data']>(
      { query: ROOM_MESSAGES, variables },
      {
        next: (r) => this.push(() => this.results.push(r as Result)),
        complete: () => this.push(() => (this.ended = 'complete')),
        error: (e) => this.push(() => ((this.ended = 'error'), (this.error = e))),
      },
    );
  }

  private push(change: () => void) {
    change();
    for (const w of this.waiters.splice(0)) w();
  }

  seqs(): number[] {
    return this.results.map((r) => r.data?.roomMessages.seq ?? -1);
  }

  /** Resolves when `done()` holds; rejects if the stream ends first. */
  until(done: () => boolean, what: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (done()) return resolve();
        if (this.ended) {
          return reject(
            new Error(
              `stream ended (${this.ended}: ${String(this.error)}) before ${what}; got ${JSON.stringify(this.results)}`,
            ),
          );
        }
        this.waiters.push(check);
      };
      check();
    });
  }

  ends(): Promise<void> {
    return new Promise((resolve) => {
      const check = () => (this.ended ? resolve() : this.waiters.push(check));
      check();
    });
  }
}

let h: Harness;
let alice: Caller;
const clients: Client[] = [];

function clientFor(caller: Caller): Client {
  const client = createClient({
    url: `${h.url}/graphql/stream`,
    headers: { Authorization: `Bearer ${caller.token}` },
    // An unclean end must surface as an error, not a silent reconnect.
    retryAttempts: 0,
  });
  clients.push(client);
  return client;
}

beforeAll(async () => {
  h = await startHarness();
  alice = await h.caller({ role: 'OPERATOR' });
});
afterEach(() => {
  for (const c of clients.splice(0)) c.dispose();
});
afterAll(async () => {
  await h?.close();
});

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('roomMessages subscription', () => {
  it('replays the backlog after afterSeq, then streams live posts in exact order with no gap or duplicate', async () => {
    const room = await createRoom(h, alice, 'live');
    for (let i = 1; i <= 5; i++) await post(h, alice, room, `before-${i}`);

    const sub = new Subscription(clientFor(alice), { roomId: room, afterSeq: 2 });
    await sub.until(() => sub.results.length >= 3, 'the backlog 3..5');
    expect(sub.seqs()).toEqual([3, 4, 5]);
    expect(sub.results.map((r) => r.data?.roomMessages.body)).toEqual(['before-3', 'before-4', 'before-5']);

    // Live: ten concurrent posts while connected.
    const posted = await Promise.all(range(1, 10).map((i) => post(h, alice, room, `live-${i}`)));
    await sub.until(() => sub.results.length >= 13, 'the live messages 6..15');
    expect(sub.seqs()).toEqual(range(3, 15));
    expect(sub.results.every((r) => r.errors === undefined)).toBe(true);
    const bodyBySeq = new Map(posted.map((m) => [m.seq, m.body]));
    for (const r of sub.results.slice(3)) {
      const m = r.data!.roomMessages;
      expect(m.body).toBe(bodyBySeq.get(m.seq));
      expect(m.author).toEqual({ id: alice.sub });
      expect(m.room).toEqual({ id: room });
    }
    expect(sub.ended).toBeNull();
  });

  it('without afterSeq streams only messages posted after it subscribed', async () => {
    const room = await createRoom(h, alice, 'live-only');
    await post(h, alice, room, 'old-1');
    await post(h, alice, room, 'old-2');
    let connected!: () => void;
    const isConnected = new Promise<void>((r) => (connected = r));
    const client = createClient({
      url: `${h.url}/graphql/stream`,
      headers: { Authorization: `Bearer ${alice.token}` },
      retryAttempts: 0,
      on: { connected: () => connected() },
    });
    clients.push(client);
    const sub = new Subscription(client, { roomId: room });
    await isConnected;
    await post(h, alice, room, 'new-3');
    await sub.until(() => sub.results.length >= 1, 'the first live message');
    expect(sub.seqs()).toEqual([3]);
    expect(sub.results[0]!.data?.roomMessages.body).toBe('new-3');
  });

  it('delivers to several subscribers of one room and nothing from other rooms or tenants', async () => {
    const room = await createRoom(h, alice, 'fan-out');
    const other = await createRoom(h, alice, 'elsewhere');
    const mallory = await h.caller();
    const malloryRoom = await createRoom(h, mallory, 'mallory');
    const subs = [1, 2, 3].map(() => new Subscription(clientFor(alice), { roomId: room, afterSeq: 0 }));
    await post(h, alice, other, 'not for you');
    await post(h, mallory, malloryRoom, 'not for you either');
    for (let i = 1; i <= 4; i++) await post(h, alice, room, `m${i}`);
    for (const s of subs) await s.until(() => s.results.length >= 4, 'four messages');
    for (const s of subs) expect(s.seqs()).toEqual([1, 2, 3, 4]);
  });

  it.runIf(process.env['DATABASE_URL'])(
    'fans out across servers through PostgreSQL NOTIFY (subscribe on one, post on another)',
    async () => {
      const replica = await h.startReplica();
      try {
        const room = await createRoom(h, alice, 'cross-process');
        const client = createClient({
          url: `${replica.url}/graphql/stream`,
          headers: { Authorization: `Bearer ${alice.token}` },
          retryAttempts: 0,
        });
        clients.push(client);
        await post(h, alice, room, 'from-a-1');
        const sub = new Subscription(client, { roomId: room, afterSeq: 0 });
        // Once the backlog has arrived the stream is live: what follows can only reach it through NOTIFY.
        await sub.until(() => sub.results.length >= 1, 'the backlog');
        await Promise.all(range(2, 5).map((i) => post(h, alice, room, `from-a-${i}`)));
        await sub.until(() => sub.results.length >= 5, 'four live messages posted on the other server');
        expect(sub.seqs()).toEqual(range(1, 5));
        client.dispose();
      } finally {
        await replica.close();
      }
    },
  );

  it("refuses another tenant's room with NOT_FOUND and a bad resume point with BAD_USER_INPUT", async () => {
    const room = await createRoom(h, alice, 'private');
    await post(h, alice, room, 'secret');
    const mallory = await h.caller({ role: 'OWNER' });
    const refused = new Subscription(clientFor(mallory), { roomId: room, afterSeq: 0 });
    await refused.ends();
    expect(refused.ended).toBe('complete');
    expect(refused.results).toHaveLength(1);
    expect(refused.results[0]!.data ?? null).toBeNull();
    expect(refused.results[0]!.errors?.[0]?.extensions?.['code']).toBe('NOT_FOUND');

    const ahead = new Subscription(clientFor(alice), { roomId: room, afterSeq: 99 });
    await ahead.ends();
    expect(ahead.results[0]!.errors?.[0]?.extensions?.['code']).toBe('BAD_USER_INPUT');

    const negative = new Subscription(clientFor(alice), { roomId: room, afterSeq: -1 });
    await negative.ends();
    expect(negative.results[0]!.errors?.[0]?.extensions?.['code']).toBe('BAD_USER_INPUT');

    const anonymous = createClient({ url: `${h.url}/graphql/stream`, retryAttempts: 0 });
    clients.push(anonymous);
    // No token: refused with 401 before the stream opens (the client sees a network error carrying the response).
    const unauthenticated = new Subscription(anonymous, { roomId: room });
    await unauthenticated.ends();
    expect(unauthenticated.ended).toBe('error');
    expect(unauthenticated.results).toHaveLength(0);
    expect((unauthenticated.error as { response?: Response }).response?.status).toBe(401);
  });

  it('releases its NOTIFY listener when the client disconnects', async () => {
    await h.listenersBecome(0);
    const room = await createRoom(h, alice, 'short-lived');
    const sub = new Subscription(clientFor(alice), { roomId: room, afterSeq: 0 });
    await post(h, alice, room, 'one');
    await sub.until(() => sub.results.length >= 1, 'the first message');
    expect(h.activeListeners()).toBe(1);
    sub.dispose();
    await h.listenersBecome(0);
    // The room stays quiet: release must not wait for another message to arrive.
    expect(h.activeListeners()).toBe(0);
  });

  it('ends cleanly when the server shuts down', async () => {
    const room = await createRoom(h, alice, 'shutdown');
    const sub = new Subscription(clientFor(alice), { roomId: room, afterSeq: 0 });
    await post(h, alice, room, 'last words');
    await sub.until(() => sub.results.length >= 1, 'a message');
    await h.closeServer();
    await sub.ends();
    expect(sub.ended).toBe('complete');
    expect(sub.error).toBeNull();
    expect(sub.seqs()).toEqual([1]);
    await h.listenersBecome(0);
    expect(h.errorLogs).toEqual([]);
  });
});

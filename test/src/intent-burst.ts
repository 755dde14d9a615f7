/**
 * The intent stream's resume check (docs/architecture.md#a-streams-path): `total` intents created by four concurrent creators while a device's stream is cut
 * at 20 points chosen by a seeded generator (mulberry32, so a failure replays exactly), each reconnect resuming
 * from the last seq received. Returns what the device received and how many connections it took; the caller
 * asserts (every seq exactly once, in order; 21 connections).
 */
import { mulberry32 } from '../fault-proxy/src/prng.js';
import { subscribe } from './sse.js';

export interface BurstOptions {
  total: number;
  cuts: number;
  /** Creates one intent for the device (through whichever gateway the test wants). */
  create(): Promise<void>;
  /** graphql-sse URL the device streams from (possibly another replica's gateway). */
  streamUrl: string;
  deviceToken: string;
  seed?: number;
}

const DEVICE_STREAM = 'subscription D($a: Int) { deviceIntents(afterSeq: $a) { seq } }';

export async function burstWithCuts(o: BurstOptions): Promise<{ received: number[]; connections: number }> {
  let next = 0;
  const creating = Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < o.total) {
        next++;
        await o.create();
      }
    }),
  );
  const random = mulberry32(o.seed ?? 0x1ce1);
  const cuts = new Set<number>();
  while (cuts.size < o.cuts) cuts.add(1 + Math.floor(random() * (o.total - 1)));
  const received: number[] = [];
  let last = 0;
  let connections = 0;
  while (received.length < o.total) {
    connections++;
    const s = subscribe<{ deviceIntents: { seq: number } }>(o.streamUrl, o.deviceToken, DEVICE_STREAM, {
      a: last,
    });
    try {
      while (received.length < o.total) {
        const event = await s.next();
        if (!event.data) throw new Error(`stream error: ${JSON.stringify(event.errors)}`);
        const seq = event.data.deviceIntents.seq;
        received.push(seq);
        last = seq;
        if (cuts.has(received.length)) break; // cut: drop the connection, resume from `last`
      }
    } finally {
      s.dispose();
    }
  }
  await creating;
  return { received, connections };
}

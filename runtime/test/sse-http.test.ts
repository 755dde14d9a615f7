/**
 * The graphql-sse adapter (src/sse-http.ts) over real HTTP on loopback: the events produced together leave in a few
 * socket writes (graphql-sse's own adapter made one write per event), in order; a reader that stops reading stops the
 * writing at the socket's buffer (no unbounded buffering) and gets everything once it reads again; a client that
 * leaves ends the source.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { GraphQLInt, GraphQLNonNull, GraphQLObjectType, GraphQLSchema, GraphQLString } from 'graphql';
import { afterEach, describe, expect, it } from 'vitest';
import { createSseHandler } from '../src/sse-http.js';

let sourceEnded = 0;

/** `burst(n, size)`: n events at once (each a string of `size` characters), then the end; `forever`: one per 5 ms. */
const schema = new GraphQLSchema({
  query: new GraphQLObjectType({ name: 'Query', fields: { ok: { type: GraphQLString } } }),
  subscription: new GraphQLObjectType({
    name: 'Subscription',
    fields: {
      burst: {
        type: new GraphQLNonNull(GraphQLString),
        args: { n: { type: new GraphQLNonNull(GraphQLInt) }, size: { type: GraphQLInt } },
        async *subscribe(_root, args: { n: number; size?: number }) {
          const pad = 'x'.repeat(args.size ?? 0);
          for (let i = 1; i <= args.n; i++) yield `${i}:${pad}`;
        },
        resolve: (v: unknown) => v,
      },
      forever: {
        type: new GraphQLNonNull(GraphQLInt),
        async *subscribe() {
          try {
            for (let i = 1; ; i++) {
              await new Promise((r) => setTimeout(r, 5));
              yield i;
            }
          } finally {
            sourceEnded++;
          }
        },
        resolve: (v: unknown) => v,
      },
    },
  }),
});

interface Served {
  url: URL;
  /** Writes that reached the server's sockets (`_write` and `_writev` calls). */
  socketWrites(): number;
  /** The largest number of bytes a response held unsent, and whether `write` ever said to wait. */
  buffered: { max: number; refused: boolean; writes: number };
  close(): Promise<void>;
}

const servers: Served[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
});

async function serve(): Promise<Served> {
  const handle = createSseHandler({ schema });
  let writes = 0;
  const buffered = { max: 0, refused: false, writes: 0 };
  const sockets = new Set<Socket>();
  const server = http.createServer((req: IncomingMessage, res: ServerResponse) => {
    const write = res.write.bind(res) as (...args: unknown[]) => boolean;
    res.write = ((...args: unknown[]) => {
      const ok = write(...args);
      buffered.writes++;
      buffered.refused ||= !ok;
      buffered.max = Math.max(buffered.max, res.writableLength);
      return ok;
    }) as typeof res.write;
    void handle(req, res).catch(() => res.destroy());
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    const s = socket as Socket & { _write: (...a: unknown[]) => void; _writev: (...a: unknown[]) => void };
    const one = s._write.bind(s);
    const many = s._writev.bind(s);
    s._write = (...a) => (writes++, one(...a));
    s._writev = (...a) => (writes++, many(...a));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const served: Served = {
    url: new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql/stream`),
    socketWrites: () => writes,
    buffered,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise((r) => server.close(() => r()));
    },
  };
  servers.push(served);
  return served;
}

/** A distinct-connection stream; `paused`: do not read until `resume()`. */
function stream(url: URL, query: string, paused = false) {
  let text = '';
  let res: IncomingMessage | null = null;
  const req = http.request(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
  });
  const ended = new Promise<string>((resolve, reject) => {
    req.once('error', reject);
    req.once('response', (r) => {
      res = r;
      if (paused) r.pause();
      r.setEncoding('utf8');
      r.on('data', (c: string) => (text += c));
      r.once('end', () => resolve(text));
    });
  });
  req.end(JSON.stringify({ query }));
  return {
    ended,
    text: () => text,
    open: () => res !== null,
    resume: () => res!.resume(),
    destroy: () => req.destroy(),
  };
}

/** The `next` events' values, in order. */
function values(text: string, field: string): string[] {
  return [...text.matchAll(/event: next\ndata: (.*)\n\n/g)].map(
    (m) => String((JSON.parse(m[1]!) as { data: Record<string, unknown> }).data[field]).split(':')[0]!,
  );
}

describe('createSseHandler', () => {
  it('writes the events produced together in a few socket writes, in order, then completes', async () => {
    const server = await serve();
    const n = 500;
    const text = await stream(server.url, `subscription { burst(n: ${n}) }`).ended;
    expect(values(text, 'burst')).toEqual(Array.from({ length: n }, (_, i) => String(i + 1)));
    expect(text.endsWith('event: complete\ndata:\n\n')).toBe(true);
    // Headers, the opening comment, the burst, the end: a handful (one per event would be over 500).
    expect(server.socketWrites()).toBeLessThanOrEqual(10);
  });

  it('stops writing at backpressure while the reader does not read, and delivers everything once it does', async () => {
    const server = await serve();
    const n = 20_000;
    const s = stream(server.url, `subscription { burst(n: ${n}, size: 1000) }`, true);
    // 20 MB of events against a reader that reads nothing (more than loopback's socket buffers take): writing must
    // wait once they are full, not buffer the rest in the process.
    await expect.poll(() => server.buffered.refused, { timeout: 10_000 }).toBe(true);
    await new Promise((r) => setTimeout(r, 200));
    expect(server.buffered.writes).toBeLessThan(n);
    s.resume();
    expect(values(await s.ended, 'burst')).toEqual(Array.from({ length: n }, (_, i) => String(i + 1)));
    // What waited in the response never grew to the whole burst.
    expect(server.buffered.max).toBeLessThan(1024 * 1024);
  });

  it('ends the source when the client leaves', async () => {
    const server = await serve();
    const before = sourceEnded;
    const s = stream(server.url, 'subscription { forever }');
    await expect.poll(() => values(s.text(), 'forever').length).toBeGreaterThanOrEqual(3);
    s.destroy();
    await expect.poll(() => sourceEnded).toBe(before + 1);
  });
});

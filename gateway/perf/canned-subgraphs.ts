/**
 * Four canned "subgraphs" for measuring a gateway's own CPU cost: each answers instantly from memory (no parsing, no
 * database), coordination with 5 rooms x 5 messages, identity with one User per representation. Prints
 * {"identity": url, ...} as one JSON line on stdout when listening.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const rooms = {
  data: {
    rooms: {
      edges: Array.from({ length: 5 }, (_, r) => ({
        node: {
          name: `room ${r}`,
          messages: {
            edges: Array.from({ length: 5 }, (_, m) => ({
              node: {
                body: `message ${r}.${m}`,
                author: { __typename: 'User', id: `00000000-0000-4000-8000-00000000000${m}` },
              },
            })),
          },
        },
      })),
    },
  },
};
const roomsText = JSON.stringify(rooms);

function answer(body: string): string {
  const req = JSON.parse(body) as { variables?: { representations?: Array<{ id: string }> } };
  const reps = req.variables?.representations;
  if (reps)
    return JSON.stringify({
      data: { _entities: reps.map((r) => ({ __typename: 'User', displayName: `User ${r.id.slice(-1)}` })) },
    });
  return roomsText;
}

const urls: Record<string, string> = {};
for (const name of ['identity', 'memory', 'coordination', 'catalog']) {
  const server = createServer((req, res) => {
    if (req.url === '/readyz' || req.url === '/healthz') return void res.end('{"status":"ready"}');
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      const text = answer(body);
      res
        .writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) })
        .end(text);
    });
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  urls[name] = `http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`;
}
process.stdout.write(JSON.stringify(urls) + '\n');

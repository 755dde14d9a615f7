/**
 * The JWKS is served once the issuer's keys are set up (the active key and the pending one published ahead of
 * rotation): a verifier that fetched it earlier would cache a set without the next key. Seen in CI: the first JWKS
 * request of a freshly started identity raced the OAuth service's key setup and answered the active key alone.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Queryable } from '@agentgraph/runtime';
import { afterEach, describe, expect, it } from 'vitest';
import { jwksRoute } from '../src/routes.js';

const key = (kid: string) => ({ kid, alg: 'ES256', public_jwk: { kty: 'EC', crv: 'P-256', x: 'x', y: 'y' } });

let server: Server | undefined;
afterEach(() => new Promise<void>((r) => (server ? server.close(() => r()) : r())));

async function serve(db: Queryable, keysReady: () => Promise<void>): Promise<string> {
  const route = jwksRoute({ db } as never, keysReady);
  server = createServer((req, res) => void route(req, res));
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server!.address() as AddressInfo).port}/.well-known/jwks.json`;
}

describe('GET /.well-known/jwks.json', () => {
  it('waits for the key setup, then answers the keys as they are then', async () => {
    const published = [key('active')];
    let reads = 0;
    const db: Queryable = {
      async query<Row>() {
        reads++;
        return { rows: published.map((k) => ({ ...k })) as Row[], rowCount: published.length };
      },
    };
    let setUp!: () => void;
    const keysReady = new Promise<void>((r) => (setUp = r));
    let asked!: () => void;
    const waiting = new Promise<void>((r) => (asked = r));
    const url = await serve(db, () => {
      asked();
      return keysReady;
    });
    const answer = fetch(url).then(async (res) => ({ status: res.status, body: (await res.json()) as any }));
    // The request reached the route, which is waiting for the setup: nothing was read yet.
    await waiting;
    expect(reads).toBe(0);
    published.push(key('pending'));
    setUp();
    const { status, body } = await answer;
    expect(status).toBe(200);
    expect(body.keys.map((k: { kid: string }) => k.kid)).toEqual(['active', 'pending']);
  });
});

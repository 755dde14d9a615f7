import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from './harness.js';
import { subscribe } from '../../test/src/sse.js';

let h: Harness | undefined;
afterEach(async () => {
  h?.slow.release();
  await h?.close();
  h = undefined;
});

/** Opens a raw connection and sends the start of a request, so the server counts it as busy, not idle. */
function halfRequest(url: string, path: string) {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  let data = '';
  socket.setEncoding('utf8');
  socket.on('data', (d: string) => (data += d));
  const opened = new Promise<void>((r) => socket.once('connect', () => r()));
  return {
    async start() {
      await opened;
      await new Promise<void>((r) =>
        socket.write(`GET ${path} HTTP/1.1\r\nHost: ${hostname}\r\n`, () => r()),
      );
    },
    /** Finishes the request and resolves with the raw answer once the server closed the connection. */
    finish(): Promise<string> {
      return new Promise((resolve) => {
        socket.once('close', () => resolve(data));
        socket.write('Connection: close\r\n\r\n');
      });
    },
  };
}

describe('readiness', () => {
  it('/readyz is 503 with a generic body when a subgraph is down', async () => {
    h = await startHarness();
    expect((await fetch(`${h.url}/readyz`)).status).toBe(200);
    await h.beta.close();
    const res = await fetch(`${h.url}/readyz`);
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ status: 'unavailable' });
    // Liveness does no I/O: still fine.
    expect((await fetch(`${h.url}/healthz`)).status).toBe(200);
  });
});

describe('graceful shutdown', () => {
  it('completes open streams, answers /readyz 503, and lets in-flight requests finish', async () => {
    h = await startHarness();
    const token = await h.token();
    const stream = subscribe<{ ticks: { n: number } }>(
      `${h.url}/graphql/stream`,
      token,
      'subscription { ticks(from: 1) { n } }',
    );
    expect((await stream.next()).data?.ticks.n).toBe(1);
    await h.ticks.activeBecomes(1);

    const inflight = h.gql('{ slow }');
    await h.slow.entered;
    const probe = halfRequest(h.url, '/readyz');
    await probe.start();

    const closing = h.gateway.close();
    // The stream is completed (not dropped), and its upstream subscription closed.
    await stream.ended;
    await h.ticks.activeBecomes(0);
    expect(h.gateway.openStreams).toBe(0);
    // A readiness probe during the drain is told "unavailable".
    const answer = await probe.finish();
    expect(answer).toMatch(/^HTTP\/1\.1 503/);
    expect(answer).toContain('{"status":"unavailable"}');
    // New connections are refused.
    await expect(fetch(`${h.url}/healthz`)).rejects.toThrow();
    // The in-flight request still completes.
    h.slow.release();
    const done = await inflight;
    expect(done.status).toBe(200);
    expect(done.json.data).toEqual({ slow: 'finally' });
    await closing;
  });

  it('gives up on stuck requests after SHUTDOWN_GRACE_MS', async () => {
    h = await startHarness({ SHUTDOWN_GRACE_MS: '50' });
    const inflight = h.gql('{ slow }').catch((e: unknown) => e);
    await h.slow.entered;
    await h.gateway.close();
    expect(await inflight).toBeInstanceOf(Error);
  });
});

/** The one graceful close of the platform's HTTP servers (http-shutdown.ts), over real HTTP on loopback. */
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { closeGracefully, InFlight } from '../src/http-shutdown.js';

/** A server whose requests finish when the test says so; every request is counted in `work`. */
async function slowServer() {
  const work = new InFlight();
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let arrived!: () => void;
  const arrival = new Promise<void>((r) => (arrived = r));
  const server: Server = createServer((req, res) => {
    work.enter();
    res.once('close', () => work.leave());
    arrived();
    void released.then(() => res.end('done'));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const get = () =>
    new Promise<{ status?: number; body: string; error?: string }>((resolve) => {
      const req = request({ host: '127.0.0.1', port, path: '/' }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode, body }));
        res.on('error', (e) => resolve({ body, error: e.message }));
      });
      req.on('error', (e) => resolve({ body: '', error: e.message }));
      req.end();
    });
  return { server, work, release, arrival, get };
}

describe('InFlight', () => {
  it('is idle at once when nothing runs, and once the last one leaves', async () => {
    const f = new InFlight();
    await f.idle();
    f.enter();
    f.enter();
    let idle = false;
    const waiting = f.idle().then(() => (idle = true));
    f.leave();
    await Promise.resolve();
    expect(idle).toBe(false);
    f.leave();
    await waiting;
    expect(f.size).toBe(0);
    f.leave(); // more leaves than enters: stays at 0
    expect(f.size).toBe(0);
  });
});

describe('closeGracefully', () => {
  it('stops accepting, lets a running request finish, then resolves true', async () => {
    const s = await slowServer();
    const answer = s.get();
    await s.arrival;
    const closed = closeGracefully(s.server, 60_000, s.work.idle());
    // No new connections once closing.
    expect((await s.get()).error).toMatch(/ECONNREFUSED/);
    s.release();
    expect(await answer).toEqual({ status: 200, body: 'done' });
    expect(await closed).toBe(true);
    expect(s.server.listening).toBe(false);
  });

  it('cuts off what is still running after the grace period, and says so', async () => {
    const s = await slowServer();
    const answer = s.get();
    await s.arrival;
    expect(await closeGracefully(s.server, 50, s.work.idle())).toBe(false);
    expect((await answer).error).toBeDefined();
    s.release();
  });
});

/**
 * A TCP proxy on loopback in front of one upstream (a PostgreSQL server, say), that a test can take down and bring
 * back: `down()` closes its port (new connections are refused, ECONNREFUSED, as when the server is stopped) and drops
 * every connection it carries; `up()` listens on the same port again. `rewrite(url)` points a URL at the proxy.
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';

export interface TcpProxy {
  readonly port: number;
  /** `url` with its host and port replaced by the proxy's. */
  rewrite(url: string): string;
  /** Refuse new connections and drop the open ones. Resolves once the port is closed. */
  down(): Promise<void>;
  /** Accept again, on the same port. */
  up(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(upstream: { host: string; port: number }): Promise<TcpProxy> {
  const open = new Set<Socket>();
  const track = (s: Socket) => {
    open.add(s);
    s.once('close', () => open.delete(s));
  };
  const onConnection = (client: Socket) => {
    const server = createConnection(upstream);
    track(client);
    track(server);
    client.pipe(server);
    server.pipe(client);
    // Either side failing or ending ends the other: what a client sees when the server goes away.
    client.on('error', () => server.destroy());
    server.on('error', () => client.destroy());
    client.on('close', () => server.destroy());
    server.on('close', () => client.destroy());
  };
  let server: Server = createServer(onConnection);
  const listen = (port: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
  await listen(0);
  const port = (server.address() as { port: number }).port;
  let listening = true;

  const down = async () => {
    if (!listening) return;
    listening = false;
    const closed = new Promise<void>((r) => server.close(() => r()));
    for (const s of open) s.destroy();
    await closed;
  };

  return {
    port,
    rewrite(url) {
      const u = new URL(url);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      return u.toString();
    },
    down,
    async up() {
      if (listening) return;
      server = createServer(onConnection);
      await listen(port);
      listening = true;
    },
    close: down,
  };
}

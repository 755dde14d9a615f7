/**
 * Graceful shutdown, one way for the platform's HTTP servers (each subgraph's and the gateway's): count what is
 * running (`InFlight`), then `closeGracefully`: stop accepting, let idle keep-alive sockets go, wait for the running
 * work up to the grace period (`SHUTDOWN_GRACE_MS`), close every connection left, and resolve once the server has
 * closed. Streams are told to end by their owner before (each ends with `complete` or an error event); their end is
 * part of the work waited for.
 */
import type { Server } from 'node:http';

/** Work a server has running (requests, streams), so a graceful close can wait for it. */
export class InFlight {
  private n = 0;
  private readonly waiters = new Set<() => void>();

  get size(): number {
    return this.n;
  }

  enter(): void {
    this.n++;
  }

  leave(): void {
    if (this.n === 0) return;
    this.n--;
    if (this.n === 0) {
      for (const w of this.waiters) w();
      this.waiters.clear();
    }
  }

  /** Resolves once nothing is running (at once when nothing is). */
  idle(): Promise<void> {
    if (this.n === 0) return Promise.resolve();
    return new Promise((resolve) => this.waiters.add(resolve));
  }
}

/**
 * Stops accepting connections, closes idle keep-alive sockets, waits for `work` up to `graceMs`, then closes every
 * connection left and waits for the server to close. Resolves whether the work ended within the grace period
 * (false: something was cut off).
 */
export async function closeGracefully(
  server: Server,
  graceMs: number,
  work: Promise<unknown>,
): Promise<boolean> {
  const stopped = server.listening ? new Promise<void>((r) => server.close(() => r())) : Promise.resolve();
  server.closeIdleConnections();
  let timer: NodeJS.Timeout | undefined;
  const drained = await Promise.race([
    work.then(() => true),
    new Promise<boolean>((r) => {
      timer = setTimeout(() => r(false), graceMs);
      timer.unref();
    }),
  ]);
  clearTimeout(timer);
  server.closeAllConnections();
  await stopped;
  return drained;
}

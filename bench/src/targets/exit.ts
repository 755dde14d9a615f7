/**
 * Exit on SIGTERM/SIGINT/IPC 'stop' through process.exit, so that `node --cpu-prof` writes its profile (a process
 * killed by a signal it does not handle writes none). Closing is best effort and bounded.
 */
import { installMemoryProbe } from '../lib/memory-probe.js';

export function installGracefulExit(close?: () => Promise<unknown>): void {
  installMemoryProbe();
  let exiting = false;
  const exit = () => {
    if (exiting) return;
    exiting = true;
    const timer = setTimeout(() => process.exit(0), 2_000);
    timer.unref();
    Promise.resolve(close?.())
      .catch(() => undefined)
      .finally(() => process.exit(0));
  };
  process.once('SIGTERM', exit);
  process.once('SIGINT', exit);
  process.on('message', (m: { type?: string }) => {
    if (m?.type === 'stop') exit();
  });
}

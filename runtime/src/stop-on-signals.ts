/**
 * How every process of ours stops: on SIGINT or SIGTERM it runs `close` once (graceful: drain, then release),
 * exits 0 when that succeeds and 1 when it fails; a second Ctrl-C while stopping forces the exit.
 */
import type { Logger } from './log.js';

export function stopOnSignals(log: Logger, close: () => Promise<void>): void {
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) {
      if (signal === 'SIGINT') process.exit(130);
      return;
    }
    stopping = true;
    log.info('stopping', { signal });
    if (process.stderr.isTTY) process.stderr.write('Stopping; press Ctrl-C again to force.\n');
    close().then(
      () => process.exit(0),
      (error: unknown) => {
        log.error('unclean stop', { error });
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

/**
 * A background pass run every `intervalMs` (sweepers, re-signing): the next pass starts `intervalMs` after the
 * previous one ended, so passes never overlap; a failing pass is logged and the schedule goes on. Timers are
 * unref'd (they never keep the process alive). The returned stop cancels the next pass and waits for a running one.
 */
import type { Logger } from './log.js';

export function runPeriodically(opts: {
  intervalMs: number;
  /** One pass. */
  run: () => Promise<void>;
  log: Logger;
  /** The log message when a pass throws (the error goes with it). */
  failureMessage: string;
}): () => Promise<void> {
  let stopped = false;
  let running: Promise<void> | null = null;
  let timer: NodeJS.Timeout | null = null;
  const tick = () => {
    if (stopped) return;
    running = opts
      .run()
      .catch((error: unknown) => opts.log.error(opts.failureMessage, { error }))
      .finally(() => {
        running = null;
        if (!stopped) timer = setTimeout(tick, opts.intervalMs).unref();
      });
  };
  timer = setTimeout(tick, opts.intervalMs).unref();
  return async () => {
    stopped = true;
    if (timer) clearTimeout(timer);
    await running;
  };
}

/**
 * Every replica's view of the engaged emergency stops, for ending streams (runtime's StreamStopSource): loaded
 * before the server listens, reloaded when `coordination_emergency` is notified (the engage/lift transaction
 * notifies on commit), when the listener reconnects, and every `refreshMs` as a safety net. An engaged stop ends
 * the tenant's open streams (all tenants' for the global stop) with EMERGENCY_STOP within the notification's
 * latency plus one read, and refuses new streams until it is lifted.
 */
import {
  AppError,
  type AuthContext,
  type Database,
  type Logger,
  type StartedStreamStop,
} from '@agentgraph/runtime';

export const EMERGENCY_CHANNEL = 'coordination_emergency';

export interface EmergencyWatchOptions {
  db: Database;
  log: Logger;
  /** Reload period without notifications (ms, default 5000). */
  refreshMs?: number;
}

export function emergencyStopError(global: boolean): AppError {
  return new AppError(
    'EMERGENCY_STOP',
    global
      ? 'The emergency stop is engaged for the whole deployment by an operator: streams and new intents are refused until it is lifted.'
      : 'The emergency stop is engaged for your tenant by an admin: streams and new intents are refused until it is lifted. Query emergencyStop for who, when and why.',
    { scope: global ? 'GLOBAL' : 'TENANT' },
  );
}

export function createEmergencyWatch(opts: EmergencyWatchOptions): StartedStreamStop {
  const { db, log } = opts;
  let tenants = new Set<string>();
  let global = false;
  const listeners = new Set<() => void>();
  let closed = false;
  let unlisten: (() => Promise<void>) | null = null;
  // One read at a time. A reload asked for during a read waits for the one read after it (which all such asks
  // share), so a notification is never lost and a caller that must not act on stale news gets a read that began
  // after it asked.
  let running: Promise<void> | null = null;
  let queued: Promise<void> | null = null;

  const loadOnce = async () => {
    const r = await db.query<{ tenant_id: string | null }>(
      'SELECT tenant_id FROM coordination.engaged_emergency_stops()',
    );
    const next = new Set<string>();
    let nextGlobal = false;
    for (const row of r.rows) {
      if (row.tenant_id === null) nextGlobal = true;
      else next.add(row.tenant_id);
    }
    const tightened = (nextGlobal && !global) || [...next].some((t) => !tenants.has(t));
    tenants = next;
    global = nextGlobal;
    if (tightened) for (const l of listeners) l();
  };
  const run = (): Promise<void> => {
    running = loadOnce()
      .catch((error: unknown) => {
        if (!closed) log.error('emergency stops could not be read; keeping the last known state', { error });
      })
      .finally(() => {
        running = null;
      });
    return running;
  };
  const reload = (): Promise<void> => {
    if (closed) return Promise.resolve();
    if (!running) return run();
    queued ??= running.then(() => {
      queued = null;
      return closed ? undefined : run();
    });
    return queued;
  };

  const ready = (async () => {
    unlisten = await db.listen(
      EMERGENCY_CHANNEL,
      () => void reload(),
      () => void reload(),
    );
    await loadOnce();
  })();
  const timer = setInterval(() => void reload(), opts.refreshMs ?? 5000);
  timer.unref();

  return {
    ready,
    check(auth: AuthContext) {
      if (global) return emergencyStopError(true);
      if (tenants.has(auth.tenantId)) return emergencyStopError(false);
      return null;
    },
    refresh: reload,
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async close() {
      closed = true;
      clearInterval(timer);
      await ready.catch(() => undefined);
      await queued;
      await running;
      await unlisten?.();
      listeners.clear();
    },
  };
}

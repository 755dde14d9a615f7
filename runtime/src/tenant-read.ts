/**
 * Reads of one request share transactions: every `tenantRead` a request issues in the same turn of the event loop
 * (sibling fields, list items, entity batches) runs in ONE tenant-scoped transaction instead of one each, which
 * cuts BEGIN/set_config/COMMIT round trips (and PGlite's serialised transactions) by the fan-out of the query.
 * A read that throws does not fail its neighbours: the ones after it run again in a fresh transaction.
 * Writes never come here: mutations go through idempotentMutation, one transaction each.
 */
import type { Database, Queryable } from './db/types.js';
import { requireAuth, withTenant, type AuthContext } from './tenancy.js';

interface Pending {
  fn: (tx: Queryable) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

interface ReadScope {
  db: Database;
  auth: AuthContext | null;
}

const queues = new WeakMap<ReadScope, Pending[]>();

export function tenantRead<T>(ctx: ReadScope, fn: (tx: Queryable) => Promise<T>): Promise<T> {
  const auth = requireAuth(ctx.auth);
  let queue = queues.get(ctx);
  if (!queue) {
    queues.set(ctx, (queue = []));
    setImmediate(() => void flush(ctx, auth));
  }
  const q = queue;
  return new Promise<T>((resolve, reject) => {
    q.push({ fn, resolve: resolve as (v: unknown) => void, reject });
  });
}

async function flush(ctx: ReadScope, auth: AuthContext): Promise<void> {
  let rest = queues.get(ctx) ?? [];
  queues.delete(ctx);
  while (rest.length > 0) {
    const batch = rest;
    const results: unknown[] = [];
    let failed = -1;
    let failure: unknown;
    try {
      await withTenant(ctx.db, auth, async (tx) => {
        for (let i = 0; i < batch.length; i++) {
          try {
            results.push(await batch[i]!.fn(tx));
          } catch (err) {
            failed = i;
            failure = err;
            throw err;
          }
        }
      });
      batch.forEach((p, i) => p.resolve(results[i]));
      return;
    } catch (err) {
      if (failed < 0) {
        // BEGIN, set_config or COMMIT itself failed: nothing was read for sure.
        for (const p of batch) p.reject(err);
        return;
      }
      for (let i = 0; i < failed; i++) batch[i]!.resolve(results[i]);
      batch[failed]!.reject(failure);
      rest = batch.slice(failed + 1);
    }
  }
}

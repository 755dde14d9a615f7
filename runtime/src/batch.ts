/**
 * Per-request batching (the DataLoader idea, small): loads asked for in the same tick are answered by one call
 * with all their keys. Entity references (`_entities`) and nested connections use it to avoid N+1 round trips.
 * A loader lives on one request's context (`loaderFor`), so results never leak across callers or tenants.
 */
import type { SubgraphContext } from './subgraph-server.js';

export type BatchFn<K, V> = (keys: readonly K[]) => Promise<ReadonlyMap<K, V>>;

export class BatchLoader<K, V> {
  private pending: { key: K; resolve: (v: V | null) => void; reject: (e: unknown) => void }[] = [];
  private readonly cache = new Map<K, Promise<V | null>>();

  constructor(private readonly batch: BatchFn<K, V>) {}

  load(key: K): Promise<V | null> {
    const hit = this.cache.get(key);
    if (hit) return hit;
    const p = new Promise<V | null>((resolve, reject) => {
      if (this.pending.length === 0) queueMicrotask(() => void this.flush());
      this.pending.push({ key, resolve, reject });
    });
    this.cache.set(key, p);
    return p;
  }

  private async flush(): Promise<void> {
    // Let the rest of this tick's resolvers enqueue their keys first.
    await new Promise<void>((r) => setImmediate(r));
    const batch = this.pending;
    this.pending = [];
    try {
      const found = await this.batch([...new Set(batch.map((b) => b.key))]);
      for (const b of batch) b.resolve(found.get(b.key) ?? null);
    } catch (err) {
      for (const b of batch) {
        this.cache.delete(b.key);
        b.reject(err);
      }
    }
  }
}

const loaders = new WeakMap<SubgraphContext, Map<string, BatchLoader<unknown, unknown>>>();

/** The request's loader named `name`, created on first use with `batch`. */
export function loaderFor<K, V>(ctx: SubgraphContext, name: string, batch: BatchFn<K, V>): BatchLoader<K, V> {
  let byName = loaders.get(ctx);
  if (!byName) loaders.set(ctx, (byName = new Map()));
  let loader = byName.get(name) as BatchLoader<K, V> | undefined;
  if (!loader) {
    loader = new BatchLoader(batch);
    byName.set(name, loader as BatchLoader<unknown, unknown>);
  }
  return loader;
}

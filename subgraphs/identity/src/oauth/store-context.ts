/**
 * Which connection oidc-provider's models write through. Normally the database itself (each adapter call is its own
 * statement); inside `withOAuthTransaction(tx, fn)` every adapter call made by `fn` goes through `tx`, so a device
 * approval and its idempotency key (or a grant and the membership check) commit or roll back together.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Queryable } from '@agentgraph/runtime';

const current = new AsyncLocalStorage<Queryable>();

export function withOAuthTransaction<T>(tx: Queryable, fn: () => Promise<T>): Promise<T> {
  return current.run(tx, fn);
}

export function oauthConnection(fallback: Queryable): Queryable {
  return current.getStore() ?? fallback;
}

/**
 * What every mutation resolver goes through: authentication, then the idempotency key (docs/architecture.md#idempotency) around an
 * effect that runs in a tenant-scoped transaction. A replay marks the response `extensions.idempotentReplay`.
 */
import type { Queryable } from './db/types.js';
import { AppError } from './errors.js';
import { runIdempotent } from './idempotency.js';
import type { SubgraphContext } from './subgraph-server.js';
import { requireAuth, type AuthContext } from './tenancy.js';

export async function idempotentMutation<T>(
  ctx: SubgraphContext,
  operation: string,
  args: { idempotencyKey: string } & Record<string, unknown>,
  effect: (tx: Queryable, auth: AuthContext) => Promise<T>,
): Promise<T> {
  const auth = requireAuth(ctx.auth);
  const { idempotencyKey, ...rest } = args;
  let outcome;
  try {
    outcome = await runIdempotent(
      ctx.db,
      auth,
      { key: idempotencyKey, operation, args: rest },
      ctx.config.idempotencyRetentionSeconds,
      (tx) => effect(tx, auth),
    );
  } catch (err) {
    if (err instanceof AppError && err.code === 'IDEMPOTENCY_KEY_REUSED')
      ctx.metrics?.idempotency('conflict');
    if (err instanceof AppError && err.code === 'IDEMPOTENCY_KEY_IN_PROGRESS')
      ctx.metrics?.idempotency('in_progress');
    throw err;
  }
  if (outcome.replayed) {
    ctx.responseExtensions['idempotentReplay'] = true;
    ctx.metrics?.idempotency('replay');
  }
  return outcome.result;
}

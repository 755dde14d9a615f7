/**
 * Limits on creating workspaces, per tenant (memory README; before them 1,850 createWorkspace writes in 10 s went through):
 * - a rate: at most `perWindow` workspaces created in any `windowMs` (a sliding window), else RATE_LIMITED with
 *   `retryAfterMs`, the time until the oldest creation in the window leaves it;
 * - a ceiling: at most `maxPerTenant` workspaces at a time, else FORBIDDEN (`reason: WORKSPACE_LIMIT`); deleting one
 *   makes room. It bounds what the rate cannot: a tenant that creates and deletes in a loop never grows past it.
 *
 * The log of the rate is the tenant's own rows (`memory.workspaces.created_at`, stamped with the server clock), so
 * every replica sees the same window and no table of its own is needed; a transaction-scoped advisory lock per tenant
 * makes the check and the insert one step (two replicas cannot both take the last place). It runs in the mutation's
 * transaction, after the idempotency key: a replay of a created workspace is answered without counting, and a refusal
 * writes nothing.
 */
import { AppError, type AuthContext, type Queryable } from '@agentgraph/runtime';

export interface WorkspaceLimits {
  /** Workspaces a tenant may create in any window of `windowMs`. */
  perWindow: number;
  windowMs: number;
  /** Workspaces a tenant may hold at a time. */
  maxPerTenant: number;
}

export const DEFAULT_WORKSPACE_LIMITS: WorkspaceLimits = {
  perWindow: 30,
  windowMs: 60_000,
  maxPerTenant: 10_000,
};

/** Takes the tenant's creation lock, then refuses the creation if it would break a limit. Call in the insert's tx. */
export async function checkWorkspaceLimits(
  tx: Queryable,
  auth: AuthContext,
  limits: WorkspaceLimits,
  now: Date,
): Promise<void> {
  await tx.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [
    `memory.createWorkspace\n${auth.tenantId}`,
  ]);
  const since = new Date(now.getTime() - limits.windowMs);
  // Newest first (index workspaces_newest): the perWindow-th newest creation decides when a place frees up.
  const recent = await tx.query<{ created_at: Date | string }>(
    `SELECT w.created_at FROM memory.workspaces w
      WHERE w.tenant_id = $1 AND w.created_at > $2
      ORDER BY w.created_at DESC LIMIT $3`,
    [auth.tenantId, since.toISOString(), limits.perWindow],
  );
  if (recent.rows.length >= limits.perWindow) {
    const oldest = new Date(recent.rows[limits.perWindow - 1]!.created_at).getTime();
    const retryAfterMs = Math.max(1, oldest + limits.windowMs - now.getTime());
    throw new AppError(
      'RATE_LIMITED',
      `Too many workspaces created in your tenant (limit: ${limits.perWindow} per ${limits.windowMs / 1000} s). Wait ${retryAfterMs} ms (extensions.retryAfterMs), then retry with the same idempotency key.`,
      { retryAfterMs },
    );
  }
  const held = await tx.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM memory.workspaces w WHERE w.tenant_id = $1`,
    [auth.tenantId],
  );
  if (held.rows[0]!.n >= limits.maxPerTenant) {
    throw new AppError(
      'FORBIDDEN',
      `Your tenant holds ${limits.maxPerTenant} workspaces, the most it may. Delete workspaces you no longer need, then create this one.`,
      { reason: 'WORKSPACE_LIMIT' },
    );
  }
}

/**
 * Server-side idempotency keys (docs/architecture.md#idempotency; IETF draft-ietf-httpapi-idempotency-key-header; brandur.org's
 * Postgres design). Keys are scoped by (tenant, principal, key). The key row is inserted in the same transaction
 * as the mutation's effect, so both commit or neither does:
 *  - same key, same fingerprint  → the stored result, and the response is marked `idempotentReplay: true`;
 *  - same key, other fingerprint → IDEMPOTENCY_KEY_REUSED;
 *  - same key while the first request is still running → IDEMPOTENCY_KEY_IN_PROGRESS (retry with backoff).
 * "Still running" is detected with a transaction-scoped advisory lock on the key, taken without waiting.
 * A failed effect rolls back and leaves no key behind, so the client may retry with the same key.
 *
 * A tenant-wide erase (right to be forgotten) calls `eraseIdempotentResponses` in its transaction: the stored
 * answers of the operations it names are replaced by a tombstone (migration 003), and a replay of such a key is
 * NOT_FOUND with `extensions.idempotentResponseErased` rather than the old answer or a second run of the effect.
 */
import { createHash } from 'node:crypto';
import { canonicalJson } from './canonical-json.js';
import type { Database, Queryable } from './db/types.js';
import { AppError, badInput } from './errors.js';
import { withTenant, type AuthContext } from './tenancy.js';

const KEY = /^[\x21-\x7e]{8,255}$/;

export interface IdempotentRequest {
  /** The idempotency key the client sent (argument; the SDK also sends it as a header). */
  key: string;
  /** The mutation's schema coordinate, e.g. "Mutation.postMessage". */
  operation: string;
  /** The mutation's arguments without the key. */
  args: Record<string, unknown>;
}

export interface IdempotencyOutcome<T> {
  result: T;
  replayed: boolean;
}

export function fingerprint(operation: string, args: Record<string, unknown>): string {
  return createHash('sha256').update(canonicalJson({ operation, args })).digest('hex');
}

export function validateIdempotencyKey(key: string): void {
  if (!KEY.test(key)) {
    throw badInput(
      'idempotencyKey must be 8 to 255 printable ASCII characters without spaces; generate one UUID per logical request and reuse it on retries.',
      { argument: 'idempotencyKey' },
    );
  }
}

/**
 * Runs `effect` at most once per key. The result must be JSON-serialisable; the first response and every replay
 * return the same JSON.
 */
export async function runIdempotent<T>(
  db: Database,
  auth: AuthContext,
  req: IdempotentRequest,
  retentionSeconds: number,
  effect: (tx: Queryable) => Promise<T>,
): Promise<IdempotencyOutcome<T>> {
  validateIdempotencyKey(req.key);
  const fp = fingerprint(req.operation, req.args);
  return withTenant(db, auth, async (tx) => {
    // The key's lock and its stored answer in one round trip; an expired answer is gone after it (migration 004).
    const claim = await tx.query<{
      locked: boolean;
      fingerprint: string | null;
      response: T | null;
      erased_at: Date | string | null;
    }>('SELECT locked, fingerprint, response, erased_at FROM runtime.claim_idempotency_key($1, $2, $3)', [
      auth.tenantId,
      auth.principalId,
      req.key,
    ]);
    const row = claim.rows[0];
    if (!row?.locked) {
      throw new AppError(
        'IDEMPOTENCY_KEY_IN_PROGRESS',
        'A request with this idempotency key is still running. Retry the same request with backoff.',
        { retryAfterMs: 250 },
      );
    }
    if (row.fingerprint !== null) {
      if (row.erased_at !== null) throw erasedResponse(req.operation, new Date(row.erased_at));
      if (row.fingerprint !== fp) {
        throw new AppError(
          'IDEMPOTENCY_KEY_REUSED',
          `This idempotency key was already used for a different request (${req.operation} with other arguments). Use a new key for a new request.`,
        );
      }
      return { result: row.response as T, replayed: true };
    }
    const result = JSON.parse(JSON.stringify(await effect(tx))) as T;
    await tx.query(
      `INSERT INTO runtime.idempotency_keys
         (tenant_id, principal_id, key, operation, fingerprint, response, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, now() + make_interval(secs => $7))`,
      [auth.tenantId, auth.principalId, req.key, req.operation, fp, JSON.stringify(result), retentionSeconds],
    );
    return { result, replayed: false };
  });
}

/**
 * The answer to a replay of a key whose stored response a tenant-wide erase removed. The request is not run again:
 * it could write the erased data back without anyone noticing (a retried outbox entry, say).
 */
function erasedResponse(operation: string, erasedAt: Date): AppError {
  return new AppError(
    'NOT_FOUND',
    `The result of this request (${operation}) was removed by a tenant-wide erase on ${erasedAt.toISOString()}, and the request was not run again. If you still mean to make it, send it with a new idempotency key; otherwise drop it.`,
    { idempotentResponseErased: true, erasedAt: erasedAt.toISOString() },
  );
}

/** A schema coordinate as idempotentMutation stores it, e.g. "Mutation.putMemory". */
const OPERATION = /^[A-Z][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Right to be forgotten: tombstones the stored responses of `operations` for every principal of the transaction's
 * tenant (call it inside that tenant's withTenant / idempotentMutation transaction, after the deletes, so that keys
 * committed meanwhile are caught too). The rows stay until they expire, so replays are recognised and answered
 * NOT_FOUND (`extensions.idempotentResponseErased`). Responses stored later in the same transaction (the erase's
 * own) are not touched. Returns how many responses were erased now (tombstones already there are not counted).
 */
export async function eraseIdempotentResponses(
  tx: Queryable,
  operations: readonly string[],
  erasedAt: Date = new Date(),
): Promise<number> {
  const bad = operations.find((op) => !OPERATION.test(op));
  if (bad !== undefined) {
    throw new Error(
      `eraseIdempotentResponses: "${bad}" is not an operation as idempotentMutation stores it; name it "Mutation.field".`,
    );
  }
  if (operations.length === 0) return 0;
  const r = await tx.query<{ n: number }>(
    'SELECT runtime.erase_idempotent_responses($1::text[], $2::timestamptz) AS n',
    [[...operations], erasedAt.toISOString()],
  );
  return Number(r.rows[0]?.n ?? 0);
}

/** Deletes expired keys in batches; returns how many went. */
export async function purgeExpiredIdempotencyKeys(db: Database, batch = 1000): Promise<number> {
  let total = 0;
  for (;;) {
    const r = await db.query<{ n: number }>('SELECT runtime.purge_expired_idempotency_keys($1) AS n', [
      batch,
    ]);
    const n = Number(r.rows[0]?.n ?? 0);
    total += n;
    if (n < batch) return total;
  }
}

/**
 * Revoked access tokens, known to every verifier (gateway and subgraph replicas) within moments of the commit.
 *
 * A revocation names what it refuses (one token by `jti`, an OAuth grant by `gid`, a device by `did`, or every token
 * of a member in a tenant), issued up to when (the commit time, `revoked_at`: a token with a later `iat` passes, so a
 * member removed and added again, or demoted and refreshed, is not locked out), and until when (`expiresAt`: by
 * then every token it could match has expired). Writers
 * call `revokeTokens` inside their own transaction: the row (runtime.token_revocations) and a NOTIFY on channel
 * 'token_revocations' commit together, so listeners learn of it exactly when it takes effect, not before (a rolled
 * back revocation is never seen) and not later than the notification's delivery (a few ms on one server).
 *
 * Each verifier holds a `RevocationList`: all live rows loaded at start, kept current by the notifications, reloaded
 * after a lost listener connection. `isRevoked` is a few in-memory map lookups, so it runs on every request, also
 * for tokens whose signature check was cached.
 */
import { z } from 'zod';
import type { Database, Queryable } from './db/types.js';
import type { Logger } from './log.js';
import type { AuthContext } from './tenancy.js';

export type RevocationKind = 'jti' | 'grant' | 'device' | 'subject';

export interface Revocation {
  kind: RevocationKind;
  value: string;
  /** When the revocation may be forgotten: the latest `exp` of the tokens it refuses (e.g. now + 15 min). */
  expiresAt: Date;
}

export const REVOCATIONS_CHANNEL = 'token_revocations';

/**
 * How long past `expiresAt` a revocation is still applied (and kept in the table): more than the verifiers' clock
 * tolerance (CLOCK_TOLERANCE_SECONDS in auth.ts, 5 s), which accepts a token a little after its `exp`.
 */
export const REVOCATION_GRACE_MS = 60_000;

/** Expired rows deleted per `revokeTokens` call: bounds the cost of the purge that keeps the table small. */
const PURGE_BATCH = 100;

const KINDS = ['jti', 'grant', 'device', 'subject'] as const;

const Entry = z.object({
  kind: z.enum(KINDS),
  value: z.string().min(1).max(200),
  expiresAt: z.date().refine((d) => !Number.isNaN(d.getTime()), 'must be a valid date'),
});

/** What a NOTIFY carries: the entry itself, expiry in epoch milliseconds. */
const Notification = z.object({
  kind: z.enum(KINDS),
  value: z.string().min(1).max(200),
  expiresAt: z.number().finite(),
  revokedAt: z.number().finite(),
});

/**
 * Tokens issued within this long after a revocation's commit are still refused: `iat` has one-second resolution and
 * the issuer's clock may run slightly behind the database's.
 */
export const REVOCATION_ISSUE_SKEW_MS = 1_000;

/** The value of a 'subject' revocation: every token of this principal in this tenant. */
export function subjectKey(tenantId: string, principalId: string): string {
  return `${tenantId}/${principalId}`;
}

/**
 * Records revocations in the caller's transaction and notifies every verifier when it commits. A revocation that
 * exists already keeps the later of the two expiries. Also deletes a bounded batch of long-expired rows.
 */
export async function revokeTokens(tx: Queryable, entries: readonly Revocation[]): Promise<void> {
  const byKey = new Map<string, Revocation>();
  entries.forEach((entry, i) => {
    const parsed = Entry.safeParse(entry);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new Error(
        `revokeTokens: entry ${i}: ${issue.path.join('.') || 'entry'} ${issue.message}. ` +
          `Pass { kind: ${KINDS.map((k) => `'${k}'`).join(' | ')}, value: 1-200 characters, expiresAt: Date }.`,
      );
    }
    const k = keyOf(parsed.data.kind, parsed.data.value);
    const prior = byKey.get(k);
    // One row per (kind, value) per statement: ON CONFLICT cannot update a row twice.
    if (!prior || prior.expiresAt < parsed.data.expiresAt) byKey.set(k, parsed.data);
  });
  if (byKey.size === 0) return;
  const list = [...byKey.values()];
  await tx.query(
    `WITH upserted AS (
       INSERT INTO runtime.token_revocations AS r (kind, value, expires_at, revoked_at)
       SELECT k, v, e, clock_timestamp() FROM unnest($1::text[], $2::text[], $3::timestamptz[]) AS t(k, v, e)
       ON CONFLICT (kind, value) DO UPDATE SET expires_at = greatest(r.expires_at, excluded.expires_at),
                                               revoked_at = greatest(r.revoked_at, excluded.revoked_at)
       RETURNING r.kind, r.value, r.expires_at, r.revoked_at
     )
     SELECT pg_notify('${REVOCATIONS_CHANNEL}', json_build_object(
              'kind', kind, 'value', value,
              'expiresAt', (extract(epoch FROM expires_at) * 1000)::float8,
              'revokedAt', (extract(epoch FROM revoked_at) * 1000)::float8)::text)
       FROM upserted`,
    [list.map((e) => e.kind), list.map((e) => e.value), list.map((e) => e.expiresAt.toISOString())],
  );
  await tx.query(
    `DELETE FROM runtime.token_revocations
      WHERE ctid IN (SELECT ctid FROM runtime.token_revocations
                      WHERE expires_at < now() - make_interval(secs => $1) LIMIT ${PURGE_BATCH})`,
    [REVOCATION_GRACE_MS / 1000],
  );
}

export interface RevocationList {
  /** Whether the token is revoked by its jti, grant (gid), device (did) or subject (tid + sub). */
  isRevoked(auth: AuthContext): boolean;
  /** Resolves once listening and the first load are done (wait for it before serving). */
  ready: Promise<void>;
  /** Stops listening. */
  close(): Promise<void>;
  /** Live entries held (for tests and metrics). */
  readonly size: number;
  /** When the list was last loaded in full (epoch ms; 0 before the first load), for the metrics' list age. */
  readonly loadedAt: number;
  /** The last notification's delay from its commit to its arrival here (ms), for the metrics' lag. */
  readonly notificationLagMs: number | undefined;
  /** Calls `listener` after every change (a new or extended revocation); returns the unsubscribe function. */
  subscribe(listener: () => void): () => void;
}

export interface RevocationListOptions {
  /** Epoch milliseconds; injectable for tests. */
  now?: () => number;
}

function keyOf(kind: RevocationKind, value: string): string {
  return `${kind}\n${value}`;
}

export function createRevocationList(
  db: Database,
  log: Logger,
  opts: RevocationListOptions = {},
): RevocationList {
  const now = opts.now ?? Date.now;
  /** kind\nvalue → expiry and revocation time (epoch ms). */
  const entries = new Map<string, { expiresAt: number; revokedAt: number }>();
  // Expired entries are dropped when looked up, and all at once whenever the map has doubled since the last sweep,
  // so memory stays proportional to the live revocations however many pass through.
  let sweepAt = 1024;
  let closed = false;
  let loadedAt = 0;
  let notificationLagMs: number | undefined;
  let unlisten: (() => Promise<void>) | null = null;
  const listeners = new Set<() => void>();
  const changed = () => {
    for (const l of listeners) {
      try {
        l();
      } catch (error) {
        log.error('a token revocation listener failed', { error });
      }
    }
  };

  const sweep = () => {
    const cutoff = now() - REVOCATION_GRACE_MS;
    for (const [k, e] of entries) if (e.expiresAt <= cutoff) entries.delete(k);
    sweepAt = Math.max(1024, entries.size * 2);
  };

  const add = (kind: RevocationKind, value: string, expiresAt: number, revokedAt: number) => {
    const k = keyOf(kind, value);
    const prior = entries.get(k);
    entries.set(k, {
      expiresAt: Math.max(prior?.expiresAt ?? 0, expiresAt),
      revokedAt: Math.max(prior?.revokedAt ?? 0, revokedAt),
    });
    if (entries.size >= sweepAt) sweep();
  };

  /** Whether a live entry refuses a token issued at `iat` (epoch seconds; unknown = refused). */
  const live = (kind: RevocationKind, value: string | undefined, iat: number | undefined): boolean => {
    if (value === undefined) return false;
    const k = keyOf(kind, value);
    const e = entries.get(k);
    if (e === undefined) return false;
    if (e.expiresAt + REVOCATION_GRACE_MS <= now()) {
      entries.delete(k);
      return false;
    }
    return iat === undefined || iat * 1000 <= e.revokedAt + REVOCATION_ISSUE_SKEW_MS;
  };

  const load = async () => {
    const { rows } = await db.query<{
      kind: RevocationKind;
      value: string;
      expires_ms: number;
      revoked_ms: number;
    }>(
      `SELECT kind, value, (extract(epoch FROM expires_at) * 1000)::float8 AS expires_ms,
              (extract(epoch FROM revoked_at) * 1000)::float8 AS revoked_ms
         FROM runtime.token_revocations WHERE expires_at > $1`,
      [new Date(now() - REVOCATION_GRACE_MS).toISOString()],
    );
    // Adds only: a revocation never becomes valid again before it expires, so merging is always right, also with
    // notifications that arrive while this runs.
    for (const r of rows) add(r.kind, r.value, Number(r.expires_ms), Number(r.revoked_ms));
    loadedAt = now();
    if (rows.length) changed();
    return rows.length;
  };

  const reload = (why: string) => {
    if (closed) return;
    load().then(
      (n) => log.info('token revocations reloaded', { why, entries: n }),
      (error: unknown) => {
        log.error('token revocations could not be reloaded; retrying in 1 s', { why, error });
        setTimeout(() => reload(why), 1000).unref();
      },
    );
  };

  const onNotify = (payload: string) => {
    let parsed: z.infer<typeof Notification>;
    try {
      parsed = Notification.parse(JSON.parse(payload));
    } catch {
      log.warn('ignored a malformed token revocation notification; reloading', { bytes: payload.length });
      reload('malformed notification');
      return;
    }
    add(parsed.kind, parsed.value, parsed.expiresAt, parsed.revokedAt);
    notificationLagMs = Math.max(0, now() - parsed.revokedAt);
    changed();
  };

  const ready = (async () => {
    // Listen first, then load: a revocation committed in between is in the load, the notification, or both.
    const stop = await db.listen(REVOCATIONS_CHANNEL, onNotify, () => reload('listener reconnected'));
    if (closed) {
      await stop();
      return;
    }
    unlisten = stop;
    await load();
  })();
  // The caller awaits `ready`; this only keeps an unobserved failure from being an unhandled rejection.
  ready.catch(() => undefined);

  return {
    isRevoked(auth) {
      if (entries.size === 0) return false;
      const iat = auth.issuedAt;
      return (
        live('jti', auth.tokenId, iat) ||
        live('grant', auth.grantId, iat) ||
        live('device', auth.deviceId, iat) ||
        live('subject', subjectKey(auth.tenantId, auth.principalId), iat)
      );
    },
    ready,
    get size() {
      return entries.size;
    },
    get loadedAt() {
      return loadedAt;
    },
    get notificationLagMs() {
      return notificationLagMs;
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async close() {
      closed = true;
      await ready.catch(() => undefined);
      const stop = unlisten;
      unlisten = null;
      await stop?.();
    },
  };
}

/**
 * RFC 8628 §3.5 polling discipline, shared by every identity replica through identity.device_polls.
 *
 * The device authorization answer says `interval` (seconds). A poll that comes sooner than the device's current
 * required interval after its previous poll (or after the authorization request itself) is answered `slow_down`,
 * and the required interval becomes "what the client just used + 5 s" (less 1 s of tolerance for network jitter),
 * never less than the advertised one. A client that follows the RFC (adds 5 s per slow_down) therefore converges at
 * once; one that ignores slow_down keeps getting it. Polls are recorded whatever their outcome.
 */
import { createHash } from 'node:crypto';
import type { Queryable } from '@agentgraph/runtime';
import { SLOW_DOWN_STEP_SECONDS } from './constants.js';

const TOLERANCE_MS = 1000;

function codeHash(deviceCode: string): Buffer {
  return createHash('sha256').update(deviceCode, 'utf8').digest();
}

/** Called when a device code is issued: the polling clock starts now. */
export async function recordDeviceAuthorization(
  db: Queryable,
  deviceCode: string,
  intervalSeconds: number,
  expiresInSeconds: number,
  now: Date,
): Promise<void> {
  await db.query(
    `INSERT INTO identity.device_polls (code_hash, interval_seconds, last_poll_at, expires_at)
     VALUES ($1, $2, $3, $4) ON CONFLICT (code_hash) DO NOTHING`,
    [codeHash(deviceCode), intervalSeconds, now, new Date(now.getTime() + expiresInSeconds * 1000)],
  );
}

/**
 * Records a poll; returns the new required interval in seconds when the poll came too soon (answer slow_down),
 * null when it is fine.
 */
export async function checkDevicePoll(
  db: Queryable,
  deviceCode: string,
  advertisedSeconds: number,
  now: Date,
): Promise<number | null> {
  const r = await db.query<{ too_soon: boolean | null; interval_seconds: number }>(
    `WITH prev AS (
       SELECT interval_seconds, last_poll_at FROM identity.device_polls WHERE code_hash = $1 FOR UPDATE
     ), verdict AS (
       SELECT (prev.last_poll_at + make_interval(secs => prev.interval_seconds)) > $3 AS too_soon,
              GREATEST($2::int, ceil(extract(epoch FROM ($3 - prev.last_poll_at)) + $4 - $5 / 1000.0)::int) AS slowed
         FROM prev
     )
     INSERT INTO identity.device_polls AS p (code_hash, interval_seconds, last_poll_at, expires_at)
     VALUES ($1, $2, $3, $3 + interval '1 hour')
     ON CONFLICT (code_hash) DO UPDATE SET
       last_poll_at = excluded.last_poll_at,
       interval_seconds = CASE WHEN (SELECT too_soon FROM verdict)
                               THEN LEAST(3600, (SELECT slowed FROM verdict)) ELSE p.interval_seconds END
     RETURNING (SELECT too_soon FROM verdict) AS too_soon, p.interval_seconds`,
    [codeHash(deviceCode), advertisedSeconds, now, SLOW_DOWN_STEP_SECONDS, TOLERANCE_MS],
  );
  const row = r.rows[0];
  return row?.too_soon ? row.interval_seconds : null;
}

export async function purgeExpiredDevicePolls(db: Queryable, now: Date): Promise<number> {
  const r = await db.query('DELETE FROM identity.device_polls WHERE expires_at < $1', [now]);
  return r.rowCount;
}

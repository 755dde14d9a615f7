/**
 * oidc-provider's storage adapter on PostgreSQL (identity.oauth_store). One class serves every model (Session,
 * Interaction, AuthorizationCode, DeviceCode, RefreshToken, Grant, ...); rows are keyed by (model, SHA-256 of the id)
 * because for codes and refresh tokens the id is the bearer secret itself. Expired rows are invisible at once and
 * purged by `purgeExpiredOAuthRows`, except device codes: the token endpoint still finds those for
 * `EXPIRED_DEVICE_CODE_KEPT_SECONDS` after their expiry (oidc-provider checks `exp` itself), so a device that polls
 * late is told `expired_token` (RFC 8628 §3.5), not an unknown code's `invalid_grant`. When a grant is revoked
 * (refresh-token reuse, revocation, device revoke), the access tokens already issued from it are revoked too, through
 * the runtime's revocation list (`grant` entries), so every verifier refuses them within a second instead of waiting
 * for their 15 minutes to run out.
 */
import { createHash } from 'node:crypto';
import { revokeTokens, type Queryable } from '@agentgraph/runtime';
import type { Adapter, AdapterPayload } from 'oidc-provider';
import { oauthConnection } from './store-context.js';

/** Longest access-token lifetime plus clock tolerance: how long a grant's revocation must be remembered. */
export const GRANT_REVOCATION_TTL_MS = (15 * 60 + 60) * 1000;

/** How long an expired device code is still found by the token endpoint (to answer expired_token), then purged. */
export const EXPIRED_DEVICE_CODE_KEPT_SECONDS = 10 * 60;

function hashId(id: string): Buffer {
  return createHash('sha256').update(id, 'utf8').digest();
}

interface Row {
  payload: AdapterPayload;
  consumed_at: Date | string | null;
}

export function createAdapterClass(db: Queryable, now: () => Date = () => new Date()) {
  return class PostgresAdapter implements Adapter {
    constructor(readonly model: string) {}

    private get conn(): Queryable {
      return oauthConnection(db);
    }

    async upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
      const expiresAt = expiresIn ? new Date(now().getTime() + expiresIn * 1000) : null;
      await this.conn.query(
        `INSERT INTO identity.oauth_store (model, id_hash, payload, grant_id, user_code, uid, expires_at)
         VALUES ($1, $2, $3::text::jsonb, $4, $5, $6, $7)
         ON CONFLICT (model, id_hash) DO UPDATE
           SET payload = excluded.payload, grant_id = excluded.grant_id, user_code = excluded.user_code,
               uid = excluded.uid, expires_at = excluded.expires_at`,
        [
          this.model,
          hashId(id),
          JSON.stringify(payload),
          payload.grantId ?? null,
          payload.userCode ?? null,
          payload.uid ?? null,
          expiresAt,
        ],
      );
    }

    /** The row, if not expired more than `keptSeconds` ago. */
    private async one(where: string, value: unknown, keptSeconds = 0): Promise<AdapterPayload | undefined> {
      const r = await this.conn.query<Row>(
        `SELECT payload, consumed_at FROM identity.oauth_store
          WHERE model = $1 AND ${where}
            AND (expires_at IS NULL OR expires_at > $3::timestamptz - make_interval(secs => $4::int))`,
        [this.model, value, now(), keptSeconds],
      );
      const row = r.rows[0];
      if (!row) return undefined;
      const payload = row.payload;
      if (row.consumed_at) payload.consumed = Math.floor(new Date(row.consumed_at).getTime() / 1000);
      return payload;
    }

    find(id: string): Promise<AdapterPayload | undefined> {
      // The token endpoint reads device codes with ignoreExpiration and answers an expired one expired_token.
      return this.one(
        'id_hash = $2',
        hashId(id),
        this.model === 'DeviceCode' ? EXPIRED_DEVICE_CODE_KEPT_SECONDS : 0,
      );
    }

    findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
      return this.one('user_code = $2', userCode);
    }

    findByUid(uid: string): Promise<AdapterPayload | undefined> {
      return this.one('uid = $2', uid);
    }

    async consume(id: string): Promise<void> {
      await this.conn.query(
        'UPDATE identity.oauth_store SET consumed_at = $3 WHERE model = $1 AND id_hash = $2',
        [this.model, hashId(id), now()],
      );
    }

    async destroy(id: string): Promise<void> {
      await this.conn.query('DELETE FROM identity.oauth_store WHERE model = $1 AND id_hash = $2', [
        this.model,
        hashId(id),
      ]);
      // A Grant destroyed by oidc-provider means the grant is revoked: its live access tokens go with it.
      if (this.model === 'Grant') await revokeGrantTokens(this.conn, id, now());
    }

    async revokeByGrantId(grantId: string): Promise<void> {
      await this.conn.query('DELETE FROM identity.oauth_store WHERE model = $1 AND grant_id = $2', [
        this.model,
        grantId,
      ]);
      if (this.model === 'AccessToken') await revokeGrantTokens(this.conn, grantId, now());
    }
  };
}

async function revokeGrantTokens(conn: Queryable, grantId: string, at: Date): Promise<void> {
  await revokeTokens(conn, [
    { kind: 'grant', value: grantId, expiresAt: new Date(at.getTime() + GRANT_REVOCATION_TTL_MS) },
  ]);
}

/** Deletes expired rows (device codes once kept long enough), a batch at a time; returns how many went. */
export async function purgeExpiredOAuthRows(db: Queryable, batch = 1000, at = new Date()): Promise<number> {
  const r = await db.query(
    `DELETE FROM identity.oauth_store WHERE ctid IN (
       SELECT ctid FROM identity.oauth_store
        WHERE expires_at < $1
          AND (model <> 'DeviceCode' OR expires_at < $1::timestamptz - make_interval(secs => $3::int))
        LIMIT $2)`,
    [at, batch, EXPIRED_DEVICE_CODE_KEPT_SECONDS],
  );
  return r.rowCount;
}

/**
 * The authoritative revocation check identity runs before it trusts a token it is handed (token exchange, JWT
 * revocation): a direct read of runtime.token_revocations, not the propagated in-memory list other services use,
 * with the same rule (a revocation refuses tokens issued up to it).
 */
import { REVOCATION_ISSUE_SKEW_MS, subjectKey, type Queryable } from '@agentgraph/runtime';

export async function isRevoked(
  db: Queryable,
  claims: { jti?: string; gid?: string; did?: string; tid?: string; sub?: string; iat?: number },
  at: Date,
): Promise<boolean> {
  const keys: [string, string][] = [];
  if (claims.jti) keys.push(['jti', claims.jti]);
  if (claims.gid) keys.push(['grant', claims.gid]);
  if (claims.did) keys.push(['device', claims.did]);
  if (claims.tid && claims.sub) keys.push(['subject', subjectKey(claims.tid, claims.sub)]);
  if (keys.length === 0) return false;
  const r = await db.query(
    `SELECT 1 FROM runtime.token_revocations
      WHERE (kind, value) IN (SELECT * FROM unnest($1::text[], $2::text[])) AND expires_at > $3
        AND ($4::float8 IS NULL OR to_timestamp($4::float8) <= revoked_at + make_interval(secs => $5))
      LIMIT 1`,
    [keys.map((k) => k[0]), keys.map((k) => k[1]), at, claims.iat ?? null, REVOCATION_ISSUE_SKEW_MS / 1000],
  );
  return r.rowCount > 0;
}

/**
 * Devices for end-to-end tests: an ENROLLED device row as identity's device grant leaves it (with a key pair the
 * test holds, for signing intent reports) and the device's own access token as identity issues it (signed with
 * identity's active key, carrying `did`). Optionally enables remote actions through the gateway, as the device's
 * local user would.
 */
import { keyVault } from '@agentgraph/runtime';
import { randomUUID } from 'node:crypto';
import { activeSigningKey } from '@agentgraph/identity';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import type { TestPlatform, TestUser } from './platform.js';

export interface TestDevice {
  id: string;
  token: string;
  privateKey: CryptoKey;
}

/**
 * An access token for a member's device as identity issues it (ES256 with identity's active key, `at+jwt`, `did`,
 * the member's role), with `extra` claims (a sidecar's exchanged token adds `act`) and a lifetime in seconds.
 */
export async function deviceAccessToken(
  p: TestPlatform,
  user: Pick<TestUser, 'tenantId' | 'userId' | 'role'>,
  deviceId: string,
  ttlSeconds: number,
  extra: Record<string, unknown> = {},
): Promise<string> {
  const { kid, key } = await activeSigningKey(p.platform.dbs.identity, keyVault(p.platform.config));
  const iat = Math.floor(Date.now() / 1000);
  return new SignJWT({
    tid: user.tenantId,
    role: user.role,
    scope: 'api:read api:write',
    did: deviceId,
    client_id: 'agentgraph-desktop',
    ...extra,
  })
    .setProtectedHeader({ alg: 'ES256', kid, typ: 'at+jwt' })
    .setIssuer(p.platform.config.tokenIssuer)
    .setAudience(p.platform.config.tokenAudience)
    .setSubject(user.userId)
    .setIssuedAt(iat)
    .setExpirationTime(iat + ttlSeconds)
    .setJti(randomUUID())
    .sign(key);
}

export async function enrolTestDevice(
  p: TestPlatform,
  user: TestUser,
  name: string,
  opts: { enableRemoteActions?: boolean } = {},
): Promise<TestDevice> {
  const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true });
  const jwk = await exportJWK(publicKey);
  const id = await p.platform.dbs.identity.transaction(
    async (tx) => {
      const r = await tx.query<{ id: string }>(
        `INSERT INTO identity.devices
           (tenant_id, owner_id, name, platform, status, public_jwk, key_thumbprint, client_id, enrolled_at)
         VALUES ($1, $2, $3, 'linux', 'ENROLLED', $4::text::jsonb, $5, 'agentgraph-desktop', now()) RETURNING id`,
        [user.tenantId, user.userId, name, JSON.stringify(jwk), await calculateJwkThumbprint(jwk, 'sha256')],
      );
      return r.rows[0]!.id;
    },
    { 'app.tenant_id': user.tenantId, 'app.principal_id': user.userId },
  );
  const token = await deviceAccessToken(p, user, id, 900);
  if (opts.enableRemoteActions) {
    const r = await p.gql(
      'mutation E($k: ID!) { setRemoteActionsEnabled(enabled: true, idempotencyKey: $k) { device { id } } }',
      { k: randomUUID() },
      token,
    );
    if (r.errors) throw new Error(`enabling remote actions failed: ${JSON.stringify(r.errors)}`);
  }
  return { id, token, privateKey };
}

/**
 * Signing keys of a tenant's catalog (table catalog.signing_keys): ed25519 keys for TUF roles and the ES256 key of
 * the analyzer. Generated here and stored unencrypted in the database (production would keep them in a KMS).
 */
import { createHash, createPrivateKey, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import type { Queryable } from '@agentgraph/runtime';
import { Key, Signature } from '@tufjs/models';

export const TOP_ROLES = ['root', 'targets', 'snapshot', 'timestamp'] as const;
export const CHANNELS = ['alpha', 'beta', 'stable'] as const;
export type TopRole = (typeof TOP_ROLES)[number];
export type Channel = (typeof CHANNELS)[number];
export type TufRole = TopRole | Channel;
export const TUF_ROLES: readonly TufRole[] = [...TOP_ROLES, ...CHANNELS];

export interface TufKey {
  keyId: string;
  role: TufRole;
  /** Raw ed25519 public key, hex. */
  publicHex: string;
  privateKey: KeyObject;
}

/** The TUF key object of a key ({keytype, scheme, keyval}). */
export function tufKeyJson(k: Pick<TufKey, 'publicHex'>) {
  return { keytype: 'ed25519', scheme: 'ed25519', keyval: { public: k.publicHex } };
}

export function newTufKey(role: TufRole): TufKey & { privatePem: string } {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const spki = publicKey.export({ format: 'der', type: 'spki' });
  const publicHex = spki.subarray(spki.length - 32).toString('hex');
  // The key id is the SHA-256 of the key's canonical JSON, as python-tuf computes it.
  const canonical = `{"keytype":"ed25519","keyval":{"public":"${publicHex}"},"scheme":"ed25519"}`;
  const keyId = createHash('sha256').update(canonical).digest('hex');
  const privatePem = privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
  return { keyId, role, publicHex, privateKey, privatePem };
}

export async function insertTufKey(tx: Queryable, tenantId: string, key: ReturnType<typeof newTufKey>) {
  await tx.query(
    `INSERT INTO catalog.signing_keys (tenant_id, key_id, role, algorithm, public_key, private_key)
     VALUES ($1, $2, $3, 'ed25519', $4, $5)`,
    [tenantId, key.keyId, key.role, key.publicHex, key.privatePem],
  );
}

/** Active TUF keys by role. */
export async function activeTufKeys(tx: Queryable): Promise<Map<TufRole, TufKey[]>> {
  const r = await tx.query<{ key_id: string; role: TufRole; public_key: string; private_key: string }>(
    `SELECT key_id, role, public_key, private_key FROM catalog.signing_keys
      WHERE state = 'active' AND role <> 'analyzer' ORDER BY created_at, key_id`,
  );
  const out = new Map<TufRole, TufKey[]>();
  for (const row of r.rows) {
    const list = out.get(row.role) ?? [];
    list.push({
      keyId: row.key_id,
      role: row.role,
      publicHex: row.public_key,
      privateKey: createPrivateKey(row.private_key),
    });
    out.set(row.role, list);
  }
  return out;
}

export async function revokeKeys(tx: Queryable, role: TufRole, now: Date): Promise<void> {
  await tx.query(
    `UPDATE catalog.signing_keys SET state = 'revoked', revoked_at = $2 WHERE role = $1 AND state = 'active'`,
    [role, now.toISOString()],
  );
}

/** A @tufjs/models signer for Metadata.sign. */
export function signerOf(k: TufKey): (data: Buffer) => Signature {
  return (data) => new Signature({ keyID: k.keyId, sig: sign(null, data, k.privateKey).toString('hex') });
}

export function modelKey(k: TufKey): Key {
  return Key.fromJSON(k.keyId, tufKeyJson(k));
}

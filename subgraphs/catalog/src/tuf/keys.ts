/**
 * Signing keys of a tenant's catalog (table catalog.signing_keys): ed25519 keys for TUF roles and the ES256 key of
 * the analyzer. Generated here; the private halves are stored sealed with the runtime's envelope encryption (a
 * key-encryption key from the environment: a dump or backup of the table holds ciphertext only), each bound to its
 * tenant and key id, and only the catalog's role can read the table.
 */
import { createHash, createPrivateKey, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { resealStoredKeys, type KeyVault, type Queryable } from '@agentgraph/runtime';
import { Signature } from '@tufjs/models';

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

/** What a stored private half is sealed for: its tenant and key id (it opens on no other row). */
export const sealContextOf = (tenantId: string, keyId: string) => `catalog.signing_key/${tenantId}/${keyId}`;

/** The stored form of a private key (PEM): sealed, as JSON text. */
export function sealedPem(vault: KeyVault, tenantId: string, keyId: string, pem: string): string {
  return JSON.stringify(vault.seal(pem, sealContextOf(tenantId, keyId)));
}

/**
 * Seals every stored private key, of every tenant, not sealed under the active key-encryption key (keys from
 * before encryption, or an older KEK's), in batches. Safe across replicas. Returns how many it sealed.
 */
export function sealStoredCatalogKeys(db: Queryable, vault: KeyVault, pageSize = 500): Promise<number> {
  return resealStoredKeys<{ tenant_id: string; key_id: string; private_key: string }>(
    vault,
    {
      due: async (kek, limit) =>
        (
          await db.query('SELECT tenant_id, key_id, private_key FROM catalog.signing_keys_to_seal($1, $2)', [
            kek,
            limit,
          ])
        ).rows as never,
      stored: (row) => row.private_key,
      context: (row) => sealContextOf(row.tenant_id, row.key_id),
      replace: async (row, sealed) =>
        (
          await db.query<{ ok: boolean }>('SELECT catalog.reseal_signing_key($1, $2, $3, $4) AS ok', [
            row.tenant_id,
            row.key_id,
            row.private_key,
            JSON.stringify(sealed),
          ])
        ).rows[0]?.ok === true,
    },
    pageSize,
  );
}

export async function insertTufKey(
  tx: Queryable,
  tenantId: string,
  key: ReturnType<typeof newTufKey>,
  vault: KeyVault,
) {
  await tx.query(
    `INSERT INTO catalog.signing_keys (tenant_id, key_id, role, algorithm, public_key, private_key)
     VALUES ($1, $2, $3, 'ed25519', $4, $5)`,
    [tenantId, key.keyId, key.role, key.publicHex, sealedPem(vault, tenantId, key.keyId, key.privatePem)],
  );
}

/** Active TUF keys by role. */
export async function activeTufKeys(tx: Queryable, vault: KeyVault): Promise<Map<TufRole, TufKey[]>> {
  const r = await tx.query<{
    tenant_id: string;
    key_id: string;
    role: TufRole;
    public_key: string;
    private_key: string;
  }>(
    `SELECT tenant_id, key_id, role, public_key, private_key FROM catalog.signing_keys
      WHERE state = 'active' AND role <> 'analyzer' ORDER BY created_at, key_id`,
  );
  const out = new Map<TufRole, TufKey[]>();
  for (const row of r.rows) {
    const list = out.get(row.role) ?? [];
    list.push({
      keyId: row.key_id,
      role: row.role,
      publicHex: row.public_key,
      privateKey: createPrivateKey(vault.open(row.private_key, sealContextOf(row.tenant_id, row.key_id))),
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

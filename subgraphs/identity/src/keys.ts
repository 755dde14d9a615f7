/**
 * The access-token signing keys (ES256). One key is active at a time; its private half lives in the database
 * (identity.signing_keys) so every replica signs with the same key, sealed with the runtime's envelope encryption
 * (a key-encryption key from the environment: a database dump or backup holds ciphertext only), and only identity's
 * role may call the SECURITY DEFINER functions of migrations/001_identity.sql that read it. `kid` is the RFC 7638
 * thumbprint of the public key. Nothing here logs key material.
 */
import { resealStoredKeys, type KeyVault, type Queryable } from '@agentgraph/runtime';
import {
  calculateJwkThumbprint,
  exportJWK,
  generateKeyPair,
  importJWK,
  type CryptoKey,
  type JWK,
} from 'jose';

export const SIGNING_ALG = 'ES256';

/** The members of an EC public JWK that may be published; everything else (notably `d`) is dropped. */
const PUBLIC_MEMBERS = ['kty', 'crv', 'x', 'y', 'kid', 'alg', 'use'] as const;

export interface GeneratedSigningKey {
  kid: string;
  publicJwk: JWK;
  privateJwk: JWK;
}

export interface ActiveSigningKey {
  kid: string;
  key: CryptoKey;
}

export function publicPartOf(jwk: JWK): JWK {
  const out: JWK = {};
  for (const m of PUBLIC_MEMBERS) if (jwk[m] !== undefined) (out as Record<string, unknown>)[m] = jwk[m];
  return out;
}

/** A fresh ES256 key pair as JWKs, kid = RFC 7638 SHA-256 thumbprint. */
export async function generateSigningKey(): Promise<GeneratedSigningKey> {
  const { publicKey, privateKey } = await generateKeyPair(SIGNING_ALG, { extractable: true });
  const pub = await exportJWK(publicKey);
  const priv = await exportJWK(privateKey);
  const kid = await calculateJwkThumbprint(pub, 'sha256');
  const publicJwk = publicPartOf({ ...pub, kid, alg: SIGNING_ALG, use: 'sig' });
  return { kid, publicJwk, privateJwk: { ...publicJwk, d: priv.d } };
}

interface KeyRow {
  kid: string;
  alg: string;
  /** Sealed (runtime SealedSecret). */
  private_jwk: unknown;
  created?: boolean;
}

/** What a private half is sealed for: the key's id (a sealed half copied onto another key does not open). */
const contextOf = (kid: string) => `identity.signing_key/${kid}`;

function sealPrivate(vault: KeyVault, key: GeneratedSigningKey): string {
  return JSON.stringify(vault.seal(JSON.stringify(key.privateJwk), contextOf(key.kid)));
}

function openPrivate(vault: KeyVault, row: { kid: string; private_jwk: unknown }): JWK {
  return JSON.parse(vault.open(row.private_jwk, contextOf(row.kid))) as JWK;
}

/**
 * Seals every stored private half that is not sealed under the active key-encryption key: keys stored before
 * encryption, and keys sealed under an older KEK (rotation). Safe across replicas (each update applies only if the
 * row is still what was read). Returns how many it sealed.
 */
export function sealStoredSigningKeys(db: Queryable, vault: KeyVault): Promise<number> {
  return resealStoredKeys<{ kid: string; private_jwk: unknown }>(vault, {
    // A handful of rows (active, pending, retired): one page (the function reads them all).
    due: async (kek) =>
      (await db.query('SELECT kid, private_jwk FROM identity.signing_keys_to_seal($1)', [kek])).rows as never,
    stored: (row) => row.private_jwk,
    context: (row) => contextOf(row.kid),
    replace: async (row, sealed) =>
      (
        await db.query<{ ok: boolean }>(
          'SELECT identity.reseal_signing_key($1, $2::text::jsonb, $3::text::jsonb) AS ok',
          [row.kid, JSON.stringify(row.private_jwk), JSON.stringify(sealed)],
        )
      ).rows[0]?.ok === true,
  });
}

/**
 * Makes sure an active signing key exists, creating and storing one if there is none. Safe to call from
 * several replicas at once: the database keeps exactly one active key and everyone gets that one.
 */
export async function ensureSigningKey(
  db: Queryable,
  vault: KeyVault,
): Promise<{ kid: string; created: boolean }> {
  const row = await ensureRow(db, vault);
  return { kid: row.kid, created: row.created ?? false };
}

async function ensureRow(db: Queryable, vault: KeyVault): Promise<KeyRow> {
  const existing = await db.query<KeyRow>('SELECT kid, alg, private_jwk FROM identity.active_signing_key()');
  if (existing.rows[0]) return existing.rows[0];
  const candidate = await generateSigningKey();
  const stored = await db.query<KeyRow>(
    'SELECT kid, alg, private_jwk, created FROM identity.ensure_signing_key($1, $2::text::jsonb, $3::text::jsonb)',
    [candidate.kid, JSON.stringify(candidate.publicJwk), sealPrivate(vault, candidate)],
  );
  const row = stored.rows[0];
  if (!row) throw new Error('identity.ensure_signing_key returned no key');
  return row;
}

/** Imported private keys by kid (a kid names one immutable key, so the cache never goes stale). */
const imported = new Map<string, Promise<CryptoKey>>();

/** The key new tokens are signed with (created on first use if start-up has not done it yet). */
export async function activeSigningKey(db: Queryable, vault: KeyVault): Promise<ActiveSigningKey> {
  const row = await ensureRow(db, vault);
  let key = imported.get(row.kid);
  if (!key) {
    key = (async () => importJWK(openPrivate(vault, row), SIGNING_ALG) as Promise<CryptoKey>)();
    key.catch(() => imported.delete(row.kid));
    imported.set(row.kid, key);
  }
  return { kid: row.kid, key: await key };
}

/** The JWKS document: public halves of the active key and of keys retired recently enough to still matter. */
export async function publishedJwks(db: Queryable): Promise<{ keys: JWK[] }> {
  const r = await db.query<{ kid: string; alg: string; public_jwk: JWK }>(
    'SELECT kid, alg, public_jwk FROM identity.published_signing_keys()',
  );
  return { keys: r.rows.map((row) => publicPartOf({ ...row.public_jwk, kid: row.kid, alg: row.alg })) };
}

export type KeyState = 'active' | 'pending' | 'retired';

export interface IssuerKey {
  kid: string;
  state: KeyState;
  /** Private JWK with kid, alg and use set (never logged, never served). */
  privateJwk: JWK;
}

/** Every key the issuer holds: active first, then the pending one, then those retired within the hour. */
export async function issuerKeys(db: Queryable, vault: KeyVault): Promise<IssuerKey[]> {
  const r = await db.query<{ kid: string; alg: string; private_jwk: unknown; state: KeyState }>(
    'SELECT kid, alg, private_jwk, state FROM identity.issuer_signing_keys()',
  );
  return r.rows.map((row) => ({
    kid: row.kid,
    state: row.state,
    privateJwk: { ...openPrivate(vault, row), kid: row.kid, alg: row.alg, use: 'sig' },
  }));
}

/**
 * Makes sure a pending key is published ahead of rotation (so verifiers have it cached before it signs anything).
 * Safe to call from several replicas at once.
 */
export async function ensurePendingSigningKey(db: Queryable, vault: KeyVault): Promise<{ created: boolean }> {
  const candidate = await generateSigningKey();
  const r = await db.query<{ created: boolean }>(
    'SELECT identity.ensure_pending_signing_key($1, $2::text::jsonb, $3::text::jsonb) AS created',
    [candidate.kid, JSON.stringify(candidate.publicJwk), sealPrivate(vault, candidate)],
  );
  return { created: r.rows[0]?.created ?? false };
}

/**
 * Rotates the signing key: the pending key (already published) becomes active, the active one is retired and stays
 * in the JWKS for an hour, and a fresh key becomes pending. With `minAgeSeconds`, only when the active key is at
 * least that old (the scheduled rotation: replicas that race rotate once). Returns the new active kid, or null when
 * nothing was rotated.
 */
export async function rotateSigningKey(
  db: Queryable,
  vault: KeyVault,
  minAgeSeconds = 0,
): Promise<{ kid: string | null }> {
  await ensureRow(db, vault);
  const next = await generateSigningKey();
  const r = await db.query<{ kid: string | null }>(
    `SELECT identity.rotate_signing_key($1, $2::text::jsonb, $3::text::jsonb, make_interval(secs => $4)) AS kid`,
    [next.kid, JSON.stringify(next.publicJwk), sealPrivate(vault, next), minAgeSeconds],
  );
  const kid = r.rows[0]?.kid ?? null;
  // Without a pending key the new one became active directly; publish the next one now.
  if (kid) await ensurePendingSigningKey(db, vault);
  return { kid };
}

/**
 * Coordination's intent signing keys (ES256), separate from identity's token keys. The private halves live in
 * coordination.intent_signing_keys, sealed with the runtime's envelope encryption (a key-encryption key from the
 * environment) and reachable only through the SECURITY DEFINER functions of migrations/002_intents.sql, which only
 * coordination's role may call, so every replica signs with the same key. States: one active (signs), one pending
 * (published ahead, so desktops already hold it when it becomes active), retired (published 2 h more).
 * `kid` is the RFC 7638 thumbprint. Nothing here logs key material.
 */
import { resealStoredKeys, type KeyVault, type Queryable } from '@agentgraph/runtime';
import {
  calculateJwkThumbprint,
  exportJWK,
  generateKeyPair,
  importJWK,
  type CryptoKey,
  type JSONWebKeySet,
  type JWK,
} from 'jose';

export const INTENT_SIGNING_ALG = 'ES256';
/** Where the public keys are served (coordination's origin; the gateway does not proxy it). */
export const INTENT_JWKS_PATH = '/.well-known/intent-jwks.json';

const PUBLIC_MEMBERS = ['kty', 'crv', 'x', 'y', 'kid', 'alg', 'use'] as const;

function publicPartOf(jwk: JWK): JWK {
  const out: Record<string, unknown> = {};
  for (const m of PUBLIC_MEMBERS) if (jwk[m] !== undefined) out[m] = jwk[m];
  return out as JWK;
}

async function generateIntentKey(): Promise<{ kid: string; publicJwk: JWK; privateJwk: JWK }> {
  const { publicKey, privateKey } = await generateKeyPair(INTENT_SIGNING_ALG, { extractable: true });
  const pub = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(pub, 'sha256');
  const publicJwk = publicPartOf({ ...pub, kid, alg: INTENT_SIGNING_ALG, use: 'sig' });
  return { kid, publicJwk, privateJwk: { ...publicJwk, d: (await exportJWK(privateKey)).d } };
}

/** What a private half is sealed for: the key's id (a sealed half copied onto another key does not open). */
const contextOf = (kid: string) => `coordination.intent_signing_key/${kid}`;

/** Offers fresh keys until there is an active and a pending key (at most two offers; safe across replicas). */
export async function ensureIntentKeys(db: Queryable, vault: KeyVault): Promise<void> {
  for (let i = 0; i < 2; i++) {
    const k = await generateIntentKey();
    const sealed = vault.seal(JSON.stringify(k.privateJwk), contextOf(k.kid));
    const r = await db.query<{ slot: string }>(
      'SELECT coordination.offer_intent_key($1, $2::text::jsonb, $3::text::jsonb) AS slot',
      [k.kid, JSON.stringify(k.publicJwk), JSON.stringify(sealed)],
    );
    if (r.rows[0]?.slot === 'unused') return;
  }
}

/**
 * Seals every stored private half not sealed under the active key-encryption key (keys from before encryption, or
 * an older KEK's). Safe across replicas. Returns how many it sealed.
 */
export function sealStoredIntentKeys(db: Queryable, vault: KeyVault): Promise<number> {
  return resealStoredKeys<{ kid: string; private_jwk: unknown }>(vault, {
    // A handful of rows (active, pending, retired): one page (the function reads them all).
    due: async (kek) =>
      (await db.query('SELECT kid, private_jwk FROM coordination.intent_keys_to_seal($1)', [kek]))
        .rows as never,
    stored: (row) => row.private_jwk,
    context: (row) => contextOf(row.kid),
    replace: async (row, sealed) =>
      (
        await db.query<{ ok: boolean }>(
          'SELECT coordination.reseal_intent_key($1, $2::text::jsonb, $3::text::jsonb) AS ok',
          [row.kid, JSON.stringify(row.private_jwk), JSON.stringify(sealed)],
        )
      ).rows[0]?.ok === true,
  });
}

/** Promotes the pending key when the active one is older than `minAgeSeconds`, then offers a new pending key. */
export async function rotateIntentKey(
  db: Queryable,
  vault: KeyVault,
  minAgeSeconds: number,
): Promise<string | null> {
  const r = await db.query<{ kid: string | null }>('SELECT coordination.rotate_intent_key($1) AS kid', [
    minAgeSeconds,
  ]);
  await ensureIntentKeys(db, vault);
  return r.rows[0]?.kid ?? null;
}

export async function publishedIntentJwks(db: Queryable): Promise<JSONWebKeySet> {
  const r = await db.query<{ kid: string; alg: string; public_jwk: JWK | string }>(
    'SELECT kid, alg, public_jwk FROM coordination.published_intent_keys()',
  );
  return {
    keys: r.rows.map((row) => {
      const jwk = typeof row.public_jwk === 'string' ? (JSON.parse(row.public_jwk) as JWK) : row.public_jwk;
      return publicPartOf({ ...jwk, kid: row.kid, alg: row.alg, use: 'sig' });
    }),
  };
}

export interface ActiveIntentKey {
  kid: string;
  key: CryptoKey;
}

/** How long a process keeps using the active key it read before asking again (rotation reaches it within this). */
const ACTIVE_KEY_TTL_MS = 60_000;
const activeCache = new WeakMap<object, { at: number; key: Promise<ActiveIntentKey> }>();

async function loadActive(db: Queryable, vault: KeyVault): Promise<ActiveIntentKey> {
  let r = await db.query<{ kid: string; private_jwk: unknown }>(
    'SELECT kid, private_jwk FROM coordination.active_intent_key()',
  );
  if (!r.rows[0]) {
    await ensureIntentKeys(db, vault);
    r = await db.query('SELECT kid, private_jwk FROM coordination.active_intent_key()');
  }
  const row = r.rows[0];
  if (!row)
    throw new Error('No active intent signing key after creating one; check coordination migrations.');
  const jwk = JSON.parse(vault.open(row.private_jwk, contextOf(row.kid))) as JWK;
  return { kid: row.kid, key: (await importJWK(jwk, INTENT_SIGNING_ALG)) as CryptoKey };
}

/** The active signing key, cached per database handle for a minute. */
export function activeIntentKey(
  db: Queryable,
  vault: KeyVault,
  now: number = Date.now(),
): Promise<ActiveIntentKey> {
  const hit = activeCache.get(db);
  if (hit && now - hit.at < ACTIVE_KEY_TTL_MS) return hit.key;
  const key = loadActive(db, vault);
  activeCache.set(db, { at: now, key });
  key.catch(() => activeCache.delete(db));
  return key;
}

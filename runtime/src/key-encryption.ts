/**
 * Envelope encryption of the private keys the services keep in the database (identity's token keys, coordination's
 * intent keys, the catalog's TUF and analyzer keys). A database dump, a backup or a role that can read the table
 * yields ciphertext; only a process holding a key-encryption key (KEK, from the environment or a file, never the
 * database) can use a stored key.
 *
 * Each stored secret gets its own random 256-bit data key (DEK): the secret is sealed with the DEK (AES-256-GCM), the
 * DEK is wrapped with the active KEK (AES-256-GCM). Both carry the secret's context (table and key id) as additional
 * authenticated data, so a sealed value copied onto another row does not open. Rotation of the KEK: put the new key
 * first in `KEY_ENCRYPTION_KEYS` and keep the old one after it; each service re-wraps what it stores under the new key
 * when it starts (`isCurrent` false → seal again), after which the old key can be dropped (see runtime/README.md).
 *
 * Nothing here logs or returns key material in errors.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/** The stored form (JSON; in a jsonb column as is, in a text column as its text). */
export interface SealedSecret {
  /** Format version. */
  sealed: 1;
  /** Id of the KEK that wrapped the data key (first 16 hex digits of its SHA-256). */
  kek: string;
  /** The data key wrapped by the KEK: base64url of IV (12) ‖ ciphertext (32) ‖ tag (16). */
  dek: string;
  /** The secret sealed by the data key: base64url of IV (12) ‖ ciphertext ‖ tag (16). */
  data: string;
}

export class KeyEncryptionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KeyEncryptionError';
  }
}

const IV = 12;
const TAG = 16;

function gcmSeal(key: Buffer, plaintext: Buffer, aad: string): string {
  const iv = randomBytes(IV);
  const c = createCipheriv('aes-256-gcm', key, iv);
  c.setAAD(Buffer.from(aad, 'utf8'));
  const ct = Buffer.concat([c.update(plaintext), c.final()]);
  return Buffer.concat([iv, ct, c.getAuthTag()]).toString('base64url');
}

function gcmOpen(key: Buffer, sealed: string, aad: string): Buffer {
  const raw = Buffer.from(sealed, 'base64url');
  if (raw.length < IV + TAG) throw new KeyEncryptionError('sealed value is truncated');
  const d = createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV));
  d.setAAD(Buffer.from(aad, 'utf8'));
  d.setAuthTag(raw.subarray(raw.length - TAG));
  return Buffer.concat([d.update(raw.subarray(IV, raw.length - TAG)), d.final()]);
}

export function keyEncryptionKeyId(key: Buffer): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 16);
}

/**
 * Parses KEKs: base64 or base64url of exactly 32 bytes each, separated by commas, spaces or new lines (a file's
 * `#` comment lines are skipped). `source` names the variable or file in errors; the values are never echoed.
 */
export function parseKeyEncryptionKeys(text: string, source: string): Buffer[] {
  const items = text
    .split('\n')
    .filter((line) => !line.trim().startsWith('#'))
    .join(',')
    .split(/[\s,]+/)
    .filter(Boolean);
  if (items.length === 0) throw new KeyEncryptionError(`${source}: no key-encryption key in it`);
  return items.map((item, i) => {
    const key = /^[A-Za-z0-9+/_-]+={0,2}$/.test(item) ? Buffer.from(item, 'base64') : Buffer.alloc(0);
    if (key.length !== 32) {
      throw new KeyEncryptionError(
        `${source}: key ${i + 1} is not base64 of 32 bytes (make one with: openssl rand -base64 32)`,
      );
    }
    return key;
  });
}

export function isSealedSecret(value: unknown): value is SealedSecret {
  const v = typeof value === 'string' ? tryParse(value) : value;
  return (
    typeof v === 'object' &&
    v !== null &&
    (v as SealedSecret).sealed === 1 &&
    typeof (v as SealedSecret).kek === 'string' &&
    typeof (v as SealedSecret).dek === 'string' &&
    typeof (v as SealedSecret).data === 'string'
  );
}

function tryParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

export class KeyVault {
  private readonly keys: ReadonlyMap<string, Buffer>;
  /** Id of the KEK new secrets are wrapped with. */
  readonly activeId: string;

  /** `keys`: the KEKs, the first one active. */
  constructor(keys: readonly Buffer[]) {
    if (keys.length === 0) throw new KeyEncryptionError('at least one key-encryption key is needed');
    for (const k of keys)
      if (k.length !== 32) throw new KeyEncryptionError('a key-encryption key is 32 bytes');
    this.keys = new Map(keys.map((k) => [keyEncryptionKeyId(k), k]));
    this.activeId = keyEncryptionKeyId(keys[0]!);
  }

  /** Seals `secret` for the row named by `context` (e.g. `identity.signing_keys/<kid>`). */
  seal(secret: string, context: string): SealedSecret {
    const dek = randomBytes(32);
    try {
      return {
        sealed: 1,
        kek: this.activeId,
        dek: gcmSeal(this.keys.get(this.activeId)!, dek, `agentgraph/dek/${context}`),
        data: gcmSeal(dek, Buffer.from(secret, 'utf8'), `agentgraph/key/${context}`),
      };
    } finally {
      dek.fill(0);
    }
  }

  /** The secret sealed for `context`; throws KeyEncryptionError for anything else (plain, tampered, moved, unknown KEK). */
  open(stored: unknown, context: string): string {
    const v = typeof stored === 'string' ? tryParse(stored) : stored;
    if (!isSealedSecret(v)) {
      throw new KeyEncryptionError(
        `the stored key ${context} is not encrypted; restart the service that owns it to encrypt stored keys`,
      );
    }
    const kek = this.keys.get(v.kek);
    if (!kek) {
      throw new KeyEncryptionError(
        `the stored key ${context} is encrypted with key-encryption key ${v.kek}, which KEY_ENCRYPTION_KEYS does not ` +
          'hold: add that key back (after the active one) until every stored key has been re-encrypted',
      );
    }
    let dek: Buffer | null = null;
    try {
      dek = gcmOpen(kek, v.dek, `agentgraph/dek/${context}`);
      return gcmOpen(dek, v.data, `agentgraph/key/${context}`).toString('utf8');
    } catch (err) {
      if (err instanceof KeyEncryptionError) throw err;
      throw new KeyEncryptionError(
        `the stored key ${context} does not decrypt (altered, or stored for another key)`,
      );
    } finally {
      dek?.fill(0);
    }
  }

  /** Whether `stored` is sealed with the active KEK (false for plain values and other KEKs: seal it again). */
  isCurrent(stored: unknown): boolean {
    const v = typeof stored === 'string' ? tryParse(stored) : stored;
    return isSealedSecret(v) && v.kek === this.activeId;
  }

  /**
   * What to store instead of `stored` when it is not current: a plain (legacy) value sealed, or a sealed one
   * opened with its KEK and sealed with the active one; null when it is current already.
   */
  reseal(stored: unknown, context: string): SealedSecret | null {
    if (this.isCurrent(stored)) return null;
    const secret = isSealedSecret(stored)
      ? this.open(stored, context)
      : typeof stored === 'string'
        ? stored
        : JSON.stringify(stored);
    return this.seal(secret, context);
  }
}

/** One table of stored keys, as `resealStoredKeys` walks it. */
export interface StoredKeys<Row> {
  /** Up to `limit` rows whose stored key is not sealed under the KEK `kek` (plain, or another KEK's). */
  due(kek: string, limit: number): Promise<Row[]>;
  /** The stored value of a row (a sealed value, or a plain key from before encryption). */
  stored(row: Row): unknown;
  /** What the row's key is sealed for (`KeyVault.seal`'s context). */
  context(row: Row): string;
  /** Stores `sealed` in place of the row's value if that is still what `due` read; whether it did. */
  replace(row: Row, sealed: SealedSecret): Promise<boolean>;
}

/**
 * Seals every stored key that is not sealed under the vault's active KEK (keys from before encryption, keys under
 * an older KEK), page by page; each replacement is a compare-and-set, so replicas starting together are safe.
 * Returns how many it sealed. Every service runs this for its own keys when it starts.
 */
export async function resealStoredKeys<Row>(
  vault: KeyVault,
  table: StoredKeys<Row>,
  pageSize = 500,
): Promise<number> {
  let sealed = 0;
  for (;;) {
    const rows = await table.due(vault.activeId, pageSize);
    let changed = 0;
    for (const row of rows) {
      const next = vault.reseal(table.stored(row), table.context(row));
      if (next && (await table.replace(row, next))) changed++;
    }
    sealed += changed;
    // A short page is the last; a page where nothing changed (another replica got there first) ends it too.
    if (rows.length < pageSize || changed === 0) return sealed;
  }
}

const vaults = new WeakMap<readonly Buffer[], KeyVault>();

/** The vault of a configuration (`config.keyEncryptionKeys`), made once per key list. */
export function keyVault(config: { keyEncryptionKeys: readonly Buffer[] }): KeyVault {
  let v = vaults.get(config.keyEncryptionKeys);
  if (!v) vaults.set(config.keyEncryptionKeys, (v = new KeyVault(config.keyEncryptionKeys)));
  return v;
}

/** Envelope encryption of stored private keys (key-encryption.ts): sealing, binding, tampering, KEK rotation. */
import { describe, expect, it } from 'vitest';
import {
  isSealedSecret,
  KeyEncryptionError,
  keyEncryptionKeyId,
  KeyVault,
  parseKeyEncryptionKeys,
  type SealedSecret,
} from '../src/key-encryption.js';

const k1 = Buffer.alloc(32, 1);
const k2 = Buffer.alloc(32, 2);
const secret = JSON.stringify({ kty: 'EC', crv: 'P-256', x: 'x', y: 'y', d: 'the-private-scalar' });

describe('KeyVault', () => {
  it('seals with a fresh data key each time and opens only for the same context', () => {
    const vault = new KeyVault([k1]);
    const a = vault.seal(secret, 'identity.signing_key/kid-1');
    const b = vault.seal(secret, 'identity.signing_key/kid-1');
    expect(a).toMatchObject({ sealed: 1, kek: keyEncryptionKeyId(k1) });
    expect(a.dek).not.toBe(b.dek);
    expect(a.data).not.toBe(b.data);
    expect(JSON.stringify(a)).not.toContain('the-private-scalar');
    expect(vault.open(a, 'identity.signing_key/kid-1')).toBe(secret);
    // Stored as JSON text (a text column) it opens the same.
    expect(vault.open(JSON.stringify(b), 'identity.signing_key/kid-1')).toBe(secret);
    // Copied onto another key's row, it does not open.
    expect(() => vault.open(a, 'identity.signing_key/kid-2')).toThrow(KeyEncryptionError);
    expect(() => vault.open(a, 'identity.signing_key/kid-2')).toThrow(/does not decrypt/);
  });

  it('refuses altered data, an altered or swapped data key, and plain values, without echoing them', () => {
    const vault = new KeyVault([k1]);
    const s = vault.seal(secret, 'ctx');
    const flip = (b64: string, at: number) => {
      const raw = Buffer.from(b64, 'base64url');
      raw[at] = raw[at]! ^ 1;
      return raw.toString('base64url');
    };
    const other = vault.seal('another secret', 'ctx');
    const cases: SealedSecret[] = [
      { ...s, data: flip(s.data, 20) },
      { ...s, dek: flip(s.dek, 20) },
      { ...s, dek: other.dek },
      { ...s, data: s.data.slice(0, 10) },
    ];
    for (const c of cases) expect(() => vault.open(c, 'ctx')).toThrow(KeyEncryptionError);
    expect(() => vault.open(JSON.parse(secret), 'ctx')).toThrow(/is not encrypted/);
    try {
      vault.open(secret, 'ctx');
    } catch (err) {
      expect((err as Error).message).not.toContain('the-private-scalar');
    }
  });

  it('rotates: the first key seals, every listed key opens, an unlisted key is named in the error', () => {
    const old = new KeyVault([k1]);
    const sealed = old.seal(secret, 'ctx');
    const rotated = new KeyVault([k2, k1]);
    expect(rotated.activeId).toBe(keyEncryptionKeyId(k2));
    expect(rotated.open(sealed, 'ctx')).toBe(secret);
    expect(rotated.isCurrent(sealed)).toBe(false);
    const resealed = rotated.reseal(sealed, 'ctx')!;
    expect(resealed.kek).toBe(keyEncryptionKeyId(k2));
    expect(rotated.isCurrent(resealed)).toBe(true);
    expect(rotated.reseal(resealed, 'ctx')).toBeNull();
    // Once everything is resealed the old key can go; a value still under it says which key it needs.
    const onlyNew = new KeyVault([k2]);
    expect(onlyNew.open(resealed, 'ctx')).toBe(secret);
    expect(() => onlyNew.open(sealed, 'ctx')).toThrow(keyEncryptionKeyId(k1));
  });

  it('seals a plain (pre-encryption) value on reseal: text as is, a JSON object as its JSON', () => {
    const vault = new KeyVault([k1]);
    const pem = '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n';
    expect(vault.open(vault.reseal(pem, 'c')!, 'c')).toBe(pem);
    const jwk = JSON.parse(secret) as Record<string, string>;
    expect(JSON.parse(vault.open(vault.reseal(jwk, 'c')!, 'c'))).toEqual(jwk);
    expect(isSealedSecret(vault.reseal(jwk, 'c'))).toBe(true);
    expect(isSealedSecret(jwk)).toBe(false);
  });
});

describe('parseKeyEncryptionKeys', () => {
  it('reads base64 and base64url keys, comma or line separated, skipping comment lines', () => {
    expect(parseKeyEncryptionKeys(`${k1.toString('base64')}, ${k2.toString('base64url')}`, 'X')).toEqual([
      k1,
      k2,
    ]);
    expect(
      parseKeyEncryptionKeys(`# rotated 2026-12\n${k2.toString('base64')}\n${k1.toString('base64')}\n`, 'F'),
    ).toEqual([k2, k1]);
  });

  it('refuses keys that are not 32 bytes, and empty input, naming the source but not the value', () => {
    const short = Buffer.alloc(16, 5).toString('base64');
    expect(() => parseKeyEncryptionKeys(short, 'KEY_ENCRYPTION_KEYS')).toThrow(
      /KEY_ENCRYPTION_KEYS: key 1 is not base64 of 32 bytes/,
    );
    try {
      parseKeyEncryptionKeys(short, 'KEY_ENCRYPTION_KEYS');
    } catch (err) {
      expect((err as Error).message).not.toContain(short);
    }
    expect(() => parseKeyEncryptionKeys('not*base64', 'X')).toThrow(/key 1/);
    expect(() => parseKeyEncryptionKeys('# nothing\n', 'F')).toThrow(/no key-encryption key/);
  });
});

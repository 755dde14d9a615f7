/** scrypt password hashes (format, verification, parameters, rehash) and the password policy. */
import { describe, expect, it } from 'vitest';
import {
  checkPasswordPolicy,
  CURRENT_PARAMS,
  hashPassword,
  needsRehash,
  verifyPassword,
} from '../src/passwords.js';

const FIXED_SALT = (n: number) => Buffer.alloc(n, 7);
const CHEAP = { N: 1024, r: 8, p: 1 };

describe('hashPassword / verifyPassword', () => {
  it("stores scrypt$N$r$p$salt$hash with 16-byte salt and 32-byte key at today's parameters", async () => {
    const stored = await hashPassword('correct horse battery staple');
    const m = /^scrypt\$(\d+)\$(\d+)\$(\d+)\$([A-Za-z0-9_-]+)\$([A-Za-z0-9_-]+)$/.exec(stored);
    expect(m).not.toBeNull();
    expect({ N: Number(m![1]), r: Number(m![2]), p: Number(m![3]) }).toEqual(CURRENT_PARAMS);
    expect(CURRENT_PARAMS).toEqual({ N: 2 ** 15, r: 8, p: 1 });
    expect(Buffer.from(m![4]!, 'base64url')).toHaveLength(16);
    expect(Buffer.from(m![5]!, 'base64url')).toHaveLength(32);
    expect(await verifyPassword('correct horse battery staple', stored)).toBe(true);
    expect(await verifyPassword('correct horse battery stapler', stored)).toBe(false);
    expect(await verifyPassword('', stored)).toBe(false);
  });

  it('uses a fresh salt each time (same password, different hashes)', async () => {
    const [a, b] = await Promise.all([
      hashPassword('same password!!', CHEAP),
      hashPassword('same password!!', CHEAP),
    ]);
    expect(a).not.toBe(b);
  });

  it('is deterministic for a given salt and matches an independent scrypt computation', async () => {
    const { scryptSync } = await import('node:crypto');
    const stored = await hashPassword('vector password', CHEAP, FIXED_SALT);
    const expected = scryptSync('vector password', FIXED_SALT(16), 32, CHEAP).toString('base64url');
    expect(stored).toBe(`scrypt$1024$8$1$${FIXED_SALT(16).toString('base64url')}$${expected}`);
  });

  it('verifies hashes made with other (older) parameters, and says they need a rehash', async () => {
    const old = await hashPassword('an older password', CHEAP);
    expect(await verifyPassword('an older password', old)).toBe(true);
    expect(needsRehash(old)).toBe(true);
    expect(needsRehash(await hashPassword('a current password'))).toBe(false);
  });

  it('normalizes Unicode (NFKC): the composed and decomposed forms are the same password', async () => {
    const stored = await hashPassword('caf\u00e9 au lait 2024', CHEAP);
    expect(await verifyPassword('cafe\u0301 au lait 2024', stored)).toBe(true);
  });

  it('answers false (after the same work) for no stored hash, a malformed one, or absurd parameters', async () => {
    expect(await verifyPassword('anything at all', null)).toBe(false);
    expect(await verifyPassword('anything at all', 'plain-text-password')).toBe(false);
    expect(
      await verifyPassword(
        'anything at all',
        'scrypt$3$8$1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
      ),
    ).toBe(false);
    // 2^30 would need 128 GiB: refused as malformed instead of attempted.
    expect(
      await verifyPassword(
        'x',
        `scrypt$${2 ** 30}$8$1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA`,
      ),
    ).toBe(false);
    expect(needsRehash('garbage')).toBe(true);
  });
});

describe('checkPasswordPolicy', () => {
  const refusal = (password: string, email?: string) => {
    try {
      checkPasswordPolicy(password, { email });
      return null;
    } catch (err) {
      return err as { message: string; extensions: Record<string, unknown> };
    }
  };

  it('accepts 12 to 1024 characters', () => {
    expect(refusal('a'.repeat(12))).toBeNull();
    expect(refusal('a'.repeat(1024))).toBeNull();
    expect(refusal('ünïcødé-pass')).toBeNull();
  });

  it('refuses shorter and longer ones with BAD_USER_INPUT on field "password", never echoing it', () => {
    const short = refusal('hunter2hunt');
    expect(short?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'password' });
    expect(short?.message).toContain('at least 12 characters');
    expect(short?.message).not.toContain('hunter2');
    expect(refusal('a'.repeat(1025))?.message).toContain('at most 1024');
  });

  it('counts characters, not UTF-16 units (emoji are one each)', () => {
    expect(refusal('🔑'.repeat(11))?.extensions['field']).toBe('password');
    expect(refusal('🔑'.repeat(12))).toBeNull();
  });

  it('refuses the e-mail address itself, in any case', () => {
    expect(refusal('Ada.Lovelace@Example.com', 'ada.lovelace@example.com')?.message).toContain('e-mail');
    expect(refusal('ada.lovelace@example.com!', 'ada.lovelace@example.com')).toBeNull();
  });
});

import { describe, expect, it } from 'vitest';
import { detect, luhnValid, shannonEntropy } from '../src/index.js';
import { isPasswordValue, looksGenerated } from '../src/detectors.js';

const ids = (value: string) => detect(value).map((d) => d.id);

describe('secret and personal-data detectors', () => {
  it.each([
    ['AKIAIOSFODNN7EXAMPLE', 'api-key'],
    ['ASIAY34FZKBOKMUTVV7A', 'api-key'],
    ['ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8', 'api-key'],
    ['github_pat_11ABCDEFG0123456789_abcdefghijkl', 'api-key'],
    ['glpat-abcdefghij0123456789', 'api-key'],
    ['xoxb-123456789012-abcdef', 'api-key'],
    ['sk_live_abcdefghij0123456789', 'api-key'],
    ['rk_test_abcdefghij0123456789', 'api-key'],
    ['sk-proj-abcdefghij0123456789ABCD', 'api-key'],
    ['AIzaSyA1234567890abcdefghijklmnopqrstuv', 'api-key'],
    ['npm_abcdefghijklmnopqrstuvwxyz0123456789', 'api-key'],
    ['eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ1c2VyLTEifQ.c2ln', 'jwt'],
    ['-----BEGIN PRIVATE KEY-----', 'pem-private-key'],
    ['-----BEGIN OPENSSH PRIVATE KEY-----', 'pem-private-key'],
    ['-----BEGIN ENCRYPTED PRIVATE KEY-----', 'pem-private-key'],
    ['Authorization: bearer abcdefghijklmnop0123', 'bearer-token'],
    ['BEARER abc.def-ghi_jkl~mno+p/q==', 'bearer-token'],
    ['https://user:pa55word@example.com/', 'url-password'],
    ['redis://:onlypassword@cache:6379', 'url-password'],
    ['4111111111111111', 'card-number'],
    ['5500-0000-0000-0004', 'card-number'],
    ['3782 822463 10005', 'card-number'],
    ['123-45-6789', 'ssn'],
    ['api_key: Zq3xT9vLk2Wm8PbR4nYc7HsJ1dFg6KeUa0VtQi5O', 'high-entropy'],
    ['"client_secret": "8f14e45fceea167a5a36dedd4bea2543"', 'high-entropy'],
    ['aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY', 'high-entropy'],
    ['SECRET_KEY_BASE=3b9f0c2a7e1d4f5a6b8c9d0e1f2a3b4c', 'high-entropy'],
    ['password: s3cr3t-Pa55\n', 'password-assignment'],
    ["password: 's3cr3t-Pa55'", 'password-assignment'],
    ['DB_PASSWORD="hunter2!"', 'password-assignment'],
    ['Server=db;Password=Pa55w0rd!;', 'password-assignment'],
    ['hooks.slack.com/services/T0000000/B0000000/XXXXXXXXXXXXXXXXXXXXXXXX', 'api-key'],
    ['Authorization: Basic ZGVwbG95OlRyMHViNGRvci0zeA==', 'bearer-token'],
  ])('%s → %s', (value, id) => {
    expect(ids(`before ${value} after`)).toContain(id);
  });

  it.each([
    'pk_live_abcdefghij0123456789', // Stripe publishable keys are public
    'xAKIAIOSFODNN7EXAMPLE', // prefix inside a longer word
    'https://example.com/user:name@x', // a colon in the path, not in userinfo
    'mailto:someone@example.com',
    'https://user@example.com/', // no password
    '-----BEGIN PUBLIC KEY-----',
    '4111111111111112', // fails Luhn
    '1700000000000', // a millisecond timestamp (starts with 1)
    '41111111111111111111', // 20 digits
    '000-12-3456',
    '666-12-3456',
    '900-12-3456',
    '123-00-4567',
    '123-45-0000',
    '1123-45-6789',
    '123456789',
    '3f2b8c4e-9d1a-4f6b-8e2c-7a5d9b1c3e4f',
    '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08',
    'ThisIsAVeryLongCamelCaseIdentifier2024',
    'the_quick_brown_fox_jumps_over_the_lazy_dog',
    'Bearer short',
    'plain words, nothing to see',
    // Entropy is only asked next to a keyword (issue 18): a random-looking run on its own passes.
    'use Zq3xT9vLk2Wm8PbR4nYc7HsJ1dFg6KeUa0VtQi5O for the API',
    'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
    'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9',
    'Password=${DB_PASSWORD}',
    'password: <your-password>',
    'Reset your password: click the link',
    'key: k8s-prod-cluster-01',
    'idempotency_key: 3f2b8c4e-9d1a-4f6b-8e2c-7a5d9b1c3e4f',
    'public_key: MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE9f8Kx2Lm',
    'redis://:****@cache:6379',
  ])('%s is not flagged', (value) => {
    expect(ids(value)).toEqual([]);
  });

  it('Luhn: the textbook numbers', () => {
    expect(luhnValid('79927398713')).toBe(true);
    expect(luhnValid('79927398710')).toBe(false);
    expect(luhnValid('4111111111111111')).toBe(true);
  });

  it('entropy: bits per character over the string itself', () => {
    expect(shannonEntropy('aaaa')).toBe(0);
    expect(shannonEntropy('abcd')).toBe(2);
    expect(shannonEntropy('0123456789abcdefghijklmnopqrstuv')).toBe(5);
  });

  it('a value after a secret keyword must look generated; a password value must not be a placeholder', () => {
    expect(looksGenerated('Zq3xT9vLk2Wm8PbR4nYc7HsJ1dFg6KeUa0VtQi5O')).toBe(true);
    expect(looksGenerated('ThisIsAVeryLongCamelCaseIdentifier2024')).toBe(false); // digits in one place
    expect(looksGenerated('550e8400-e29b-41d4-a716-446655440000')).toBe(false); // UUID
    expect(looksGenerated('/etc/ssl/private/server-2024-01.key')).toBe(false); // path
    expect(looksGenerated('a1a1a1a1a1a1a1a1a1a1')).toBe(false); // entropy 1 bit/char
    expect(isPasswordValue('hunter2!')).toBe(true);
    for (const v of [
      '${DB_PASSWORD}',
      '{{ .Values.pw }}',
      '********',
      'NULL',
      'DB_PASSWORD',
      'process.env.PW',
      'abc',
    ])
      expect(isPasswordValue(v), v).toBe(false);
  });
});

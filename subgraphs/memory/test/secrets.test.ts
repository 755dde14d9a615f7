/**
 * The secret filter's table: every positive must be found by the named detector (and redacted away), every
 * look-alike must pass untouched. The values are made up for the test (documentation examples, or built from a
 * seeded generator), never real credentials.
 */
import { describe, expect, it } from 'vitest';
import { AppError } from '@agentgraph/runtime';
import { filterWrite, redact, scan } from '../src/secrets/index.js';
import { isCardNumber, isSsn, luhnValid, shannonEntropy } from '../src/secrets/detectors.js';
import { mulberry32 } from '../../../test/fault-proxy/src/prng.js';

/** Seeded (mulberry32), so the random-looking tokens are the same on every run. */
const next = mulberry32(20261129);
function token(length: number, alphabet: string): string {
  let s = '';
  for (let i = 0; i < length; i++) s += alphabet[Math.floor(next() * alphabet.length)];
  return s;
}
const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const UPPER_DIGITS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
const B64 = ALNUM + '+/';
const BEARER = token(40, ALNUM);
const BEARER_LOWER = token(32, ALNUM + '._-');
const ENTROPY_1 = `${token(32, B64)}Z9q`;
const ENTROPY_2 = token(40, ALNUM);

/** [text, detector, the secret part that must not survive redaction] */
const POSITIVES: [string, string, string][] = [
  ['key AKIAIOSFODNN7EXAMPLE in the config', 'aws-access-key', 'AKIAIOSFODNN7EXAMPLE'],
  [`temporary ASIA${token(16, UPPER_DIGITS)} creds`, 'aws-access-key', 'ASIA'],
  [
    'aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
    'aws-secret-key',
    'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
  ],
  [`token ghp_${token(36, ALNUM)} for CI`, 'github-token', 'ghp_'],
  [`gho_${token(36, ALNUM)}`, 'github-token', 'gho_'],
  [`github_pat_${token(22, ALNUM)}_${token(59, ALNUM)}`, 'github-token', 'github_pat_'],
  [`slack: xoxb-${token(12, '0123456789')}-${token(24, ALNUM)}`, 'slack-token', 'xoxb-'],
  [`xoxp-${token(11, '0123456789')}-${token(32, ALNUM)}`, 'slack-token', 'xoxp-'],
  [
    `POST https://hooks.slack.com/services/T${token(8, UPPER_DIGITS)}/B${token(8, UPPER_DIGITS)}/${token(24, ALNUM)}`,
    'slack-webhook',
    'hooks.slack.com/services/',
  ],
  [`stripe sk_live_${token(24, ALNUM)}`, 'stripe-key', 'sk_live_'],
  [`rk_test_${token(24, ALNUM)}`, 'stripe-key', 'rk_test_'],
  [`OPENAI_API_KEY=sk-${token(48, ALNUM)}`, 'openai-key', 'sk-'],
  [`sk-proj-${token(64, ALNUM + '_-')}`, 'openai-key', 'sk-proj-'],
  [`anthropic sk-ant-api03-${token(80, ALNUM + '_-')}`, 'openai-key', 'sk-ant-'],
  [`maps key AIza${token(35, ALNUM + '_-')}`, 'google-api-key', 'AIza'],
  [
    '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq\nabcdEFGH\n-----END RSA PRIVATE KEY-----',
    'private-key',
    'MIIEowIBAAKCAQEA7bq',
  ],
  [
    'here: -----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIJ+secretbits\n-----END PRIVATE KEY----- done',
    'private-key',
    'secretbits',
  ],
  [
    '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA (truncated',
    'private-key',
    'b3BlbnNzaC1rZXkt',
  ],
  [
    '-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg\n-----END EC PRIVATE KEY-----',
    'private-key',
    'MHcCAQEEIBkg',
  ],
  [`Authorization: Bearer ${BEARER}`, 'bearer-token', BEARER],
  [`curl -H "authorization: bearer ${BEARER_LOWER}"`, 'bearer-token', BEARER_LOWER],
  [
    'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U',
    'jwt',
    'dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U',
  ],
  ['db at postgres://app:hunter2pass@db.internal:5432/main', 'url-password', 'hunter2pass'],
  ['mongodb+srv://admin:Sup3r-S3cret!@cluster0.example.net/test', 'url-password', 'Sup3r-S3cret!'],
  ['fetch https://deploy:tok3n@git.example.com/repo.git', 'url-password', 'tok3n'],
  ['Server=db;Database=app;User Id=sa;Password=Pa55w0rd!;', 'connection-string-password', 'Pa55w0rd!'],
  ['host=db user=app password=correcthorse dbname=main', 'connection-string-password', 'correcthorse'],
  ['Data Source=x;pwd=letmein42', 'connection-string-password', 'letmein42'],
  ['card 4111 1111 1111 1111 exp 12/29', 'card-number', '4111 1111 1111 1111'],
  ['visa 4012888888881881', 'card-number', '4012888888881881'],
  ['amex 3782-822463-10005', 'card-number', '3782-822463-10005'],
  ['mc 5555-5555-5555-4444 ok', 'card-number', '5555-5555-5555-4444'],
  ['discover 6011 0009 9013 9424', 'card-number', '6011 0009 9013 9424'],
  ['jcb 3530111333300000', 'card-number', '3530111333300000'],
  ['SSN: 123-45-6789', 'us-ssn', '123-45-6789'],
  ['ssn 078 05 1120 on file', 'us-ssn', '078 05 1120'],
  [`api token ${ENTROPY_1}`, 'high-entropy-string', ENTROPY_1],
  [`secret=${ENTROPY_2}`, 'high-entropy-string', ENTROPY_2],
];

const LOOK_ALIKES: string[] = [
  'request 3f2b8a9c-1d4e-4f6a-9b2c-7e8d9f0a1b2c failed',
  'id 550E8400-E29B-41D4-A716-446655440000',
  'sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 of the empty file',
  'commit 9fceb02d0ae598e95dc970b74767f19372d61af8 fixed it',
  'md5 d41d8cd98f00b204e9800998ecf8427e',
  'integrity sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUR9TzL3GGnZfN3UrQ==',
  'image sha256:a3ed95caeb02ffe68cdd9fd84406680ae93d633cb16422d00e8a7c22955b46d4',
  'the order 1234567890123 shipped',
  'call +1 (555) 123-4567 tomorrow',
  'timestamp 1764417600000 in ms',
  'invoice 4111111111111112 (not Luhn)',
  'account 1234 5678 9012 3456',
  'date 2026-11-29 and 2026-12-01',
  'SSN-shaped 000-12-3456 is never issued',
  'and 666-12-3456 neither',
  'nor 912-34-5678',
  'or 123-00-4567 or 123-45-0000',
  'phone 800-555-1234',
  'the password is stored in the vault, ask ops',
  'reset your password: click the link',
  'bearer of bad news',
  'Bearer token goes in the header',
  'sk-learn is a library; sk-short',
  'see https://example.com/path?user=me',
  'mailto:someone@example.com',
  'ssh://git@github.com/org/repo.git',
  'internationalizationAndLocalizationFramework',
  'getUserAccountSettingsFromRemoteConfiguration',
  '/usr/local/lib/node_modules/typescript/lib/tsc.js',
  'version 1.2.3-beta.4+build.567',
  'ISO8601 and RFC3339 are date formats',
  'AKIA is how AWS key ids start',
  'ghp_ is the prefix of a GitHub token',
  'the ratio was 3.14159265358979323846',
  'PI = 3.14159 26535 89793',
  'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
  'Password=',
  'cardinality 13 to 19 digits',
];

describe('secret filter table', () => {
  it(`finds each of the ${POSITIVES.length} positives with the named detector, and redaction removes it`, () => {
    expect(POSITIVES.length).toBeGreaterThanOrEqual(30);
    for (const [text, detector, secret] of POSITIVES) {
      const findings = scan(text);
      expect(
        findings.map((f) => f.detector),
        text,
      ).toContain(detector);
      const redacted = redact(text, findings);
      expect(redacted, text).toContain(`[REDACTED:${detector}]`);
      expect(redacted, text).not.toContain(secret);
    }
  });

  it(`lets each of the ${LOOK_ALIKES.length} look-alikes pass untouched`, () => {
    expect(LOOK_ALIKES.length).toBeGreaterThanOrEqual(30);
    for (const text of LOOK_ALIKES) expect(scan(text), text).toEqual([]);
  });

  it('checks card numbers with Luhn and the issuer ranges, SSNs with the issued ranges', () => {
    expect(luhnValid('4111111111111111')).toBe(true);
    expect(luhnValid('4111111111111112')).toBe(false);
    expect(isCardNumber('4111-1111-1111-1111')).toBe(true);
    expect(isCardNumber('4111 1111-1111 1111')).toBe(false);
    expect(isCardNumber('1111111111111117')).toBe(false); // Luhn-valid, no network starts with 1
    expect(isSsn('001-01-0001')).toBe(true);
    expect(isSsn('899-99-9999')).toBe(true);
    expect(isSsn('900-01-0001')).toBe(false);
    expect(shannonEntropy('aaaa')).toBe(0);
    expect(shannonEntropy('abcd')).toBe(2);
  });

  it('keeps text around a redacted span and names overlapping hits once', () => {
    const text = 'a postgres://u:pw12345@h/db b';
    expect(redact(text, scan(text))).toBe('a postgres://u:[REDACTED:url-password]@h/db b');
    const jwtBearer = `Authorization: Bearer ${POSITIVES[21]![0]}`;
    const findings = scan(jwtBearer);
    expect(findings).toHaveLength(1);
  });
});

describe('filterWrite', () => {
  const write = {
    kind: 'note',
    content: 'deploy with AKIAIOSFODNN7EXAMPLE please',
    tags: ['ok', 'ssn 123-45-6789'],
    metadata: { nested: { list: ['fine', 'postgres://a:b4dpass@h/x'] }, n: 1 },
  };

  it('REJECT names the first field path and detector, never the value', () => {
    try {
      filterWrite(write, 'REJECT');
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(AppError);
      const e = err as AppError;
      expect(e.code).toBe('BAD_USER_INPUT');
      expect(e.extensions).toMatchObject({ field: 'input.content', detector: 'aws-access-key' });
      expect(e.message).not.toContain('AKIA');
    }
    const inMetadata = () => filterWrite({ ...write, content: 'x', tags: [] }, 'REJECT');
    expect(inMetadata).toThrow(/input\.metadata\.nested\.list\.1/);
  });

  it('REDACT replaces every hit in content, tags and metadata (keys too) and reports where', () => {
    const { value, redactions } = filterWrite(
      { ...write, metadata: { ...write.metadata, [`ghp_${token(36, ALNUM)}`]: 'v' } },
      'REDACT',
    );
    expect(value.content).toBe('deploy with [REDACTED:aws-access-key] please');
    expect(value.tags).toEqual(['ok', 'ssn [REDACTED:us-ssn]']);
    expect(value.metadata).toEqual({
      nested: { list: ['fine', 'postgres://a:[REDACTED:url-password]@h/x'] },
      n: 1,
      '[REDACTED:github-token]': 'v',
    });
    expect(redactions.map((r) => r.field)).toEqual([
      'input.content',
      'input.tags.1',
      'input.metadata.nested.list.1',
      'input.metadata.<key>',
    ]);
  });

  it('refuses a secret in kind under both policies (an identifier cannot be redacted)', () => {
    for (const policy of ['REJECT', 'REDACT'] as const) {
      expect(() =>
        filterWrite({ ...write, kind: 'akiaiosfodnn7example', content: 'x', tags: [], metadata: {} }, policy),
      ).not.toThrow(); // lower case: not an AWS key id
      const kind = `sk-${'a1b2c3d4e5'.repeat(3)}`;
      expect(() => filterWrite({ ...write, kind, content: 'x', tags: [], metadata: {} }, policy)).toThrow(
        /input\.kind/,
      );
    }
  });
});

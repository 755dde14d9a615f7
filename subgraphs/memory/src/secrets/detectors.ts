/**
 * The secret and personal-data detectors of the server filter, as a table: a name (what error messages and
 * redaction markers say), the SDK detector it mirrors (`sdkId`), a pattern with the global flag, optionally a check on
 * the match (Luhn, SSN ranges, a generated-looking value, a real password) that turns look-alikes away, and the
 * groups that hold the secret (the password of a URL, not the URL; the value of `password: …`, not the key).
 * Order matters only for overlapping hits: the earlier detector names the span.
 *
 * One rule set, two tables. The SDK's table (sdk-templates/typescript/src/detectors.ts, ported literally to C# and
 * Python) is the source of the rules: prefix-anchored provider keys, keyword-anchored passwords, and entropy only
 * next to a secret keyword. This file applies the same regular expressions and value checks (kept in step by hand:
 * this subgraph may not import the SDK, and both run the labelled corpus in test/secrets-corpus/), and differs on
 * purpose in three ways:
 *  - it redacts (workspace policy REDACT), so it needs spans, and it names hits more finely (`aws-access-key`,
 *    `github-token`, … where the SDK says `api-key`; the names are API: `extensions.detector`, `[REDACTED:<name>]`);
 *  - personal data is held to the stored-data standard: card numbers must also match a network's issuer range and
 *    one kind of separator (fewer order numbers refused), US SSNs may be written with spaces (`078 05 1120`);
 *  - a private key is redacted through its END line, not only its BEGIN line.
 */

export interface Detector {
  name: string;
  /** The SDK detector id (sdk-templates/typescript/src/detectors.ts) whose rule this is. */
  sdkId: string;
  pattern: RegExp;
  /** False: the match is a look-alike, not a hit. */
  accept?: (match: RegExpExecArray) => boolean;
  /** Numbered groups that may hold the secret: the first that took part is redacted (none: the whole match). */
  groups?: readonly number[];
}

/** Luhn checksum over the digits of a card-number candidate. */
export function luhnValid(digits: string): boolean {
  let sum = 0;
  let double = false;
  for (let i = digits.length - 1; i >= 0; i--) {
    let d = digits.charCodeAt(i) - 48;
    if (double) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    double = !double;
  }
  return sum % 10 === 0;
}

/** Issuer prefixes (IIN ranges) and lengths of the major card networks. */
function cardNetworkMatches(d: string): boolean {
  const n = d.length;
  const p2 = Number(d.slice(0, 2));
  const p3 = Number(d.slice(0, 3));
  const p4 = Number(d.slice(0, 4));
  if (d[0] === '4') return n === 13 || n === 16 || n === 19; // Visa
  if ((p2 >= 51 && p2 <= 55) || (p4 >= 2221 && p4 <= 2720)) return n === 16; // Mastercard
  if (p2 === 34 || p2 === 37) return n === 15; // American Express
  if (p4 === 6011 || p2 === 65 || (p3 >= 644 && p3 <= 649)) return n >= 16 && n <= 19; // Discover
  if (p4 >= 3528 && p4 <= 3589) return n >= 16 && n <= 19; // JCB
  if ((p3 >= 300 && p3 <= 305) || p2 === 36 || p2 === 38) return n >= 14 && n <= 19; // Diners Club
  if (p2 === 62) return n >= 16 && n <= 19; // UnionPay
  if (p2 === 50 || (p2 >= 56 && p2 <= 69)) return n >= 13 && n <= 19; // Maestro
  return false;
}

export function isCardNumber(match: string): boolean {
  const digits = match.replace(/[ -]/g, '');
  if (digits.length < 13 || digits.length > 19) return false;
  // Separators, when present, must be one kind (4-4-4-4, 4 6 5): "1234 5678-9012 3456" is not how cards are written.
  if (/ /.test(match) && /-/.test(match)) return false;
  return cardNetworkMatches(digits) && luhnValid(digits);
}

/** US Social Security numbers as issued: area 001–899 except 666, group 01–99, serial 0001–9999. */
export function isSsn(match: string): boolean {
  const m = /^(\d{3})[- ](\d{2})[- ](\d{4})$/.exec(match);
  if (!m) return false;
  const area = Number(m[1]);
  return area !== 0 && area !== 666 && area < 900 && m[2] !== '00' && m[3] !== '0000';
}

/** Shannon entropy in bits per character. */
export function shannonEntropy(s: string): number {
  const counts = new Map<string, number>();
  for (const ch of s) counts.set(ch, (counts.get(ch) ?? 0) + 1);
  let h = 0;
  for (const c of counts.values()) {
    const p = c / s.length;
    h -= p * Math.log2(p);
  }
  return h;
}

/** `password` → `[Pp][Aa][Ss][Ss][Ww][Oo][Rr][Dd]`: any letter case without a flag, as the SDK writes it. */
function anyCase(word: string): string {
  return [...word].map((ch) => (/[a-z]/.test(ch) ? `[${ch.toUpperCase()}${ch}]` : ch)).join('');
}

const NOT_AFTER_ALNUM = '(?<![A-Za-z0-9])';

/** The SDK's `api-key` prefixes that have no finer name here. */
const OTHER_API_KEY_PATTERNS = [
  'glpat-[A-Za-z0-9_-]{20,}',
  'npm_[A-Za-z0-9]{36}',
  'pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}',
  'SG\\.[A-Za-z0-9_-]{22}\\.[A-Za-z0-9_-]{43}',
  'shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}',
  'do[opr]_v1_[a-f0-9]{64}',
  'hvs\\.[A-Za-z0-9_-]{90,}',
  'hf_[A-Za-z]{34}',
  'dapi[a-f0-9]{32}',
  'PMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34}',
  'lin_api_[A-Za-z0-9]{40}',
  'dp\\.pt\\.[A-Za-z0-9]{43}',
  'AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}',
  'sq0(?:atp-[0-9A-Za-z_-]{22}|csp-[0-9A-Za-z_-]{43})',
  'discord(?:app)?\\.com/api/webhooks/[0-9]+/[A-Za-z0-9_-]{60,}',
  '[0-9]{8,10}:AA[A-Za-z0-9_-]{33}',
];

const HIGH_ENTROPY_MIN_LENGTH = 16;
const HIGH_ENTROPY_MIN_BITS = 3.0;
const UUID = /^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$/;
const PATH_START = /^(?:\/|\.\.?\/|~\/)/;
const LONE_JWT_PART = /^eyJ[A-Za-z0-9_-]*=*$/;
const DIGIT_RUN = /[0-9]+/g;
const SEGMENT_SEPARATORS = /[-_./+~=]/;

/** The SDK's `looksGenerated`: a value after a secret keyword that reads as generated, not named. */
export function looksGenerated(value: string): boolean {
  if (value.length < HIGH_ENTROPY_MIN_LENGTH) return false;
  if (!/[A-Za-z]/.test(value) || !/[0-9]/.test(value)) return false;
  if (UUID.test(value) || PATH_START.test(value) || LONE_JWT_PART.test(value)) return false;
  const digitRuns = value.match(DIGIT_RUN)?.length ?? 0;
  const base64Mixed = /[+/]/.test(value) && /[a-z]/.test(value) && /[A-Z]/.test(value);
  if (digitRuns < 2 && !base64Mixed) return false;
  const mixedSegment = value
    .split(SEGMENT_SEPARATORS)
    .some((seg) => seg.length > 3 && /[A-Za-z]/.test(seg) && /[0-9]/.test(seg));
  if (!mixedSegment) return false;
  return shannonEntropy(value) >= HIGH_ENTROPY_MIN_BITS;
}

const SECRET_KEYWORD = `(?=[SsTtKkCcAa])(?<!${anyCase('public')})(?<!${anyCase('public')}[_.-])(?:${['secret', 'token', 'key', 'credential', 'auth'].map(anyCase).join('|')})[Ss]?(?:[_.-](?:${['base', 'value', 'prod', 'live', 'dev', 'test', 'staging'].map(anyCase).join('|')}))?`;
const SECRET_ASSIGNMENT = `${SECRET_KEYWORD}['"\\]]?(?:[ \\t]*(?:=>|:=|[:=])[ \\t]*|[ \\t]+)['"\`]?([A-Za-z0-9+/=_.~-]{16,})`;

const PASSWORD_KEYWORD = `(?:${['password', 'passwd', 'passphrase', 'pwd'].map(anyCase).join('|')}|[_.-]${anyCase('pass')})`;
const UNQUOTED_VALUE = '[^ \\t\\r\\n"\'`;,&<>]+';
/** The SDK's PASSWORD_ASSIGNMENT split in two: `=`, `:=`, `=>` (groups 1–3) and `:` (groups 1–3 too). */
const PASSWORD_EQUALS = `${PASSWORD_KEYWORD}['"\\]]?[ \\t]*(?:=>|:=|=)[ \\t]*(?:"([^"\\r\\n]*)"|'([^'\\r\\n]*)'|(${UNQUOTED_VALUE}))`;
const PASSWORD_COLON = `${PASSWORD_KEYWORD}['"\\]]?[ \\t]*:[ \\t]*(?:"([^"\\r\\n]*)"|'([^'\\r\\n]*)'|(${UNQUOTED_VALUE})(?=[ \\t]*(?:[,}\\]#]|(?![^\\r\\n]))))`;

const PLACEHOLDER_WORD = new RegExp(
  `^(?:${[
    'null',
    'none',
    'nil',
    'undefined',
    'true',
    'false',
    'empty',
    'required',
    'optional',
    'string',
    'text',
    'password',
    'passwd',
    'secret',
    'redacted',
    'hidden',
    'masked',
    'placeholder',
    'example',
    'changeme',
    'your_password',
    'yourpassword',
  ]
    .map(anyCase)
    .join('|')})$`,
);
const PLACEHOLDER_START = /^(?:[$<{%![]|#\{)/; // `[` unescaped: a literal inside a class (Python and C# write `\[`)
const MASK = /^(?:\*+|x+|X+|\.+|•+)$/;
const ENV_NAME = /^[A-Z][A-Z0-9]*_[A-Z0-9_]*$/;
const DOTTED_NAME = /^[A-Za-z_]+(?:\.[A-Za-z_]+)+$/;
const CALL = /^[A-Za-z_][A-Za-z0-9_.]*\(/;

/** The SDK's `isPasswordValue`: a real password, not a placeholder, a mask, a reference or a path. */
export function isPasswordValue(value: string): boolean {
  if (value.length < 4) return false;
  if (PLACEHOLDER_START.test(value) || MASK.test(value) || PATH_START.test(value)) return false;
  if (PLACEHOLDER_WORD.test(value)) return false;
  return !ENV_NAME.test(value) && !DOTTED_NAME.test(value) && !CALL.test(value);
}

const firstGroup = (m: RegExpExecArray) => m.slice(1).find((g) => g !== undefined);
const realPassword = (m: RegExpExecArray) => {
  const value = firstGroup(m);
  return value !== undefined && isPasswordValue(value);
};
const generated = (m: RegExpExecArray) => looksGenerated(m[1]!);

const re = (source: string) => new RegExp(source, 'g');
const api = (name: string, source: string): Detector => ({
  name,
  sdkId: 'api-key',
  pattern: re(`${NOT_AFTER_ALNUM}(?:${source})`),
});

export const DETECTORS: readonly Detector[] = [
  {
    name: 'private-key',
    sdkId: 'pem-private-key',
    pattern:
      /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|$)/g,
  },
  api('aws-access-key', '(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}'),
  {
    name: 'aws-secret-key',
    sdkId: 'high-entropy',
    pattern: re(
      `${anyCase('aws')}_?${anyCase('secret')}_?(?:${anyCase('access')}_?)?${anyCase('key')}['"]?[ \\t]*[:=][ \\t]*['"]?([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])`,
    ),
    groups: [1],
  },
  api('github-token', 'gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,}'),
  api('slack-token', 'xox[abposr]-[A-Za-z0-9-]{10,}'),
  api('slack-webhook', 'hooks\\.slack\\.com/(?:services|workflows)/[A-Za-z0-9_/-]{20,}'),
  api('stripe-key', '(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}'),
  // OpenAI-style keys (sk-…, sk-proj-…), also Anthropic's sk-ant-…: "sk-" then a long key body.
  api('openai-key', 'sk-[A-Za-z0-9_-]{20,}'),
  api('google-api-key', 'AIza[0-9A-Za-z_-]{35}'),
  api('api-key', OTHER_API_KEY_PATTERNS.join('|')),
  {
    name: 'jwt',
    sdkId: 'jwt',
    pattern: re(`${NOT_AFTER_ALNUM}eyJ[A-Za-z0-9_-]{8,}\\.eyJ[A-Za-z0-9_-]{8,}\\.[A-Za-z0-9_-]*`),
  },
  {
    name: 'bearer-token',
    sdkId: 'bearer-token',
    pattern: re(
      `${NOT_AFTER_ALNUM}(?:${anyCase('bearer')}[ \\t]+(?![A-Z_]{16,}(?![A-Za-z0-9._~+/=-]))([A-Za-z0-9._~+/-]{16,}=*)|${anyCase('authorization')}['"]?:[ \\t]*['"]?${anyCase('basic')}[ \\t]+([A-Za-z0-9+/]{12,}=*))`,
    ),
    groups: [1, 2],
  },
  // scheme://user:password@: only the password is redacted.
  {
    name: 'url-password',
    sdkId: 'url-password',
    pattern: re(
      '(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,30}://[^ \\t\\r\\n/?#@:]{0,256}:(?![$<{%\\[])(?!\\*+@)([^ \\t\\r\\n/?#@]{1,256})@',
    ),
    groups: [1],
  },
  // Password=…; pwd=…; DB_PASSWORD=…; --password=… (connection strings, env files, query strings, flags).
  {
    name: 'connection-string-password',
    sdkId: 'password-assignment',
    pattern: re(PASSWORD_EQUALS),
    accept: realPassword,
    groups: [1, 2, 3],
  },
  // password: … (YAML, JSON, object literals; a bare value must end the line).
  {
    name: 'password-assignment',
    sdkId: 'password-assignment',
    pattern: re(PASSWORD_COLON),
    accept: realPassword,
    groups: [1, 2, 3],
  },
  {
    name: 'card-number',
    sdkId: 'card-number',
    pattern: /(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d])/g,
    accept: (m) => isCardNumber(m[0]),
  },
  {
    name: 'us-ssn',
    sdkId: 'ssn',
    pattern: /(?<![\d-])\d{3}([- ])\d{2}\1\d{4}(?![\d-])/g,
    accept: (m) => isSsn(m[0]),
  },
  // A generated-looking value after a secret keyword (client_secret: …, api token …): entropy only next to a keyword.
  {
    name: 'high-entropy-string',
    sdkId: 'high-entropy',
    pattern: re(SECRET_ASSIGNMENT),
    accept: generated,
    groups: [1],
  },
];

/**
 * The secret and personal-data detectors, as a table: a name (what error messages and redaction markers say), a
 * pattern with the global flag, and optionally a check on the match (Luhn, SSN ranges, entropy) that turns
 * look-alikes away. A pattern with a named group `s` redacts only that group (the password of a URL, not the
 * URL). Order matters only for overlapping hits: the earlier detector names the span.
 */

export interface Detector {
  name: string;
  pattern: RegExp;
  /** False: the match is a look-alike, not a hit. */
  accept?: (match: string) => boolean;
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

const UUID_LIKE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const HEX = /^[0-9a-f]+$/i;
/** Subresource-integrity and digest prefixes: a hash written the way hashes are written. */
const DIGEST_PREFIX = /^(?:sha(?:1|224|256|384|512)|md5|blake2b?|sha3)[-:]/i;

/** Bits per character above which a long mixed token is treated as a generated credential. */
export const ENTROPY_THRESHOLD = 4.0;
export const ENTROPY_MIN_LENGTH = 24;

/**
 * A generated-looking token: long, letters and digits mixed (and both cases, or symbols), and dense in
 * information. UUIDs, hex digests (any length: md5, sha1, sha256, git ids) and `sha256-…` integrity strings are
 * look-alikes that pass; so are words, paths and identifiers, which are low in entropy or lack digits.
 */
export function isHighEntropyToken(token: string): boolean {
  const t = token.replace(/^[-_=/+]+|[-_/+]+$/g, '');
  if (t.length < ENTROPY_MIN_LENGTH) return false;
  if (UUID_LIKE.test(t) || HEX.test(t) || DIGEST_PREFIX.test(t)) return false;
  if (!/[0-9]/.test(t) || !/[A-Za-z]/.test(t)) return false;
  const classes = [/[a-z]/, /[A-Z]/, /[0-9]/, /[+/=_-]/].filter((re) => re.test(t)).length;
  if (classes < 3) return false;
  return shannonEntropy(t) >= ENTROPY_THRESHOLD;
}

export const DETECTORS: readonly Detector[] = [
  {
    name: 'private-key',
    pattern:
      /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|$)/g,
  },
  { name: 'aws-access-key', pattern: /\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b/g },
  {
    name: 'aws-secret-key',
    pattern:
      /\baws_?secret_?(?:access_?)?key\b["']?\s*[:=]\s*["']?(?<s>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])/gi,
  },
  { name: 'github-token', pattern: /\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b/g },
  { name: 'slack-token', pattern: /\bxox[abposr]-[A-Za-z0-9-]{10,250}/g },
  {
    name: 'slack-webhook',
    pattern: /https:\/\/hooks\.slack\.com\/(?:services|workflows)\/[A-Za-z0-9_/-]{20,}/g,
  },
  { name: 'stripe-key', pattern: /\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,247}\b/g },
  // OpenAI-style keys (sk-…, sk-proj-…), also Anthropic's sk-ant-…: "sk-" then a long key body.
  { name: 'openai-key', pattern: /\bsk-[A-Za-z0-9_-]{20,}/g },
  { name: 'google-api-key', pattern: /\bAIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])/g },
  {
    name: 'jwt',
    pattern: /\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*/g,
  },
  { name: 'bearer-token', pattern: /\bbearer\s+(?<s>[A-Za-z0-9._~+/-]{16,}=*)/gi },
  // scheme://user:password@host: only the password is redacted.
  {
    name: 'url-password',
    pattern: /\b[a-z][a-z0-9+.-]{1,30}:\/\/[^\s:/?#@]{1,256}:(?<s>[^\s@/?#]{1,256})@/gi,
  },
  // Connection strings and query strings: Password=…; pwd=…
  {
    name: 'connection-string-password',
    pattern: /(?:^|[\s;?&"'])(?:password|passwd|pwd)\s*=\s*(?<s>[^;\s'"&]{1,256})/gi,
  },
  {
    name: 'card-number',
    pattern: /(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d])/g,
    accept: isCardNumber,
  },
  {
    name: 'us-ssn',
    pattern: /(?<![\d-])\d{3}([- ])\d{2}\1\d{4}(?![\d-])/g,
    accept: isSsn,
  },
  {
    name: 'high-entropy-string',
    pattern: /[A-Za-z0-9+/=_-]{24,}/g,
    accept: isHighEntropyToken,
  },
];

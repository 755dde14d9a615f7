/**
 * Detectors for values that look like secrets or personal data. The C# and Python SDKs port this file literally:
 * the regular expressions use only constructs all three engines read the same way (ASCII classes, no \b, no \s,
 * no flags; lookarounds instead of word boundaries), and the conformance vectors pin the behaviour.
 *
 * Each detector has an id (named in refusals, never the value) and the data class the value reveals. A string is
 * scanned by every detector; the privacy gate refuses it when a detected class is not allowed by the policy.
 *
 *  id               class     rule
 *  pem-private-key  SECRET    `-----BEGIN ` + optional words + `PRIVATE KEY-----` (RSA, EC, OPENSSH, ENCRYPTED, PKCS#8)
 *  jwt              SECRET    `eyJ` + ≥8 base64url, `.eyJ` + ≥8 base64url, `.` + base64url* (a JWS/JWT, signed or not)
 *  api-key          SECRET    a known prefix, not preceded by a letter or digit:
 *                             AWS `AKIA|ASIA` + 16 [0-9A-Z]; GitHub `ghp_|gho_|ghu_|ghs_|ghr_` + ≥36 [A-Za-z0-9],
 *                             `github_pat_` + ≥22 [A-Za-z0-9_]; GitLab `glpat-` + ≥20 [A-Za-z0-9_-];
 *                             Slack `xoxa-|xoxb-|xoxp-|xoxo-|xoxr-|xoxs-` + ≥10 [A-Za-z0-9-];
 *                             Stripe secret/restricted `sk_live_|sk_test_|rk_live_|rk_test_` + ≥16 [A-Za-z0-9];
 *                             OpenAI/Anthropic style `sk-` + ≥20 [A-Za-z0-9_-]; Google `AIza` + 35 [0-9A-Za-z_-];
 *                             npm `npm_` + 36 [A-Za-z0-9]
 *  bearer-token     SECRET    `Bearer` (any letter case) + spaces/tabs + ≥16 token68 characters [A-Za-z0-9-._~+/] + `=`*
 *  url-password     SECRET    `scheme://user:password@` with a non-empty password (userinfo with a colon)
 *  card-number      SECRET    13–19 digits starting with 2–6, single spaces or dashes allowed between digits, not
 *                             touching other digits, passing the Luhn check (separators removed); each regex match is
 *                             checked as a whole (no sub-windows)
 *  ssn              PERSONAL  US SSN `AAA-GG-SSSS` (dashes required), area not 000/666/9xx, group not 00, serial not
 *                             0000, not touching letters or digits
 *  high-entropy     SECRET    a maximal run of ≥32 characters from [A-Za-z0-9+/=_-] containing a lowercase letter, an
 *                             uppercase letter and a digit, whose Shannon entropy over its own characters is ≥ 4.5
 *                             bits per character (H = −Σ p·log2 p over the run's character frequencies). Random
 *                             base64 of 32/40/44 characters is caught ~70/98/99.8 % of the time; hex digests and
 *                             UUIDs (no uppercase), English words and identifiers (entropy below 4.5) are not.
 */
import type { DataClass } from './privacy-types.js';

export interface Detector {
  id: string;
  dataClass: DataClass;
  test(value: string): boolean;
}

const NOT_AFTER_ALNUM = '(?<![A-Za-z0-9])';
const NOT_BEFORE_ALNUM = '(?![A-Za-z0-9])';

function regexDetector(id: string, dataClass: DataClass, source: string): Detector {
  const re = new RegExp(source);
  return { id, dataClass, test: (value) => re.test(value) };
}

const API_KEY_PATTERNS = [
  '(?:AKIA|ASIA)[0-9A-Z]{16}',
  'gh[pousr]_[A-Za-z0-9]{36,}',
  'github_pat_[A-Za-z0-9_]{22,}',
  'glpat-[A-Za-z0-9_-]{20,}',
  'xox[abposr]-[A-Za-z0-9-]{10,}',
  '(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}',
  'sk-[A-Za-z0-9_-]{20,}',
  'AIza[0-9A-Za-z_-]{35}',
  'npm_[A-Za-z0-9]{36}',
];

export function luhnValid(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}

const CARD_CANDIDATE = /(?<![0-9])[2-6][0-9](?:[ -]?[0-9]){11,17}(?![0-9])/g;

const cardNumber: Detector = {
  id: 'card-number',
  dataClass: 'SECRET',
  test(value) {
    for (const match of value.matchAll(CARD_CANDIDATE)) {
      const digits = match[0].replace(/[ -]/g, '');
      if (digits.length >= 13 && digits.length <= 19 && luhnValid(digits)) return true;
    }
    return false;
  },
};

/** Shannon entropy of `text` in bits per character. */
export function shannonEntropy(text: string): number {
  const counts = new Map<string, number>();
  for (const ch of text) counts.set(ch, (counts.get(ch) ?? 0) + 1);
  let entropy = 0;
  for (const count of counts.values()) {
    const p = count / text.length;
    entropy -= p * Math.log2(p);
  }
  return entropy;
}

export const HIGH_ENTROPY_MIN_LENGTH = 32;
export const HIGH_ENTROPY_MIN_BITS = 4.5;
const ENTROPY_RUN = /[A-Za-z0-9+/=_-]{32,}/g;

const highEntropy: Detector = {
  id: 'high-entropy',
  dataClass: 'SECRET',
  test(value) {
    for (const match of value.matchAll(ENTROPY_RUN)) {
      const run = match[0];
      if (!/[a-z]/.test(run) || !/[A-Z]/.test(run) || !/[0-9]/.test(run)) continue;
      if (shannonEntropy(run) >= HIGH_ENTROPY_MIN_BITS) return true;
    }
    return false;
  },
};

/** Every detector, in the order refusals name them. */
export const DETECTORS: readonly Detector[] = [
  regexDetector('pem-private-key', 'SECRET', '-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----'),
  regexDetector(
    'jwt',
    'SECRET',
    `${NOT_AFTER_ALNUM}eyJ[A-Za-z0-9_-]{8,}\\.eyJ[A-Za-z0-9_-]{8,}\\.[A-Za-z0-9_-]*`,
  ),
  regexDetector('api-key', 'SECRET', `${NOT_AFTER_ALNUM}(?:${API_KEY_PATTERNS.join('|')})`),
  regexDetector(
    'bearer-token',
    'SECRET',
    `${NOT_AFTER_ALNUM}[Bb][Ee][Aa][Rr][Ee][Rr][ \\t]+[A-Za-z0-9._~+/-]{16,}=*`,
  ),
  regexDetector(
    'url-password',
    'SECRET',
    '[A-Za-z][A-Za-z0-9+.-]*://[^ \\t\\r\\n/?#@:]*:[^ \\t\\r\\n/?#@]+@',
  ),
  cardNumber,
  regexDetector(
    'ssn',
    'PERSONAL',
    `${NOT_AFTER_ALNUM}(?!000|666|9[0-9]{2})[0-9]{3}-(?!00)[0-9]{2}-(?!0000)[0-9]{4}${NOT_BEFORE_ALNUM}`,
  ),
  highEntropy,
];

/** The detectors that fire on `value`. */
export function detect(value: string, detectors: readonly Detector[] = DETECTORS): Detector[] {
  return detectors.filter((d) => d.test(value));
}

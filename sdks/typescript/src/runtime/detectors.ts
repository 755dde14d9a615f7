/**
 * Detectors for values that look like secrets or personal data. The C# and Python SDKs port this file literally:
 * the regular expressions use only constructs all three engines read the same way (ASCII classes, no \b, no \s,
 * no flags — letter case is spelled out as `[Pp][Aa]…` —, fixed-width lookbehinds, lookarounds instead of word
 * boundaries, numbered groups), and the conformance vectors and the labelled corpus (test/secrets-corpus/) pin the
 * behaviour. The memory subgraph's server filter (subgraphs/memory/src/secrets/) applies the same rules.
 *
 * Each detector has an id (named in refusals, never the value) and the data class the value reveals. A string is
 * scanned by every detector; the privacy gate refuses it when a detected class is not allowed by the policy.
 * Rules are anchored on a known prefix or a keyword (as gitleaks' and detect-secrets' rules are): a long random-
 * looking string on its own (base64 images, base64 text, hashes, pod names, paths) is not a secret.
 *
 *  id                  class     rule
 *  pem-private-key     SECRET    `-----BEGIN ` + optional words + `PRIVATE KEY-----` (RSA, EC, OPENSSH, ENCRYPTED, PKCS#8)
 *  jwt                 SECRET    `eyJ` + ≥8 base64url, `.eyJ` + ≥8 base64url, `.` + base64url* (a JWS/JWT, signed or not;
 *                                a lone header `eyJhbGciOi…` without a payload is not one)
 *  api-key             SECRET    a known prefix, not preceded by a letter or digit:
 *                                AWS `AKIA|ASIA|ABIA|ACCA` + 16 [0-9A-Z]; GitHub `ghp_|gho_|ghu_|ghs_|ghr_` + ≥36 [A-Za-z0-9],
 *                                `github_pat_` + ≥22 [A-Za-z0-9_]; GitLab `glpat-` + ≥20 [A-Za-z0-9_-];
 *                                Slack `xoxa-|xoxb-|xoxp-|xoxo-|xoxr-|xoxs-` + ≥10 [A-Za-z0-9-], webhooks
 *                                `hooks.slack.com/services/` or `/workflows/` + ≥20 [A-Za-z0-9_/-];
 *                                Stripe secret/restricted `sk_live_|sk_test_|rk_live_|rk_test_` + ≥16 [A-Za-z0-9] (not
 *                                the publishable `pk_…`, which is public); OpenAI/Anthropic style `sk-` + ≥20
 *                                [A-Za-z0-9_-]; Google `AIza` + 35 [0-9A-Za-z_-]; npm `npm_` + 36 [A-Za-z0-9];
 *                                PyPI `pypi-AgEIcHlwaS5vcmc` + ≥50 [A-Za-z0-9_-]; SendGrid `SG.` + 22 + `.` + 43
 *                                [A-Za-z0-9_-]; Shopify `shpat_|shpca_|shppa_|shpss_` + 32 hex; DigitalOcean
 *                                `dop_v1_|doo_v1_|dor_v1_` + 64 [a-f0-9]; HashiCorp Vault `hvs.` + ≥90 [A-Za-z0-9_-];
 *                                Hugging Face `hf_` + 34 letters; Databricks `dapi` + 32 [a-f0-9]; Postman `PMAK-` +
 *                                24 hex + `-` + 34 hex; Linear `lin_api_` + 40 [A-Za-z0-9]; Doppler `dp.pt.` + 43
 *                                [A-Za-z0-9]; Age `AGE-SECRET-KEY-1` + 58 bech32; Square `sq0atp-` + 22 /
 *                                `sq0csp-` + 43 [0-9A-Za-z_-]; Discord webhooks `discord.com/api/webhooks/` or
 *                                `discordapp.com/…` + digits + `/` + ≥60 [A-Za-z0-9_-]
 *  bearer-token        SECRET    `Bearer` (any letter case) + spaces/tabs + ≥16 token68 characters [A-Za-z0-9-._~+/] + `=`*
 *                                (not a docs placeholder of only capitals and `_`: `YOUR_ACCESS_TOKEN_HERE`);
 *                                `Authorization:` + spaces + `Basic` + spaces + ≥12 base64 characters + `=`*
 *  url-password        SECRET    `scheme://user:password@` with a non-empty password (userinfo with a colon; the user may
 *                                be empty: `redis://:pw@host`), unless the password is a placeholder (starts with `$`,
 *                                `{`, `<`, `%` or `[`) or a mask (`*` only); scheme ≤ 31, user and password ≤ 256 characters
 *                                (bounded, so a long run of letters costs linear time)
 *  password-assignment SECRET    a password keyword (`password`, `passwd`, `passphrase`, `pwd`, or `pass` after `_`, `-`
 *                                or `.`; any letter case, at the end of an identifier: `DB_PASSWORD`, `"password"`),
 *                                an optional closing quote, then `=`, `:=`, `=>` or `:` and the value: quoted, or up to a
 *                                space, tab, quote, `;`, `,`, `&`, `<` or `>`; after a bare `:` an unquoted value must end
 *                                the line (or be followed by `,`, `}`, `]` or `#`), so `password: click the link` is
 *                                prose. The value is refused unless it is a placeholder (see PLACEHOLDER below)
 *  high-entropy        SECRET    a secret keyword (`secret`, `token`, `key`, `credential`, `auth`, plural allowed, any
 *                                letter case, not right after `public`) + an optional closing quote, then `=`, `:=`,
 *                                `=>`, `:` or spaces, an optional opening quote, and a value of ≥16 characters from
 *                                [A-Za-z0-9+/=_.~-] that looks generated (see looksGenerated: letters and digits,
 *                                digits in two places or base64 symbols between mixed-case letters, not a UUID, a
 *                                path, a lone JWT header or a word-and-number identifier, Shannon entropy ≥ 3.0 bits
 *                                per character). Entropy is only ever asked next to a keyword
 *  card-number         SECRET    13–19 digits starting with 2–6, single spaces or dashes allowed between digits, not
 *                                touching other digits, passing the Luhn check (separators removed); each regex match is
 *                                checked as a whole (no sub-windows)
 *  ssn                 PERSONAL  US SSN `AAA-GG-SSSS` (dashes required), area not 000/666/9xx, group not 00, serial not
 *                                0000, not touching letters or digits
 *
 * PLACEHOLDER (password-assignment): shorter than 4 characters; starts with `$` (`$DB_PASSWORD`, `${DB_PASSWORD}`),
 * `{` (`{{ .Values.pw }}`), `<`, `%` (`%(pw)s`), `#{`, `!` (YAML tags) or `[` (`[REDACTED:…]`, what a filter left);
 * only `*`, `x`/`X`, `.` or `•`; one of null, none, nil, undefined, true, false, empty, required, optional, string,
 * text, password, passwd, secret, redacted, hidden, masked, placeholder, example, changeme, your_password,
 * yourpassword (any letter case); an environment variable name (upper case with an underscore: `DB_PASSWORD`); a
 * path (`/`, `./`, `../`, `~/`); a dotted name without digits (`settings.DB_PASSWORD`, `process.env.PW`) or a call
 * (`getenv(…)`, `os.getenv(`).
 *
 * Limits (by design, see test/secrets-corpus/README.md): a UUID after a key keyword is taken for an id (Heroku keys
 * are UUIDs); a hex digest after a key keyword is taken for a key (`cache_key: <md5>`); an unquoted value with spaces
 * after `password:` reads as prose (quote it); a random-looking string with no keyword and no known prefix passes.
 */
import type { DataClass } from './privacy-types.js';

export interface Detector {
  id: string;
  dataClass: DataClass;
  test(value: string): boolean;
}

const NOT_AFTER_ALNUM = '(?<![A-Za-z0-9])';
const NOT_BEFORE_ALNUM = '(?![A-Za-z0-9])';

/** `password` → `[Pp][Aa][Ss][Ss][Ww][Oo][Rr][Dd]`: any letter case without a flag (engines fold non-ASCII differently). */
function anyCase(word: string): string {
  return [...word].map((ch) => (/[a-z]/.test(ch) ? `[${ch.toUpperCase()}${ch}]` : ch)).join('');
}

function regexDetector(id: string, dataClass: DataClass, source: string): Detector {
  const re = new RegExp(source);
  return { id, dataClass, test: (value) => re.test(value) };
}

const API_KEY_PATTERNS = [
  '(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}',
  'gh[pousr]_[A-Za-z0-9]{36,}',
  'github_pat_[A-Za-z0-9_]{22,}',
  'glpat-[A-Za-z0-9_-]{20,}',
  'xox[abposr]-[A-Za-z0-9-]{10,}',
  'hooks\\.slack\\.com/(?:services|workflows)/[A-Za-z0-9_/-]{20,}',
  '(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}',
  'sk-[A-Za-z0-9_-]{20,}',
  'AIza[0-9A-Za-z_-]{35}',
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

/** The value after a secret keyword: at least this many characters… */
export const HIGH_ENTROPY_MIN_LENGTH = 16;
/** …and at least this many bits per character (Shannon entropy over the value's own characters). */
export const HIGH_ENTROPY_MIN_BITS = 3.0;

const UUID = /^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$/;
const PATH_START = /^(?:\/|\.\.?\/|~\/)/;
const LONE_JWT_PART = /^eyJ[A-Za-z0-9_-]*=*$/;
const DIGIT_RUN = /[0-9]+/g;
const SEGMENT_SEPARATORS = /[-_./+~=]/;

/**
 * Whether a value after a secret keyword looks generated rather than named: letters and digits; digits in at least two
 * places, or `+`/`/` (base64) between upper- and lower-case letters; some segment (split at `-_./+~=`) longer than 3
 * characters mixing letters and digits (`k8s-prod-cluster-01`, `user_profile_v2` are names); not a UUID (ids, far more
 * often than keys), a path or a lone JWT header; entropy ≥ HIGH_ENTROPY_MIN_BITS.
 */
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

/** The lookahead on the first letters is only for speed: the lookbehinds then run at keyword starts, not everywhere. */
const SECRET_KEYWORD = `(?=[SsTtKkCcAa])(?<!${anyCase('public')})(?<!${anyCase('public')}[_.-])(?:${['secret', 'token', 'key', 'credential', 'auth'].map(anyCase).join('|')})[Ss]?(?:[_.-](?:${['base', 'value', 'prod', 'live', 'dev', 'test', 'staging'].map(anyCase).join('|')}))?`;
/** Group 1: the value after a secret keyword. */
const SECRET_ASSIGNMENT = new RegExp(
  `${SECRET_KEYWORD}['"\\]]?(?:[ \\t]*(?:=>|:=|[:=])[ \\t]*|[ \\t]+)['"\`]?([A-Za-z0-9+/=_.~-]{16,})`,
  'g',
);

const highEntropy: Detector = {
  id: 'high-entropy',
  dataClass: 'SECRET',
  test(value) {
    for (const match of value.matchAll(SECRET_ASSIGNMENT)) if (looksGenerated(match[1]!)) return true;
    return false;
  },
};

const PASSWORD_KEYWORD = `(?:${['password', 'passwd', 'passphrase', 'pwd'].map(anyCase).join('|')}|[_.-]${anyCase('pass')})`;
const UNQUOTED_VALUE = '[^ \\t\\r\\n"\'`;,&<>]+';
/**
 * Groups: 1–3 the value after `=`, `:=` or `=>` (double-quoted, single-quoted, bare); 4–6 after `:` (a bare value
 * there must end the line, or be followed by `,`, `}`, `]` or `#`).
 */
const PASSWORD_ASSIGNMENT = new RegExp(
  `${PASSWORD_KEYWORD}['"\\]]?[ \\t]*(?:(?:=>|:=|=)[ \\t]*(?:"([^"\\r\\n]*)"|'([^'\\r\\n]*)'|(${UNQUOTED_VALUE}))` +
    `|:[ \\t]*(?:"([^"\\r\\n]*)"|'([^'\\r\\n]*)'|(${UNQUOTED_VALUE})(?=[ \\t]*(?:[,}\\]#]|(?![^\\r\\n])))))`,
  'g',
);

const PLACEHOLDER_WORDS = [
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
];
/** A placeholder word in any letter case (spelled out, not lower-cased: engines lower-case non-ASCII differently). */
const PLACEHOLDER_WORD = new RegExp(`^(?:${PLACEHOLDER_WORDS.map(anyCase).join('|')})$`);
const PLACEHOLDER_START = /^(?:[$<{%![]|#\{)/; // `[` unescaped: a literal inside a class (Python and C# write `\[`)
const MASK = /^(?:\*+|x+|X+|\.+|•+)$/;
const ENV_NAME = /^[A-Z][A-Z0-9]*_[A-Z0-9_]*$/;
const DOTTED_NAME = /^[A-Za-z_]+(?:\.[A-Za-z_]+)+$/;
const CALL = /^[A-Za-z_][A-Za-z0-9_.]*\(/;

/** Whether a password value is a real one rather than a placeholder, a mask, a reference or a path. */
export function isPasswordValue(value: string): boolean {
  if (value.length < 4) return false;
  if (PLACEHOLDER_START.test(value) || MASK.test(value) || PATH_START.test(value)) return false;
  if (PLACEHOLDER_WORD.test(value)) return false;
  return !ENV_NAME.test(value) && !DOTTED_NAME.test(value) && !CALL.test(value);
}

const passwordAssignment: Detector = {
  id: 'password-assignment',
  dataClass: 'SECRET',
  test(value) {
    for (const match of value.matchAll(PASSWORD_ASSIGNMENT)) {
      const password = match.slice(1).find((group) => group !== undefined);
      if (password !== undefined && isPasswordValue(password)) return true;
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
    `${NOT_AFTER_ALNUM}(?:${anyCase('bearer')}[ \\t]+(?![A-Z_]{16,}(?![A-Za-z0-9._~+/=-]))[A-Za-z0-9._~+/-]{16,}=*|${anyCase('authorization')}['"]?:[ \\t]*['"]?${anyCase('basic')}[ \\t]+[A-Za-z0-9+/]{12,}=*)`,
  ),
  regexDetector(
    'url-password',
    'SECRET',
    '(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,30}://[^ \\t\\r\\n/?#@:]{0,256}:(?![$<{%\\[])(?!\\*+@)[^ \\t\\r\\n/?#@]{1,256}@',
  ),
  passwordAssignment,
  highEntropy,
  cardNumber,
  regexDetector(
    'ssn',
    'PERSONAL',
    `${NOT_AFTER_ALNUM}(?!000|666|9[0-9]{2})[0-9]{3}-(?!00)[0-9]{2}-(?!0000)[0-9]{4}${NOT_BEFORE_ALNUM}`,
  ),
];

/** The detectors that fire on `value`. */
export function detect(value: string, detectors: readonly Detector[] = DETECTORS): Detector[] {
  return detectors.filter((d) => d.test(value));
}

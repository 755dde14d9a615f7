/**
 * Password hashing (scrypt from node:crypto, off the event loop) and the password policy.
 *
 * Stored form: `scrypt$<N>$<r>$<p>$<salt>$<hash>` (salt and hash base64url), so the parameters can be raised later:
 * `needsRehash` says when a stored hash uses weaker parameters than today's, and sign-in rehashes it then.
 * Verification compares in constant time, and for an unknown e-mail it hashes against a dummy so the answer takes
 * as long as for a known one (timing does not reveal which e-mails exist).
 */
import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { badInput } from '@agentgraph/runtime';

export interface ScryptParams {
  /** CPU/memory cost, a power of two. */
  N: number;
  r: number;
  p: number;
}

/** OWASP's scrypt minimum is N=2^17 with r=8, p=1; 2^15 (32 MiB, ~100 ms) is the brief's cost for a shared host. */
export const CURRENT_PARAMS: Readonly<ScryptParams> = { N: 2 ** 15, r: 8, p: 1 };
const SALT_BYTES = 16;
const KEY_BYTES = 32;
/** Upper bounds for parameters read back from the database (a tampered row must not exhaust memory). */
const MAX_N = 2 ** 20;
const MAX_R = 32;
const MAX_P = 16;

export const PASSWORD_MIN_LENGTH = 12;
export const PASSWORD_MAX_LENGTH = 1024;

const STORED = /^scrypt\$(\d{1,8})\$(\d{1,3})\$(\d{1,3})\$([A-Za-z0-9_-]{16,128})\$([A-Za-z0-9_-]{16,128})$/;

/** NFKC, so the same password typed on different keyboards or input methods hashes the same (NIST SP 800-63B). */
function normalize(password: string): string {
  return password.normalize('NFKC');
}

function derive(password: string, salt: Buffer, params: ScryptParams, keyLength: number): Promise<Buffer> {
  // scrypt needs 128 * N * r bytes; Node's default cap (32 MiB) is exactly 2^15 * 8 * 128, so give headroom.
  const options: ScryptOptions = {
    N: params.N,
    r: params.r,
    p: params.p,
    maxmem: 256 * params.N * params.r + 1024 * 1024,
  };
  return new Promise((resolve, reject) => {
    scrypt(normalize(password), salt, keyLength, options, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

interface ParsedHash {
  params: ScryptParams;
  salt: Buffer;
  hash: Buffer;
}

function parseStored(stored: string): ParsedHash | null {
  const m = STORED.exec(stored);
  if (!m) return null;
  const params = { N: Number(m[1]), r: Number(m[2]), p: Number(m[3]) };
  const powerOfTwo = params.N >= 2 && (params.N & (params.N - 1)) === 0;
  if (
    !powerOfTwo ||
    params.N > MAX_N ||
    params.r < 1 ||
    params.r > MAX_R ||
    params.p < 1 ||
    params.p > MAX_P
  ) {
    return null;
  }
  return { params, salt: Buffer.from(m[4]!, 'base64url'), hash: Buffer.from(m[5]!, 'base64url') };
}

/** Hashes a password with today's parameters and a fresh random salt. Does not check the policy. */
export async function hashPassword(
  password: string,
  params: ScryptParams = CURRENT_PARAMS,
  random: (n: number) => Buffer = randomBytes,
): Promise<string> {
  const salt = random(SALT_BYTES);
  const hash = await derive(password, salt, params, KEY_BYTES);
  return `scrypt$${params.N}$${params.r}$${params.p}$${salt.toString('base64url')}$${hash.toString('base64url')}`;
}

let dummy: Promise<string> | null = null;
/** A hash of a random password with today's parameters, computed once: what unknown e-mails are checked against. */
function dummyHash(): Promise<string> {
  dummy ??= hashPassword(randomBytes(32).toString('base64url'));
  return dummy;
}

/**
 * True when `password` matches `stored`. With `stored` null (no such user, or a user without a password) it
 * still runs scrypt against a dummy hash and answers false, so both cases take the same time. A stored value
 * that is not a well-formed hash also answers false (after the same work).
 */
export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  const parsed = stored === null ? null : parseStored(stored);
  const target = parsed ?? parseStored(await dummyHash())!;
  const candidate = await derive(password, target.salt, target.params, target.hash.length);
  const equal = candidate.length === target.hash.length && timingSafeEqual(candidate, target.hash);
  return parsed !== null && equal;
}

/** True when a stored hash uses parameters weaker than today's (rehash it after the next successful sign-in). */
export function needsRehash(stored: string, params: ScryptParams = CURRENT_PARAMS): boolean {
  const parsed = parseStored(stored);
  if (!parsed) return true;
  return (
    parsed.params.N < params.N ||
    parsed.params.r < params.r ||
    parsed.params.p < params.p ||
    parsed.hash.length < KEY_BYTES
  );
}

/**
 * The password policy (NIST SP 800-63B: length over composition rules): 12 to 1024 characters, not the e-mail
 * address itself. Throws BAD_USER_INPUT with field "password"; the message never echoes the password.
 */
export function checkPasswordPolicy(password: string, context: { email?: string } = {}): void {
  const length = [...normalize(password)].length;
  if (length < PASSWORD_MIN_LENGTH) {
    throw badInput(
      `password must be at least ${PASSWORD_MIN_LENGTH} characters long; a few unrelated words make a good one.`,
      { field: 'password' },
    );
  }
  if (length > PASSWORD_MAX_LENGTH) {
    throw badInput(`password must be at most ${PASSWORD_MAX_LENGTH} characters long.`, { field: 'password' });
  }
  const email = context.email?.trim().toLowerCase();
  if (email && normalize(password).trim().toLowerCase() === email) {
    throw badInput('password must not be your e-mail address.', { field: 'password' });
  }
}

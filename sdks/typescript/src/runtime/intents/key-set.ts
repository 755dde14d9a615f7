/**
 * The keys intents are verified with: a JWKS given as data, or fetched from a URL (identity's or coordination's
 * published JWKS) and cached. An unknown `kid` triggers one refetch (not within `cooldownMs` of the last fetch, so
 * a stream of made-up kids cannot make us hammer the server); a cached set older than `maxAgeMs` is refetched.
 * Time comes from the injected clock, so tests are exact.
 */
import {
  createLocalJWKSet,
  type JSONWebKeySet,
  type JWSHeaderParameters,
  type FlattenedJWSInput,
} from 'jose';
import type { Clock } from '../clock.js';
import { IntentVerificationError } from './errors.js';

export interface KeySetOptions {
  /** A fixed key set (public JWKs). */
  jwks?: JSONWebKeySet;
  /** Or the URL of a JWKS to fetch. */
  jwksUrl?: string;
  fetch?: typeof fetch;
  clock?: Pick<Clock, 'now'>;
  /** No refetch for an unknown kid within this long after a fetch (default 30 s). */
  cooldownMs?: number;
  /** Refetch a cached remote set older than this (default 10 min). */
  maxAgeMs?: number;
}

type LocalSet = ReturnType<typeof createLocalJWKSet>;

function isKeySet(value: unknown): value is JSONWebKeySet {
  return (
    typeof value === 'object' &&
    value !== null &&
    Array.isArray((value as { keys?: unknown }).keys) &&
    (value as { keys: unknown[] }).keys.every((k) => typeof k === 'object' && k !== null && !Array.isArray(k))
  );
}

export class IntentKeySet {
  private local: LocalSet | null = null;
  private fetchedAt: number | null = null;
  /** Fetches made so far (for tests and reports). */
  fetches = 0;

  private readonly url: string | undefined;
  private readonly fetchImpl: typeof fetch;
  private readonly clock: Pick<Clock, 'now'>;
  private readonly cooldownMs: number;
  private readonly maxAgeMs: number;

  constructor(options: KeySetOptions) {
    if ((options.jwks === undefined) === (options.jwksUrl === undefined)) {
      throw new TypeError('IntentKeySet: give exactly one of jwks (a key set) or jwksUrl.');
    }
    if (options.jwks !== undefined) {
      if (!isKeySet(options.jwks)) throw new TypeError('IntentKeySet: jwks must be { keys: [JWK, ...] }.');
      if (options.jwks.keys.some((k) => 'd' in k)) {
        throw new TypeError(
          'IntentKeySet: jwks holds a private key (a "d" member); give the public keys only.',
        );
      }
      this.local = createLocalJWKSet(options.jwks);
    }
    this.url = options.jwksUrl;
    this.fetchImpl = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.clock = options.clock ?? { now: () => Date.now() };
    this.cooldownMs = options.cooldownMs ?? 30_000;
    this.maxAgeMs = options.maxAgeMs ?? 10 * 60_000;
  }

  /** The key for a JWS header (jose's getKey contract). */
  async keyFor(header: JWSHeaderParameters, token: FlattenedJWSInput): Promise<CryptoKey> {
    if (typeof header.kid !== 'string' || header.kid.length === 0) {
      throw new IntentVerificationError(
        'MALFORMED',
        'the header has no kid; intents name their signing key.',
      );
    }
    let fetchedNow = false;
    if (this.url !== undefined && (this.local === null || this.age() > this.maxAgeMs)) {
      await this.refresh();
      fetchedNow = true;
    }
    try {
      return (await this.local!(header, token)) as CryptoKey;
    } catch (error) {
      if ((error as { code?: unknown }).code !== 'ERR_JWKS_NO_MATCHING_KEY') throw error;
      if (this.url === undefined || fetchedNow || this.age() < this.cooldownMs) throw this.unknownKid(header);
    }
    await this.refresh();
    try {
      return (await this.local!(header, token)) as CryptoKey;
    } catch (error) {
      if ((error as { code?: unknown }).code === 'ERR_JWKS_NO_MATCHING_KEY') throw this.unknownKid(header);
      throw error;
    }
  }

  private age(): number {
    return this.fetchedAt === null ? Infinity : this.clock.now() - this.fetchedAt;
  }

  private unknownKid(header: JWSHeaderParameters): IntentVerificationError {
    return new IntentVerificationError(
      'UNKNOWN_KID',
      `no key "${header.kid}" for ${header.alg} in the ${this.url ? `JWKS at ${this.url}` : 'given key set'}.`,
    );
  }

  private async refresh(): Promise<void> {
    const url = this.url!;
    this.fetches++;
    this.fetchedAt = this.clock.now();
    let body: unknown;
    try {
      const response = await this.fetchImpl(url, { headers: { accept: 'application/json' } });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      body = await response.json();
    } catch (cause) {
      throw new IntentVerificationError(
        'JWKS_UNAVAILABLE',
        `fetching ${url} failed (${(cause as Error).message}).`,
        {
          cause,
        },
      );
    }
    if (!isKeySet(body)) {
      throw new IntentVerificationError(
        'JWKS_UNAVAILABLE',
        `${url} did not return a JWKS ({ "keys": [...] }).`,
      );
    }
    this.local = createLocalJWKSet(body);
  }
}

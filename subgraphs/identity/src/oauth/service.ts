/**
 * The OAuth authority of one identity process: an oidc-provider instance built from the keys in the database, rebuilt
 * when the set of keys changes (rotation, scheduled here or done by `npm run admin -- rotate-keys`; checked every
 * 30 s), and a node request handler
 * that always delegates to the current instance. Memoized per database, so the GraphQL resolvers, the web pages and the
 * HTTP routes share one.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { AppError, keyVault, type Database, type Queryable, type SubgraphDeps } from '@agentgraph/runtime';
import type Provider from 'oidc-provider';
import {
  ensurePendingSigningKey,
  ensureSigningKey,
  issuerKeys,
  rotateSigningKey,
  sealStoredSigningKeys,
} from '../keys.js';
import { purgeStaleAttempts } from '../attempt-limiter.js';
import { purgeExpiredOAuthRows } from './adapter.js';
import { DEVICE_POLL_INTERVAL_SECONDS } from './constants.js';
import { purgeExpiredDevicePolls } from './device-polling.js';
import { buildProvider } from './provider.js';

export interface OAuthService {
  /** Resolves once the keys are loaded and the provider is built (the handler and the functions here await it). */
  readonly ready: Promise<void>;
  /** The database the service stores through (autocommit; for writes that must survive a caller's rollback). */
  readonly db: Queryable;
  /**
   * The current oidc-provider instance (rebuilt on key rotation: read it each time, don't keep it). Throws
   * SERVICE_UNAVAILABLE before `ready` resolves.
   */
  readonly provider: Provider;
  handler(req: IncomingMessage, res: ServerResponse): Promise<void>;
  /** Re-reads the keys and rebuilds the provider if they changed. */
  refreshKeys(): Promise<void>;
  close(): Promise<void>;
}

export interface OAuthServiceOptions {
  devicePollIntervalSeconds?: number;
  /** Rotate the signing key once it is this old (checked with the keys); default 30 days. */
  signingKeyRotationSeconds?: number;
  keyCheckIntervalMs?: number;
  now?: () => Date;
}

const services = new WeakMap<Database, OAuthService>();

/** The OAuth service of this database (created on first call, with these options). */
export function oauthServiceFor(deps: SubgraphDeps, opts: OAuthServiceOptions = {}): OAuthService {
  let service = services.get(deps.db);
  if (!service) {
    service = createOAuthService(deps, opts);
    services.set(deps.db, service);
  }
  return service;
}

function createOAuthService(deps: SubgraphDeps, opts: OAuthServiceOptions): OAuthService {
  const { db } = deps;
  const vault = keyVault(deps.config);
  const log = deps.log.child({ component: 'oauth' });
  let keys: Awaited<ReturnType<typeof issuerKeys>> = [];
  let provider: Provider | null = null;
  let callback: ((req: IncomingMessage, res: ServerResponse) => unknown) | null = null;
  const build = () => {
    provider = buildProvider({
      ...deps,
      log,
      keys,
      devicePollIntervalSeconds: opts.devicePollIntervalSeconds ?? DEVICE_POLL_INTERVAL_SECONDS,
      now: opts.now,
    });
    callback = provider.callback();
  };
  const fingerprint = () => keys.map((k) => `${k.kid}:${k.state}`).join(',');

  const refreshKeys = async () => {
    const before = fingerprint();
    keys = await issuerKeys(db, vault);
    if (provider && fingerprint() === before) return;
    build();
    log.info('oauth provider ready', { kids: keys.map((k) => ({ kid: k.kid, state: k.state })) });
  };

  let ready: Promise<void> = (async () => {
    await sealStoredSigningKeys(db, vault);
    await ensureSigningKey(db, vault);
    await ensurePendingSigningKey(db, vault);
    await refreshKeys();
  })();
  // A failed start (database down) is retried by the next caller instead of being cached forever.
  const whenReady = (): Promise<void> =>
    ready.catch(() => {
      ready = refreshKeys();
      return ready;
    });
  ready.catch((error: unknown) => log.error('oauth provider could not start; retrying on demand', { error }));

  const rotationSeconds = opts.signingKeyRotationSeconds ?? 30 * 86_400;
  const timer = setInterval(() => {
    if (!provider) return;
    rotateSigningKey(db, vault, rotationSeconds)
      .then(({ kid }) => {
        if (kid) log.info('signing key rotated on schedule', { kid });
        return refreshKeys();
      })
      .catch((error: unknown) => log.warn('could not rotate or re-read signing keys', { error }));
    const at = opts.now?.() ?? new Date();
    purgeExpiredOAuthRows(db, 1000, at)
      .then(() => purgeExpiredDevicePolls(db, at))
      .then(() => purgeStaleAttempts(db, at))
      .catch((error: unknown) => log.warn('could not purge expired oauth rows', { error }));
  }, opts.keyCheckIntervalMs ?? 30_000);
  timer.unref();

  return {
    db,
    get ready() {
      return whenReady();
    },
    get provider(): Provider {
      if (!provider) {
        throw new AppError('SERVICE_UNAVAILABLE', 'The OAuth service is starting. Retry shortly.', {
          retryAfterMs: 1000,
        });
      }
      if (provider.issuer !== deps.config.tokenIssuer) build();
      return provider!;
    },
    async handler(req, res) {
      await whenReady();
      // npm start learns identity's real origin (port 0 in tests) only after it listens, and sets the issuer then.
      if (provider!.issuer !== deps.config.tokenIssuer) build();
      await callback!(req, res);
    },
    refreshKeys,
    async close() {
      clearInterval(timer);
      services.delete(db);
    },
  };
}

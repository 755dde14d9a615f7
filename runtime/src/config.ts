/**
 * Configuration from the environment, validated with zod. A bad value stops the process at start with a message
 * that names the variable and says what is expected; nothing reads process.env anywhere else.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { SERVICES, type Service } from './db/service-roles.js';
import { parseKeyEncryptionKeys } from './key-encryption.js';

export const SUBGRAPH_NAMES = ['identity', 'memory', 'coordination', 'catalog'] as const;
export type SubgraphName = (typeof SUBGRAPH_NAMES)[number];

const bool = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');
const port = z.coerce.number().int().min(0).max(65535);
const positive = z.coerce.number().int().positive();

/** A token bucket: `<per second>/s:<burst>` (e.g. `10/s:50`), or `off`. */
export interface RateLimit {
  perSecond: number;
  burst: number;
}
const rateLimit = z
  .string()
  .trim()
  .regex(/^(off|\d+(\.\d+)?\/s:\d+)$/, 'must be <per second>/s:<burst>, e.g. 10/s:50, or off')
  .transform((v): RateLimit | null => {
    if (v === 'off') return null;
    const [rate, burst] = v.split('/s:');
    return { perSecond: Number(rate), burst: Number(burst) };
  })
  .refine((v) => v === null || (v.perSecond > 0 && v.burst >= 1), 'rate and burst must be positive');

/** What the rate limits apply to (coordination). */
export const RATE_LIMITED_ACTIONS = ['intent', 'post'] as const;
export type RateLimitedAction = (typeof RATE_LIMITED_ACTIONS)[number];

const EnvSchema = z.object({
  AGENTGRAPH_MODE: z.enum(['development', 'production']).default('development'),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
    .optional(),
  /** The app role's own login (same database). Strongly advised in production: see runtime/src/db/postgres.ts. */
  DATABASE_APP_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
    .optional(),
  /** A service's own login (its role `<DATABASE_APP_ROLE>_<service>`); default: DATABASE_APP_URL with that user. */
  DATABASE_IDENTITY_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
    .optional(),
  DATABASE_MEMORY_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
    .optional(),
  DATABASE_COORDINATION_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
    .optional(),
  DATABASE_CATALOG_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
    .optional(),
  DATABASE_GATEWAY_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
    .optional(),
  DATABASE_APP_ROLE: z
    .string()
    .regex(/^[a-z_][a-z0-9_]{0,40}$/)
    .default('agentgraph_app'),
  /**
   * Keys that encrypt the private signing keys stored in the database (envelope encryption: key-encryption.ts):
   * base64 or base64url of 32 random bytes each, comma-separated, the first one encrypts, all decrypt (rotation).
   * Or a file holding them (`KEY_ENCRYPTION_KEYS_FILE`, one per line). Required in production.
   */
  KEY_ENCRYPTION_KEYS: z.string().min(1).optional(),
  KEY_ENCRYPTION_KEYS_FILE: z.string().min(1).optional(),
  DATABASE_POOL_SIZE: positive.default(10),
  /**
   * How long a pooled PostgreSQL connection may sit idle before it is closed. A new backend pays for its first
   * queries: it maps the shared buffers it touches page by page and fills its catalog caches (at 1,000,000 memory
   * records and 4 GB of shared buffers, a hybrid search of a common word ran ~20–40 ms slower on a fresh one). The
   * driver's default, 10 s, reconnected after every pause in traffic; 300 s is what pool managers commonly keep.
   */
  DATABASE_POOL_IDLE_SECONDS: positive.default(300),
  /**
   * Whether this process applies the pending migrations at start (as DATABASE_URL's user). `false` when a one-shot job
   * migrates first (`tsx gateway/src/migrate.ts`, compose.yaml's `migrate`): the process then never uses the owner
   * login, and in production may run with its own login alone (DATABASE_<SERVICE>_URL or DATABASE_APP_URL).
   */
  MIGRATE: bool.default(true),
  DATA_DIR: z.string().default('./.data'),
  /**
   * With DATA_DIR=memory:// only: a folder of migrated PGlite snapshots (one per set of migrations), so a new in-memory
   * database starts from a copy instead of initdb + every migration (the test suite opens hundreds). Development.
   */
  PGLITE_TEMPLATE_DIR: z.string().min(1).optional(),
  HOST: z.string().default('127.0.0.1'),
  GATEWAY_PORT: port.default(4000),
  IDENTITY_PORT: port.default(4101),
  MEMORY_PORT: port.default(4102),
  COORDINATION_PORT: port.default(4103),
  CATALOG_PORT: port.default(4104),
  SUBGRAPH_IDENTITY_URL: z.string().url().optional(),
  SUBGRAPH_MEMORY_URL: z.string().url().optional(),
  SUBGRAPH_COORDINATION_URL: z.string().url().optional(),
  SUBGRAPH_CATALOG_URL: z.string().url().optional(),
  LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error']).default('info'),
  CURSOR_SECRET: z.string().min(32, 'must be at least 32 characters of random data').optional(),
  TOKEN_ISSUER: z.string().url().optional(),
  TOKEN_AUDIENCE: z.string().default('agentgraph'),
  JWKS_URL: z.string().url().optional(),
  MAX_BODY_BYTES: positive.default(6 * 1024 * 1024),
  MAX_PAYLOAD_BYTES: positive.default(5 * 1024 * 1024),
  MAX_DEPTH: positive.default(12),
  MAX_ALIASES: positive.default(30),
  MAX_PAGE_SIZE: positive.default(100),
  IDEMPOTENCY_RETENTION_SECONDS: z.coerce
    .number()
    .int()
    .min(86_400, 'must keep keys at least 24 h (86400 s)')
    .default(86_400),
  CLIENT_POLL_INTERVAL_MS: positive.default(5_000),
  CLIENT_RETRY_MAX_ATTEMPTS: positive.default(5),
  CLIENT_RETRY_BUDGET_MS: positive.default(30_000),
  CLIENT_TELEMETRY_ENABLED: bool.default(true),
  INTROSPECTION: bool.optional(),
  SHUTDOWN_GRACE_MS: positive.default(10_000),
  /** Persisted operations at the gateway: off, apq (automatic persisted queries) or trusted (the manifest only). */
  PERSISTED_QUERIES: z.enum(['off', 'apq', 'trusted']).default('apq'),
  /** The operations manifest (trusted documents); default: the repository's schemas/operations.manifest.json. */
  TRUSTED_DOCUMENTS_FILE: z.string().min(1).optional(),
  /** Budget of the gateway's APQ document cache, in bytes. */
  PERSISTED_QUERIES_CACHE_BYTES: positive.default(16 * 1024 * 1024),
  /** Space- or comma-separated redirect URIs of the web console (exact match, RFC 9700). */
  OAUTH_CONSOLE_REDIRECT_URIS: z.string().optional(),
  /** Secret for signing identity's cookies (sessions, CSRF); 32+ characters, comma-separated to rotate. */
  /** RFC 8628 polling interval advertised to devices, in seconds (slow_down adds 5). */
  DEVICE_POLL_INTERVAL_SECONDS: z.coerce.number().int().min(1).max(60).default(5),
  /** Age at which identity rotates its token-signing key (the next key is published a full period ahead). */
  SIGNING_KEY_ROTATION_DAYS: z.coerce.number().positive().max(365).default(30),
  COOKIE_SECRET: z.string().min(32, 'must be at least 32 characters of random data').optional(),
  /**
   * The gateway's proof to the subgraphs (header x-agentgraph-gateway, runtime/src/gateway-secret.ts): 32+ characters
   * shared by the gateway and every subgraph, or GATEWAY_SECRET_FILE naming a file that holds it.
   */
  GATEWAY_SECRET: z.string().min(32, 'must be at least 32 characters of random data').optional(),
  GATEWAY_SECRET_FILE: z.string().min(1).optional(),
  /** Bearer token a Prometheus scraper sends for /metrics (runtime/src/metrics/; required for /metrics in production). */
  METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters of random data').optional(),
  /** Token buckets (coordination): intent creation and posting (room posts, agent messages), per principal and tenant. */
  /**
   * `iss` of signed intents, and the audience devices sign their reports for: the public origin of coordination
   * (all replicas behind one name). Default: the origin of SUBGRAPH_COORDINATION_URL.
   */
  INTENT_ISSUER: z.string().url().optional(),
  RATE_LIMIT_INTENT_PRINCIPAL: rateLimit.prefault('10/s:50'),
  RATE_LIMIT_INTENT_TENANT: rateLimit.prefault('100/s:500'),
  RATE_LIMIT_POST_PRINCIPAL: rateLimit.prefault('50/s:200'),
  RATE_LIMIT_POST_TENANT: rateLimit.prefault('500/s:2000'),
});

export interface Config {
  mode: 'development' | 'production';
  database:
    | { driver: 'pglite'; dataDir: string | null; templateDir?: string }
    | {
        driver: 'postgres';
        url: string;
        poolSize: number;
        /** DATABASE_POOL_IDLE_SECONDS: an idle pooled connection is closed after this long. */
        poolIdleSeconds: number;
        appUrl: string | null;
        serviceUrls: Partial<Record<Service, string>>;
      };
  appRole: string;
  /** MIGRATE: apply pending migrations at start (false: a migrations job did, before this process started). */
  migrate: boolean;
  /** Key-encryption keys (KEY_ENCRYPTION_KEYS): the first encrypts stored private keys, every one decrypts. */
  keyEncryptionKeys: Buffer[];
  dataDir: string;
  host: string;
  gatewayPort: number;
  subgraphPorts: Record<SubgraphName, number>;
  subgraphUrls: Record<SubgraphName, string>;
  logLevel: 'debug' | 'info' | 'warn' | 'error';
  /** METRICS_TOKEN: /metrics answers a request with it from anywhere; without it, loopback in development only. */
  metricsToken: string | undefined;
  cursorSecret: string;
  tokenIssuer: string;
  tokenAudience: string;
  jwksUrl: string;
  limits: {
    maxBodyBytes: number;
    maxPayloadBytes: number;
    maxDepth: number;
    maxAliases: number;
    maxPageSize: number;
  };
  idempotencyRetentionSeconds: number;
  client: {
    pollIntervalMs: number;
    retryMaxAttempts: number;
    retryBudgetMs: number;
    telemetryEnabled: boolean;
  };
  introspection: boolean;
  shutdownGraceMs: number;
  /** Persisted operations at the gateway (gateway/src/persisted.ts). */
  persistedQueries: {
    mode: 'off' | 'apq' | 'trusted';
    /** Absolute path of the operations manifest. */
    manifestFile: string;
    cacheBytes: number;
  };
  oauth: {
    /** Redirect URIs the web console may use (authorization code + PKCE), matched exactly. */
    consoleRedirectUris: string[];
    /** Keys for identity's signed cookies; the first signs, all verify (rotation). */
    cookieKeys: string[];
    /** RFC 8628 polling interval advertised to devices, in seconds. */
    devicePollIntervalSeconds: number;
    /** Age at which the token-signing key is rotated, in seconds. */
    signingKeyRotationSeconds: number;
  };
  /** `iss` of signed intents (null: the origin of the coordination URL). */
  intentIssuer: string | null;
  /** Sent by the gateway to the subgraphs, which answer `_service`/`_entities` only with it (gateway-secret.ts). */
  gatewaySecret: string;
  /** Token-bucket limits per action, per principal and per tenant (null: no limit). */
  rateLimits: Record<RateLimitedAction, { principal: RateLimit | null; tenant: RateLimit | null }>;
}

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** Reads the dev-only secret from the data folder, creating it (mode 0600) on first start. */
function devSecret(dataDir: string, name: string): string {
  mkdirSync(dataDir, { recursive: true });
  const file = join(dataDir, name);
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const secret = randomBytes(32).toString('base64url');
  writeFileSync(file, secret + '\n', { mode: 0o600 });
  chmodSync(file, 0o600);
  return secret;
}

/** GATEWAY_SECRET, or the content of GATEWAY_SECRET_FILE (trimmed); required in production. */
function readGatewaySecret(
  value: string | undefined,
  file: string | undefined,
  production: boolean,
): string | undefined {
  const invalid = (why: string) => new ConfigError(`Invalid configuration:\n  ${why}`);
  if (value !== undefined && file !== undefined)
    throw invalid('GATEWAY_SECRET_FILE: set either GATEWAY_SECRET or GATEWAY_SECRET_FILE, not both');
  let secret = value;
  if (file !== undefined) {
    try {
      secret = readFileSync(file, 'utf8').trim();
    } catch {
      throw invalid('GATEWAY_SECRET_FILE: cannot be read (a file holding 32+ random characters)');
    }
    if (secret.length < 32)
      throw invalid('GATEWAY_SECRET_FILE: must hold at least 32 characters of random data');
  }
  if (production && secret === undefined) {
    throw invalid(
      'GATEWAY_SECRET: required in production (32+ random characters shared by the gateway and every subgraph; or GATEWAY_SECRET_FILE)',
    );
  }
  return secret;
}

/**
 * KEY_ENCRYPTION_KEYS, or the file KEY_ENCRYPTION_KEYS_FILE; required in production. In development a key of the
 * data folder's (created on first start, 0600), or a random one per process with DATA_DIR=memory:// (processes
 * sharing one database then need the variable, as they need CURSOR_SECRET).
 */
function loadKeyEncryptionKeys(
  e: { KEY_ENCRYPTION_KEYS?: string; KEY_ENCRYPTION_KEYS_FILE?: string; DATA_DIR: string },
  production: boolean,
  dataDir: string,
): Buffer[] {
  try {
    if (e.KEY_ENCRYPTION_KEYS) return parseKeyEncryptionKeys(e.KEY_ENCRYPTION_KEYS, 'KEY_ENCRYPTION_KEYS');
    if (e.KEY_ENCRYPTION_KEYS_FILE) {
      const file = resolve(e.KEY_ENCRYPTION_KEYS_FILE);
      return parseKeyEncryptionKeys(readFileSync(file, 'utf8'), `KEY_ENCRYPTION_KEYS_FILE (${file})`);
    }
  } catch (err) {
    throw new ConfigError(`Invalid configuration:\n  ${(err as Error).message}`);
  }
  if (production) {
    throw new ConfigError(
      'Invalid configuration:\n  KEY_ENCRYPTION_KEYS: required in production (base64 of 32 random bytes, e.g. ' +
        '`openssl rand -base64 32`, shared by all replicas; or KEY_ENCRYPTION_KEYS_FILE)',
    );
  }
  if (e.DATA_DIR === 'memory://') return [randomBytes(32)];
  return parseKeyEncryptionKeys(
    devSecret(dataDir, 'key-encryption-key'),
    'the development key-encryption key',
  );
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.') || '(environment)'}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const e = parsed.data;
  const production = e.AGENTGRAPH_MODE === 'production';
  if (production && !e.CURSOR_SECRET) {
    throw new ConfigError(
      'Invalid configuration:\n  CURSOR_SECRET: required in production (32+ random characters shared by all replicas)',
    );
  }
  if (production && !e.COOKIE_SECRET) {
    throw new ConfigError(
      'Invalid configuration:\n  COOKIE_SECRET: required in production (32+ random characters shared by all identity replicas)',
    );
  }
  // Without migrations to run, a service's own login is enough (it never uses the owner's).
  const ownLogin =
    e.DATABASE_APP_URL ??
    SERVICES.map((s) => e[`DATABASE_${s.toUpperCase()}_URL` as keyof typeof e] as string | undefined).find(
      Boolean,
    );
  const databaseUrl = e.DATABASE_URL ?? (e.MIGRATE ? undefined : ownLogin);
  if (production && !databaseUrl) {
    throw new ConfigError(
      'Invalid configuration:\n  DATABASE_URL: required in production (the embedded PGlite database is for development; ' +
        'with MIGRATE=false, DATABASE_<SERVICE>_URL or DATABASE_APP_URL is enough)',
    );
  }
  const dataDir = resolve(e.DATA_DIR);
  const keyEncryptionKeys = loadKeyEncryptionKeys(e, production, dataDir);
  const gatewaySecret = readGatewaySecret(e.GATEWAY_SECRET, e.GATEWAY_SECRET_FILE, production);
  const subgraphPorts: Record<SubgraphName, number> = {
    identity: e.IDENTITY_PORT,
    memory: e.MEMORY_PORT,
    coordination: e.COORDINATION_PORT,
    catalog: e.CATALOG_PORT,
  };
  const urlFor = (name: SubgraphName): string =>
    (e[`SUBGRAPH_${name.toUpperCase()}_URL` as keyof typeof e] as string | undefined) ??
    `http://${e.HOST}:${subgraphPorts[name]}/graphql`;
  const subgraphUrls = Object.fromEntries(SUBGRAPH_NAMES.map((n) => [n, urlFor(n)])) as Record<
    SubgraphName,
    string
  >;
  const identityOrigin = new URL(subgraphUrls.identity).origin;
  return {
    mode: e.AGENTGRAPH_MODE,
    database: databaseUrl
      ? {
          driver: 'postgres',
          url: databaseUrl,
          poolSize: e.DATABASE_POOL_SIZE,
          poolIdleSeconds: e.DATABASE_POOL_IDLE_SECONDS,
          appUrl: e.DATABASE_APP_URL ?? null,
          serviceUrls: Object.fromEntries(
            SERVICES.flatMap((s) => {
              const url = e[`DATABASE_${s.toUpperCase()}_URL` as keyof typeof e] as string | undefined;
              return url ? [[s, url]] : [];
            }),
          ),
        }
      : e.DATA_DIR === 'memory://'
        ? {
            driver: 'pglite',
            dataDir: null,
            templateDir: e.PGLITE_TEMPLATE_DIR && resolve(e.PGLITE_TEMPLATE_DIR),
          }
        : { driver: 'pglite', dataDir: join(dataDir, 'pglite') },
    appRole: e.DATABASE_APP_ROLE,
    migrate: e.MIGRATE,
    keyEncryptionKeys,
    dataDir,
    host: e.HOST,
    gatewayPort: e.GATEWAY_PORT,
    subgraphPorts,
    subgraphUrls,
    logLevel: e.LOG_LEVEL,
    metricsToken: e.METRICS_TOKEN,
    cursorSecret:
      e.CURSOR_SECRET ??
      (e.DATA_DIR === 'memory://'
        ? randomBytes(32).toString('base64url')
        : devSecret(dataDir, 'cursor-secret')),
    tokenIssuer: e.TOKEN_ISSUER ?? identityOrigin,
    tokenAudience: e.TOKEN_AUDIENCE,
    jwksUrl: e.JWKS_URL ?? `${identityOrigin}/.well-known/jwks.json`,
    limits: {
      maxBodyBytes: e.MAX_BODY_BYTES,
      maxPayloadBytes: e.MAX_PAYLOAD_BYTES,
      maxDepth: e.MAX_DEPTH,
      maxAliases: e.MAX_ALIASES,
      maxPageSize: e.MAX_PAGE_SIZE,
    },
    idempotencyRetentionSeconds: e.IDEMPOTENCY_RETENTION_SECONDS,
    client: {
      pollIntervalMs: e.CLIENT_POLL_INTERVAL_MS,
      retryMaxAttempts: e.CLIENT_RETRY_MAX_ATTEMPTS,
      retryBudgetMs: e.CLIENT_RETRY_BUDGET_MS,
      telemetryEnabled: e.CLIENT_TELEMETRY_ENABLED,
    },
    introspection: e.INTROSPECTION ?? !production,
    shutdownGraceMs: e.SHUTDOWN_GRACE_MS,
    persistedQueries: {
      mode: e.PERSISTED_QUERIES,
      manifestFile: e.TRUSTED_DOCUMENTS_FILE
        ? resolve(e.TRUSTED_DOCUMENTS_FILE)
        : fileURLToPath(new URL('../../schemas/operations.manifest.json', import.meta.url)),
      cacheBytes: e.PERSISTED_QUERIES_CACHE_BYTES,
    },
    oauth: {
      consoleRedirectUris: (
        e.OAUTH_CONSOLE_REDIRECT_URIS ?? `http://${e.HOST}:${e.GATEWAY_PORT}/auth/callback`
      )
        .split(/[\s,]+/)
        .filter(Boolean),
      cookieKeys: (
        e.COOKIE_SECRET ??
        (e.DATA_DIR === 'memory://'
          ? randomBytes(32).toString('base64url')
          : devSecret(dataDir, 'cookie-secret'))
      )
        .split(',')
        .map((k) => k.trim())
        .filter(Boolean),
      devicePollIntervalSeconds: e.DEVICE_POLL_INTERVAL_SECONDS,
      signingKeyRotationSeconds: Math.round(e.SIGNING_KEY_ROTATION_DAYS * 86_400),
    },
    intentIssuer: e.INTENT_ISSUER ? new URL(e.INTENT_ISSUER).origin : null,
    gatewaySecret:
      gatewaySecret ??
      (e.DATA_DIR === 'memory://'
        ? randomBytes(32).toString('base64url')
        : devSecret(dataDir, 'gateway-secret')),
    rateLimits: {
      intent: { principal: e.RATE_LIMIT_INTENT_PRINCIPAL, tenant: e.RATE_LIMIT_INTENT_TENANT },
      post: { principal: e.RATE_LIMIT_POST_PRINCIPAL, tenant: e.RATE_LIMIT_POST_TENANT },
    },
  };
}

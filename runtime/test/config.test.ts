import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';

const secret = 'x'.repeat(32);

function configError(env: NodeJS.ProcessEnv): string {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected loadConfig to throw');
}

describe('loadConfig', () => {
  const dirs: string[] = [];
  const tempDir = () => {
    const d = mkdtempSync(join(tmpdir(), 'agentgraph-config-'));
    dirs.push(d);
    return d;
  };
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it('has working defaults for development on the embedded database', () => {
    const dataDir = tempDir();
    const c = loadConfig({ DATA_DIR: dataDir });
    expect(c.mode).toBe('development');
    expect(c.database).toEqual({ driver: 'pglite', dataDir: join(dataDir, 'pglite') });
    expect(c.appRole).toBe('agentgraph_app');
    expect(c.host).toBe('127.0.0.1');
    expect(c.gatewayPort).toBe(4000);
    expect(c.subgraphPorts).toEqual({ identity: 4101, memory: 4102, coordination: 4103, catalog: 4104 });
    expect(c.subgraphUrls.memory).toBe('http://127.0.0.1:4102/graphql');
    expect(c.tokenIssuer).toBe('http://127.0.0.1:4101');
    expect(c.jwksUrl).toBe('http://127.0.0.1:4101/.well-known/jwks.json');
    expect(c.tokenAudience).toBe('agentgraph');
    expect(c.limits).toEqual({
      maxBodyBytes: 6 * 1024 * 1024,
      maxPayloadBytes: 5 * 1024 * 1024,
      maxDepth: 12,
      maxAliases: 30,
      maxPageSize: 100,
    });
    expect(c.idempotencyRetentionSeconds).toBe(86_400);
    expect(c.client).toEqual({
      pollIntervalMs: 5_000,
      retryMaxAttempts: 5,
      retryBudgetMs: 30_000,
      telemetryEnabled: true,
    });
    expect(c.introspection).toBe(true);
    expect(c.logLevel).toBe('info');
  });

  it('keeps a generated development cursor secret in the data folder (0600), stable across starts', () => {
    const dataDir = tempDir();
    const first = loadConfig({ DATA_DIR: dataDir }).cursorSecret;
    expect(first.length).toBeGreaterThanOrEqual(32);
    expect(loadConfig({ DATA_DIR: dataDir }).cursorSecret).toBe(first);
    const file = join(dataDir, 'cursor-secret');
    expect(readFileSync(file, 'utf8').trim()).toBe(first);
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it('uses an in-memory database and writes nothing for DATA_DIR=memory://', () => {
    const c = loadConfig({ DATA_DIR: 'memory://' });
    expect(c.database).toEqual({ driver: 'pglite', dataDir: null });
    expect(c.cursorSecret.length).toBeGreaterThanOrEqual(32);
  });

  it('uses PostgreSQL when DATABASE_URL is set', () => {
    const c = loadConfig({
      DATABASE_URL: 'postgres://u@127.0.0.1:5432/db',
      DATABASE_POOL_SIZE: '4',
      CURSOR_SECRET: secret,
    });
    expect(c.database).toEqual({
      driver: 'postgres',
      url: 'postgres://u@127.0.0.1:5432/db',
      poolSize: 4,
      poolIdleSeconds: 300,
      appUrl: null,
      serviceUrls: {},
    });
    expect(c.cursorSecret).toBe(secret);
    const own = loadConfig({
      DATABASE_URL: 'postgres://u@127.0.0.1:5432/db',
      DATABASE_APP_URL: 'postgres://agentgraph_app@127.0.0.1:5432/db',
      CURSOR_SECRET: secret,
    });
    expect(own.database).toMatchObject({ appUrl: 'postgres://agentgraph_app@127.0.0.1:5432/db' });
    expect(configError({ DATABASE_APP_URL: 'mysql://x' })).toContain('DATABASE_APP_URL');
    // A service's own login (its role), one variable per service.
    const perService = loadConfig({
      DATABASE_URL: 'postgres://u@127.0.0.1:5432/db',
      DATABASE_IDENTITY_URL: 'postgres://agentgraph_app_identity:pw@127.0.0.1:5432/db',
      DATABASE_GATEWAY_URL: 'postgres://agentgraph_app_gateway:pw@127.0.0.1:5432/db',
      CURSOR_SECRET: secret,
    });
    expect(perService.database).toMatchObject({
      serviceUrls: {
        identity: 'postgres://agentgraph_app_identity:pw@127.0.0.1:5432/db',
        gateway: 'postgres://agentgraph_app_gateway:pw@127.0.0.1:5432/db',
      },
    });
    expect(configError({ DATABASE_MEMORY_URL: 'mysql://x' })).toContain('DATABASE_MEMORY_URL');
    // How long an idle pooled connection stays open.
    const idle = loadConfig({
      DATABASE_URL: 'postgres://u@127.0.0.1:5432/db',
      DATABASE_POOL_IDLE_SECONDS: '45',
      CURSOR_SECRET: secret,
    });
    expect(idle.database).toMatchObject({ poolIdleSeconds: 45 });
    expect(configError({ DATABASE_POOL_IDLE_SECONDS: '0' })).toContain('DATABASE_POOL_IDLE_SECONDS');
  });

  it('coerces numbers and booleans from strings', () => {
    const c = loadConfig({
      DATA_DIR: 'memory://',
      MAX_DEPTH: '7',
      CLIENT_TELEMETRY_ENABLED: '0',
      INTROSPECTION: 'false',
      SUBGRAPH_MEMORY_URL: 'http://memory.internal:8080/graphql',
    });
    expect(c.limits.maxDepth).toBe(7);
    expect(c.client.telemetryEnabled).toBe(false);
    expect(c.introspection).toBe(false);
    expect(c.subgraphUrls.memory).toBe('http://memory.internal:8080/graphql');
  });

  it.each([
    ['MAX_DEPTH', 'deep'],
    ['MAX_PAGE_SIZE', '0'],
    ['GATEWAY_PORT', '70000'],
    ['DATABASE_URL', 'mysql://localhost/db'],
    ['DATABASE_APP_ROLE', 'App; DROP ROLE x'],
    ['LOG_LEVEL', 'verbose'],
    ['CLIENT_TELEMETRY_ENABLED', 'yes'],
    ['AGENTGRAPH_MODE', 'staging'],
    ['IDEMPOTENCY_RETENTION_SECONDS', '3600'],
    ['CURSOR_SECRET', 'too-short'],
    ['JWKS_URL', 'not a url'],
  ])('rejects a bad %s and names it', (name, value) => {
    const message = configError({ DATA_DIR: 'memory://', [name]: value });
    expect(message).toContain(name);
    expect(message).toMatch(/^Invalid configuration:/);
  });

  it('does not echo a rejected secret', () => {
    expect(configError({ DATA_DIR: 'memory://', CURSOR_SECRET: 'hunter2-short' })).not.toContain('hunter2');
  });

  it('requires CURSOR_SECRET in production', () => {
    const message = configError({ AGENTGRAPH_MODE: 'production', DATABASE_URL: 'postgres://u@h/db' });
    expect(message).toContain('CURSOR_SECRET');
  });

  it('requires DATABASE_URL in production', () => {
    const message = configError({
      AGENTGRAPH_MODE: 'production',
      CURSOR_SECRET: secret,
      COOKIE_SECRET: secret,
    });
    expect(message).toContain('DATABASE_URL');
  });

  it('with MIGRATE=false (a migrations job ran) takes a service login alone in production, and migrates nothing', () => {
    const production = {
      AGENTGRAPH_MODE: 'production',
      CURSOR_SECRET: secret,
      COOKIE_SECRET: secret,
      GATEWAY_SECRET: secret,
      KEY_ENCRYPTION_KEYS: Buffer.alloc(32, 9).toString('base64'),
    };
    const own = 'postgres://agentgraph_app_memory:pw@db/agentgraph';
    expect(loadConfig({ ...production, DATABASE_URL: 'postgres://u@h/db' }).migrate).toBe(true);
    // Migrating needs the owner: its own login is not enough then.
    expect(configError({ ...production, DATABASE_MEMORY_URL: own })).toContain('DATABASE_URL: required');
    const c = loadConfig({ ...production, MIGRATE: 'false', DATABASE_MEMORY_URL: own });
    expect(c.migrate).toBe(false);
    expect(c.database).toMatchObject({ driver: 'postgres', url: own, serviceUrls: { memory: own } });
    expect(configError({ ...production, MIGRATE: 'false' })).toContain('DATABASE_URL: required');
    expect(configError({ ...production, MIGRATE: 'no', DATABASE_URL: own })).toContain('MIGRATE');
  });

  it('requires COOKIE_SECRET in production (identity signs its session and CSRF cookies with it)', () => {
    const message = configError({
      AGENTGRAPH_MODE: 'production',
      CURSOR_SECRET: secret,
      DATABASE_URL: 'postgres://u@h/db',
    });
    expect(message).toContain('COOKIE_SECRET');
    expect(configError({ COOKIE_SECRET: 'short' })).toContain('COOKIE_SECRET');
  });

  it('requires GATEWAY_SECRET in production, from the environment or a file (GATEWAY_SECRET_FILE)', () => {
    const production = {
      AGENTGRAPH_MODE: 'production',
      CURSOR_SECRET: secret,
      COOKIE_SECRET: secret,
      KEY_ENCRYPTION_KEYS: Buffer.alloc(32, 3).toString('base64'),
      DATABASE_URL: 'postgres://u@h/db',
    };
    expect(configError(production)).toContain('GATEWAY_SECRET: required in production');
    expect(configError({ ...production, GATEWAY_SECRET: 'hunter2-short' })).toMatch(
      /GATEWAY_SECRET: must be at least 32/,
    );
    expect(configError({ ...production, GATEWAY_SECRET: 'hunter2-short' })).not.toContain('hunter2');
    const dir = tempDir();
    const file = join(dir, 'gateway-secret');
    writeFileSync(file, `${'g'.repeat(40)}\n`);
    expect(loadConfig({ ...production, GATEWAY_SECRET_FILE: file }).gatewaySecret).toBe('g'.repeat(40));
    writeFileSync(file, 'hunter2\n');
    const short = configError({ ...production, GATEWAY_SECRET_FILE: file });
    expect(short).toContain('GATEWAY_SECRET_FILE');
    expect(short).not.toContain('hunter2');
    expect(configError({ ...production, GATEWAY_SECRET_FILE: join(dir, 'missing') })).toContain(
      'GATEWAY_SECRET_FILE: cannot be read',
    );
    expect(configError({ ...production, GATEWAY_SECRET: secret, GATEWAY_SECRET_FILE: file })).toContain(
      'not both',
    );
  });

  it('makes up a gateway secret in development: per process in memory, kept in DATA_DIR otherwise', () => {
    const a = loadConfig({ DATA_DIR: 'memory://' }).gatewaySecret;
    expect(a.length).toBeGreaterThanOrEqual(32);
    expect(loadConfig({ DATA_DIR: 'memory://' }).gatewaySecret).not.toBe(a);
    const dir = tempDir();
    const kept = loadConfig({ DATA_DIR: dir }).gatewaySecret;
    expect(loadConfig({ DATA_DIR: dir }).gatewaySecret).toBe(kept);
    expect(statSync(join(dir, 'gateway-secret')).mode & 0o777).toBe(0o600);
    expect(loadConfig({ DATA_DIR: dir, GATEWAY_SECRET: secret }).gatewaySecret).toBe(secret);
  });

  it('requires KEY_ENCRYPTION_KEYS in production, base64 of 32 bytes each, from the environment or a file', () => {
    const production = {
      AGENTGRAPH_MODE: 'production',
      CURSOR_SECRET: secret,
      COOKIE_SECRET: secret,
      GATEWAY_SECRET: 'g'.repeat(32),
      DATABASE_URL: 'postgres://u@h/db',
    };
    expect(configError(production)).toContain('KEY_ENCRYPTION_KEYS: required in production');
    const short = Buffer.from('hunter2-hunter2').toString('base64');
    expect(configError({ ...production, KEY_ENCRYPTION_KEYS: short })).toMatch(
      /KEY_ENCRYPTION_KEYS: key 1 is not base64 of 32 bytes/,
    );
    expect(configError({ ...production, KEY_ENCRYPTION_KEYS: short })).not.toContain(short);
    const [k1, k2] = [Buffer.alloc(32, 1), Buffer.alloc(32, 2)];
    const two = loadConfig({
      ...production,
      KEY_ENCRYPTION_KEYS: `${k1.toString('base64')},${k2.toString('base64url')}`,
    });
    expect(two.keyEncryptionKeys).toEqual([k1, k2]);
    const dir = tempDir();
    const file = join(dir, 'keks');
    writeFileSync(file, `# active first\n${k2.toString('base64')}\n${k1.toString('base64')}\n`);
    expect(loadConfig({ ...production, KEY_ENCRYPTION_KEYS_FILE: file }).keyEncryptionKeys).toEqual([k2, k1]);
  });

  it('makes up a key-encryption key in development: per process in memory, kept in DATA_DIR otherwise', () => {
    const a = loadConfig({ DATA_DIR: 'memory://' }).keyEncryptionKeys;
    expect(a).toHaveLength(1);
    expect(loadConfig({ DATA_DIR: 'memory://' }).keyEncryptionKeys[0]).not.toEqual(a[0]);
    const dir = tempDir();
    const kept = loadConfig({ DATA_DIR: dir }).keyEncryptionKeys;
    expect(loadConfig({ DATA_DIR: dir }).keyEncryptionKeys).toEqual(kept);
    expect(statSync(join(dir, 'key-encryption-key')).mode & 0o777).toBe(0o600);
  });

  it('accepts production with all five secrets, and turns introspection off there by default', () => {
    const c = loadConfig({
      AGENTGRAPH_MODE: 'production',
      CURSOR_SECRET: secret,
      COOKIE_SECRET: `${secret},${secret.split('').reverse().join('')}`,
      GATEWAY_SECRET: 'g'.repeat(32),
      KEY_ENCRYPTION_KEYS: Buffer.alloc(32, 9).toString('base64'),
      DATABASE_URL: 'postgres://u@h/db',
    });
    expect(c.mode).toBe('production');
    expect(c.introspection).toBe(false);
    expect(c.cursorSecret).toBe(secret);
    expect(c.gatewaySecret).toBe('g'.repeat(32));
    // Comma-separated cookie keys: the first signs, all verify (rotation).
    expect(c.oauth.cookieKeys).toHaveLength(2);
  });

  it('reads the OAuth settings: console redirect URIs, device poll interval, key rotation', () => {
    const c = loadConfig({
      DATA_DIR: 'memory://',
      OAUTH_CONSOLE_REDIRECT_URIS: 'https://console.example/cb, http://127.0.0.1:4000/auth/callback',
      DEVICE_POLL_INTERVAL_SECONDS: '7',
      SIGNING_KEY_ROTATION_DAYS: '14',
    });
    expect(c.oauth.consoleRedirectUris).toEqual([
      'https://console.example/cb',
      'http://127.0.0.1:4000/auth/callback',
    ]);
    expect(c.oauth.devicePollIntervalSeconds).toBe(7);
    expect(c.oauth.signingKeyRotationSeconds).toBe(14 * 86_400);
    expect(configError({ DEVICE_POLL_INTERVAL_SECONDS: '0' })).toContain('DEVICE_POLL_INTERVAL_SECONDS');
  });
});

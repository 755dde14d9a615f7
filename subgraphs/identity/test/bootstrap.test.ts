/**
 * Bootstrap paths and signing-key management on a real database: bootstrapTenant (idempotent, one
 * transaction), ensureDevelopmentTenant (npm start), the admin CLI (in-process and as `npm run admin`),
 * ensureSigningKey under concurrency.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  createLogger,
  loadConfig,
  openDatabase,
  type Config,
  type Database,
  type DatabaseHandle,
} from '@agentgraph/runtime';
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { provisionTestDatabase, type TestDatabase } from '../../../test/src/database.js';
import { runCli, type CliIo } from '../src/cli.js';
import {
  bootstrapTenant,
  ensureDevelopmentTenant,
  ensureSigningKey,
  generateSigningKey,
  identityMigrations,
  isLoopback,
  publishedJwks,
} from '../src/index.js';

const quiet = createLogger({}, { write: () => undefined });

interface Opened {
  testDb: TestDatabase;
  config: Config;
  db: Database;
  handle: DatabaseHandle;
}

async function open(): Promise<Opened> {
  const testDb = await provisionTestDatabase();
  const config = loadConfig({ ...testDb.env, TOKEN_ISSUER: 'http://identity.test' });
  const { db, handle } = await openDatabase(config, [identityMigrations]);
  return { testDb, config, db, handle };
}

async function close(o: Opened | undefined) {
  await o?.handle.close();
  await o?.testDb.drop();
}

function captureIo(): CliIo & { stdout: string[]; stderr: string[] } {
  const stdout: string[] = [];
  const stderr: string[] = [];
  return { stdout, stderr, out: (l) => stdout.push(l), err: (l) => stderr.push(l) };
}

describe('bootstrapTenant', () => {
  let o: Opened;
  beforeAll(async () => {
    o = await open();
  });
  afterAll(() => close(o));

  it('creates tenant, user and OWNER membership; again with the same e-mail and name returns the same ids', async () => {
    const first = await bootstrapTenant(o.db, {
      tenantName: 'Acme',
      email: 'Ada@Example.com',
      displayName: 'Ada',
    });
    expect(first.created).toBe(true);
    const again = await bootstrapTenant(o.db, {
      tenantName: 'Acme',
      email: 'ada@example.com ',
      displayName: 'Other',
    });
    expect(again).toEqual({ ...first, created: false });
    const role = await o.db.query<{ role: string }>('SELECT identity.membership_of($1, $2) AS role', [
      first.userId,
      first.tenantId,
    ]);
    expect(role.rows[0]!.role).toBe('OWNER');
  });

  it('makes an existing user the owner of a second tenant', async () => {
    const acme = await bootstrapTenant(o.db, {
      tenantName: 'Acme',
      email: 'ada@example.com',
      displayName: 'Ada',
    });
    const labs = await bootstrapTenant(o.db, {
      tenantName: 'Acme Labs',
      email: 'ada@example.com',
      displayName: 'Ada',
    });
    expect(labs.created).toBe(true);
    expect(labs.userId).toBe(acme.userId);
    expect(labs.tenantId).not.toBe(acme.tenantId);
  });

  it('gives the same answer to concurrent identical calls (one tenant)', async () => {
    const input = { tenantName: 'Initech', email: 'peter@initech.test', displayName: 'Peter' };
    const results = await Promise.all([1, 2, 3].map(() => bootstrapTenant(o.db, input)));
    expect(new Set(results.map((r) => r.tenantId)).size).toBe(1);
    expect(results.filter((r) => r.created)).toHaveLength(1);
  });

  it('validates input and names the field', async () => {
    await expect(
      bootstrapTenant(o.db, { tenantName: '', email: 'x@y.z', displayName: 'X' }),
    ).rejects.toMatchObject({
      extensions: { code: 'BAD_USER_INPUT', field: 'tenantName' },
    });
    await expect(
      bootstrapTenant(o.db, { tenantName: 'T', email: 'nope', displayName: 'X' }),
    ).rejects.toMatchObject({
      extensions: { code: 'BAD_USER_INPUT', field: 'email' },
    });
  });
});

describe('ensureDevelopmentTenant', () => {
  let o: Opened;
  beforeAll(async () => {
    o = await open();
  });
  afterAll(() => close(o));

  it('refuses outside development mode', async () => {
    await expect(
      ensureDevelopmentTenant({ config: { ...o.config, mode: 'production' }, db: o.db, log: quiet }),
    ).rejects.toThrow(/development mode only/);
  });

  it('creates "Development" owned by dev@localhost on an empty database, and finds it on the next start', async () => {
    const first = await ensureDevelopmentTenant({ config: o.config, db: o.db, log: quiet });
    expect(first).toMatchObject({ email: 'dev@localhost', created: true });
    const next = await ensureDevelopmentTenant({ config: o.config, db: o.db, log: quiet });
    expect(next).toEqual({ ...first, created: false });
    const name = await o.handle.owner.query<{ n: number }>('SELECT identity.has_tenants()::int AS n');
    expect(name.rows[0]!.n).toBe(1);
  });
});

describe('signing keys', () => {
  let o: Opened;
  beforeAll(async () => {
    o = await open();
  });
  afterAll(() => close(o));

  it('generates ES256 keys whose kid is the RFC 7638 thumbprint and whose public half has no d', async () => {
    const k = await generateSigningKey();
    expect(k.kid).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(k.publicJwk).not.toHaveProperty('d');
    expect(k.privateJwk).toHaveProperty('d');
    expect(k.publicJwk).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256', kid: k.kid });
  });

  it('keeps exactly one active key when replicas start together', async () => {
    const results = await Promise.all([1, 2, 3, 4].map(() => ensureSigningKey(o.db)));
    expect(new Set(results.map((r) => r.kid)).size).toBe(1);
    expect(results.filter((r) => r.created).length).toBeLessThanOrEqual(1);
    expect((await publishedJwks(o.db)).keys).toHaveLength(1);
  });

  it('refuses to store a "public" key that carries the private part', async () => {
    const k = await generateSigningKey();
    await expect(
      o.db.query('SELECT * FROM identity.ensure_signing_key($1, $2::text::jsonb, $3::text::jsonb)', [
        k.kid,
        JSON.stringify(k.privateJwk),
        JSON.stringify(k.privateJwk),
      ]),
    ).rejects.toThrow(/must not contain the private key/);
  });
});

describe('isLoopback', () => {
  it('accepts loopback peers only', () => {
    for (const a of ['127.0.0.1', '127.1.2.3', '::1', '::ffff:127.0.0.1']) expect(isLoopback(a)).toBe(true);
    for (const a of [
      undefined,
      '',
      '10.0.0.1',
      '::ffff:10.0.0.1',
      '192.168.1.127',
      'fe80::1',
      '1127.0.0.1',
    ]) {
      expect(isLoopback(a)).toBe(false);
    }
  });
});

describe('admin CLI', () => {
  const pglite = !process.env['DATABASE_URL'];
  const dirs: string[] = [];
  let testDb: TestDatabase;
  const root = new URL('../../..', import.meta.url).pathname;
  const args = (tenant: string, email: string) => [
    'bootstrap',
    '--tenant',
    tenant,
    '--email',
    email,
    '--name',
    'Ada',
  ];

  /** Environment for one CLI run: a fresh embedded data folder (or the test PostgreSQL database). */
  function envFor(): Record<string, string> {
    const dir = mkdtempSync(join(tmpdir(), 'identity-cli-'));
    dirs.push(dir);
    // Ports nothing listens on, so the "in use" probe never reaches a developer's running npm start.
    return {
      ...testDb.env,
      DATA_DIR: dir,
      TOKEN_ISSUER: 'http://identity.test',
      GATEWAY_PORT: '1',
      IDENTITY_PORT: '1',
    };
  }

  /** One JSON line {tenantId, userId, accessToken}; the token is an OWNER access token for them. */
  function expectBootstrapOutput(stdout: string[]) {
    expect(stdout).toHaveLength(1);
    const out = JSON.parse(stdout[0]!) as { tenantId: string; userId: string; accessToken: string };
    expect(Object.keys(out).sort()).toEqual(['accessToken', 'tenantId', 'userId']);
    expect(decodeProtectedHeader(out.accessToken)).toMatchObject({ alg: 'ES256', typ: 'at+jwt' });
    expect(decodeJwt(out.accessToken)).toMatchObject({
      iss: 'http://identity.test',
      aud: 'agentgraph',
      sub: out.userId,
      tid: out.tenantId,
      role: 'OWNER',
    });
  }

  beforeAll(async () => {
    testDb = await provisionTestDatabase();
  });
  afterAll(async () => {
    await testDb?.drop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('answers usage and input errors with exit code 2 before touching the database', async () => {
    const env = envFor();
    const io = captureIo();
    expect(await runCli(['bootstrap', '--tenant', 'Acme'], env, io)).toBe(2);
    expect(io.stderr.join('\n')).toContain('Missing --email, --name');
    expect(await runCli(['frobnicate'], env, io)).toBe(2);
    const bad = captureIo();
    expect(
      await runCli(['bootstrap', '--tenant', 'Acme', '--email', 'nope', '--name', 'Ada'], env, bad),
    ).toBe(2);
    expect(bad.stderr.join('\n')).toMatch(/^--email must be an e-mail address/);
    expect(readdirSync(env['DATA_DIR']!)).toEqual([]);
  });

  it.runIf(pglite)('refuses an embedded database that is in use and says to stop npm start', async () => {
    const env = envFor();
    const held = await openDatabase(loadConfig(env), [identityMigrations]); // what npm start would hold
    try {
      const io = captureIo();
      expect(await runCli(args('Acme', 'ada@example.com'), env, io)).toBe(1);
      expect(io.stdout).toEqual([]);
      expect(io.stderr.join('\n')).toMatch(/in use.*stop npm start/is);
      expect(io.stderr.join('\n')).toContain('--force');
    } finally {
      await held.handle.close();
    }
  });

  it.runIf(pglite)('refuses a leftover postmaster.pid (crashed run) until --force', async () => {
    const env = envFor();
    mkdirSync(join(env['DATA_DIR']!, 'pglite'));
    writeFileSync(join(env['DATA_DIR']!, 'pglite', 'postmaster.pid'), '-42\n/pglite/data\n');
    const refused = captureIo();
    expect(await runCli(args('Acme', 'ada@example.com'), env, refused)).toBe(1);
    expect(refused.stderr.join('\n')).toContain('did not shut down cleanly');
    // Nothing but the stale file is there; with --force the CLI goes ahead.
    rmSync(join(env['DATA_DIR']!, 'pglite'), { recursive: true });
    const io = captureIo();
    expect(await runCli([...args('Acme', 'ada@example.com'), '--force'], env, io)).toBe(0);
    expect(io.stderr).toEqual([]);
    expectBootstrapOutput(io.stdout);
  });

  // On PGlite this also proves a reopened data folder works (migrations are not re-applied).
  it('`npm run admin -- bootstrap …` twice: same ids, and the token verifies against that database’s JWKS', async () => {
    const env = envFor();
    const run = async () =>
      JSON.parse(
        (
          await promisify(execFile)(
            'npm',
            ['run', '-s', 'admin', '--', ...args('Globex', 'hank@globex.test')],
            {
              cwd: root,
              env: { ...process.env, ...env },
            },
          )
        ).stdout,
      ) as { tenantId: string; userId: string; accessToken: string };
    const first = await run();
    expectBootstrapOutput([JSON.stringify(first)]);
    const second = await run();
    expect({ tenantId: second.tenantId, userId: second.userId }).toEqual({
      tenantId: first.tenantId,
      userId: first.userId,
    });
    const { db, handle } = await openDatabase(loadConfig(env), [identityMigrations]);
    try {
      const { payload } = await jwtVerify(second.accessToken, createLocalJWKSet(await publishedJwks(db)), {
        issuer: 'http://identity.test',
        audience: 'agentgraph',
      });
      expect(payload).toMatchObject({ sub: first.userId, tid: first.tenantId, role: 'OWNER' });
    } finally {
      await handle.close();
    }
  });
});

/**
 * Bootstrap paths and signing-key management on a real database: bootstrapTenant (idempotent, one
 * transaction), ensureDevelopmentTenant (npm start), the admin CLI (in-process and as `npm run admin`),
 * ensureSigningKey under concurrency.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  keyVault,
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
import { verifyPassword } from '../src/passwords.js';

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
  const { db, handle } = await openDatabase(config, [identityMigrations], 'identity');
  return { testDb, config, db, handle };
}

async function close(o: Opened | undefined) {
  await o?.handle.close();
  await o?.testDb.drop();
}

/** CLI output captured; `stdin` is what --password-stdin reads, `answers` what the terminal prompt gets (null: no TTY). */
function captureIo(
  o: { stdin?: string; answers?: string[] | null } = {},
): CliIo & { stdout: string[]; stderr: string[]; prompts: string[] } {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const prompts: string[] = [];
  const answers = o.answers === undefined ? null : o.answers && [...o.answers];
  return {
    stdout,
    stderr,
    prompts,
    out: (l) => void stdout.push(l),
    err: (l) => void stderr.push(l),
    readStdin: async () => o.stdin ?? '',
    promptSecret: async (q) => {
      prompts.push(q);
      return answers ? (answers.shift() ?? '') : null;
    },
  };
}

describe('bootstrapTenant', () => {
  let o: Opened;
  beforeAll(async () => {
    o = await open();
  });
  afterAll(() => close(o));

  it('creates tenant, user and OWNER membership; again with the same e-mail and name returns the same ids', async () => {
    const first = await bootstrapTenant(o.handle.owner, {
      tenantName: 'Acme',
      email: 'Ada@Example.com',
      displayName: 'Ada',
    });
    expect(first.created).toBe(true);
    const again = await bootstrapTenant(o.handle.owner, {
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
    const acme = await bootstrapTenant(o.handle.owner, {
      tenantName: 'Acme',
      email: 'ada@example.com',
      displayName: 'Ada',
    });
    const labs = await bootstrapTenant(o.handle.owner, {
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
    const results = await Promise.all([1, 2, 3].map(() => bootstrapTenant(o.handle.owner, input)));
    expect(new Set(results.map((r) => r.tenantId)).size).toBe(1);
    expect(results.filter((r) => r.created)).toHaveLength(1);
  });

  it('validates input and names the field', async () => {
    await expect(
      bootstrapTenant(o.handle.owner, { tenantName: '', email: 'x@y.z', displayName: 'X' }),
    ).rejects.toMatchObject({
      extensions: { code: 'BAD_USER_INPUT', field: 'tenantName' },
    });
    await expect(
      bootstrapTenant(o.handle.owner, { tenantName: 'T', email: 'nope', displayName: 'X' }),
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
      ensureDevelopmentTenant({
        config: { ...o.config, mode: 'production' },
        owner: o.handle.owner,
        log: quiet,
      }),
    ).rejects.toThrow(/development mode only/);
  });

  it('creates "Development" owned by dev@localhost on an empty database, and finds it on the next start', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'identity-dev-'));
    try {
      const lines: string[] = [];
      const log = createLogger({}, { write: (l) => lines.push(l) });
      const config = { ...o.config, dataDir };
      const first = await ensureDevelopmentTenant({ config, owner: o.handle.owner, log });
      expect(first).toMatchObject({
        email: 'dev@localhost',
        created: true,
        credentialsFile: join(dataDir, 'dev-credentials.json'),
      });
      // The password is random, in a 0600 file; the log names the file, never the password.
      const file = first!.credentialsFile!;
      expect(statSync(file).mode & 0o777).toBe(0o600);
      const creds = JSON.parse(readFileSync(file, 'utf8')) as Record<string, string>;
      expect(Object.keys(creds).sort()).toEqual(['email', 'password', 'signInUrl']);
      expect(creds['email']).toBe('dev@localhost');
      expect(creds['password']!.length).toBeGreaterThanOrEqual(24);
      expect(creds['signInUrl']).toBe('http://identity.test/signin');
      expect(lines.join('\n')).toContain(file);
      expect(lines.join('\n')).not.toContain(creds['password']);
      const hash = await o.db.query<{ password_hash: string }>(
        'SELECT password_hash FROM identity.user_for_sign_in($1)',
        ['dev@localhost'],
      );
      expect(await verifyPassword(creds['password']!, hash.rows[0]!.password_hash)).toBe(true);

      // Next start: same tenant, same file, the password untouched.
      const next = await ensureDevelopmentTenant({ config, owner: o.handle.owner, log });
      expect(next).toEqual({ ...first, created: false });
      expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual(creds);
      const again = await o.db.query<{ password_hash: string }>(
        'SELECT password_hash FROM identity.user_for_sign_in($1)',
        ['dev@localhost'],
      );
      expect(again.rows[0]!.password_hash).toBe(hash.rows[0]!.password_hash);
      const name = await o.handle.owner.query<{ n: number }>('SELECT identity.has_tenants()::int AS n');
      expect(name.rows[0]!.n).toBe(1);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('with the in-memory database writes the credentials to a fresh temporary folder', async () => {
    const c = await open();
    try {
      // DATA_DIR=memory:// (what the PGlite test database uses) whatever the database is.
      const config = loadConfig({
        ...c.testDb.env,
        DATA_DIR: 'memory://',
        TOKEN_ISSUER: 'http://identity.test',
      });
      const r = await ensureDevelopmentTenant({ config, owner: c.handle.owner, log: quiet });
      expect(r!.credentialsFile).toMatch(
        new RegExp(`^${tmpdir()}/agentgraph-dev-[^/]+/dev-credentials\\.json$`),
      );
      expect(statSync(r!.credentialsFile!).mode & 0o777).toBe(0o600);
      rmSync(join(r!.credentialsFile!, '..'), { recursive: true, force: true });
    } finally {
      await close(c);
    }
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
    const results = await Promise.all([1, 2, 3, 4].map(() => ensureSigningKey(o.db, keyVault(o.config))));
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

const PASSWORD = 'correct horse battery staple';

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
    const held = await openDatabase(loadConfig(env), [identityMigrations], 'identity'); // what npm start would hold
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
    const refused = captureIo({ stdin: PASSWORD });
    expect(await runCli([...args('Acme', 'ada@example.com'), '--password-stdin'], env, refused)).toBe(1);
    expect(refused.stderr.join('\n')).toContain('did not shut down cleanly');
    // Nothing but the stale file is there; with --force the CLI goes ahead.
    rmSync(join(env['DATA_DIR']!, 'pglite'), { recursive: true });
    const io = captureIo({ stdin: PASSWORD });
    expect(await runCli([...args('Acme', 'ada@example.com'), '--password-stdin', '--force'], env, io)).toBe(
      0,
    );
    expect(io.stderr).toEqual([]);
    expectBootstrapOutput(io.stdout);
  });

  /** Runs `npm run admin -- …` as a real child process with `stdin` piped in. */
  function npmAdmin(argv: string[], env: Record<string, string>, stdin: string) {
    return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
      const child = spawn('npm', ['run', '-s', 'admin', '--', ...argv], {
        cwd: root,
        env: { ...process.env, ...env },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, stdout, stderr }));
      child.stdin.end(stdin);
    });
  }

  // On PGlite this also proves a reopened data folder works (migrations are not re-applied).
  it('`npm run admin -- bootstrap …` twice: same ids, the password kept, and the token verifies against that database’s JWKS', async () => {
    const env = envFor();
    const first = await npmAdmin(
      [...args('Globex', 'hank@globex.test'), '--password-stdin'],
      env,
      `${PASSWORD}\n`,
    );
    expect(first.code).toBe(0);
    const ids = JSON.parse(first.stdout) as { tenantId: string; userId: string; accessToken: string };
    expectBootstrapOutput([first.stdout.trim()]);
    // The owner has a password now: running it again asks for none (stdin is not a terminal) and changes nothing.
    const second = await npmAdmin(args('Globex', 'hank@globex.test'), env, '');
    expect(second.code).toBe(0);
    const again = JSON.parse(second.stdout) as typeof ids;
    expect({ tenantId: again.tenantId, userId: again.userId }).toEqual({
      tenantId: ids.tenantId,
      userId: ids.userId,
    });
    const { db, handle } = await openDatabase(loadConfig(env), [identityMigrations], 'identity');
    try {
      const { payload } = await jwtVerify(again.accessToken, createLocalJWKSet(await publishedJwks(db)), {
        issuer: 'http://identity.test',
        audience: 'agentgraph',
      });
      expect(payload).toMatchObject({ sub: ids.userId, tid: ids.tenantId, role: 'OWNER' });
      const u = await db.query<{ password_hash: string }>(
        'SELECT password_hash FROM identity.user_for_sign_in($1)',
        ['hank@globex.test'],
      );
      expect(await verifyPassword(PASSWORD, u.rows[0]!.password_hash)).toBe(true);
    } finally {
      await handle.close();
    }
  });

  it('bootstrap takes the new owner’s password from stdin or the terminal only, never an argument or a default', async () => {
    const env = envFor();
    const argv = args('Initech', 'peter@initech.test');
    const run = async (extra: string[], o: Parameters<typeof captureIo>[0]) => {
      const io = captureIo(o);
      return { code: await runCli([...argv, ...extra], env, io), io };
    };

    const asArgument = await run(['--password', PASSWORD], {});
    expect(asArgument.code).toBe(2);
    expect(asArgument.io.stderr.join('\n')).toContain('never passed as arguments');

    const short = await run(['--password-stdin'], { stdin: 'too short\n' });
    expect(short.code).toBe(2);
    expect(short.io.stderr.join('\n')).toContain('at least 12 characters');
    const email = await run(['--password-stdin'], { stdin: 'Peter@Initech.test\n' });
    expect(email.code).toBe(2);
    expect(email.io.stderr.join('\n')).toContain('must not be your e-mail address');
    if (pglite) expect(readdirSync(env['DATA_DIR']!)).toEqual([]);

    // No terminal and no --password-stdin: refused, nothing created.
    const none = await run([], { answers: null });
    expect(none.code).toBe(2);
    expect(none.io.stderr.join('\n')).toContain('--password-stdin');
    const mismatch = await run([], { answers: [PASSWORD, `${PASSWORD}x`] });
    expect(mismatch.code).toBe(2);
    expect(mismatch.io.stderr.join('\n')).toContain('differ');

    const asked = await run([], { answers: [PASSWORD, PASSWORD] });
    expect(asked.code).toBe(0);
    expect(asked.io.prompts).toEqual(['Password for peter@initech.test: ', 'Repeat the password: ']);
    expectBootstrapOutput(asked.io.stdout);
    const { db, handle } = await openDatabase(loadConfig(env), [identityMigrations], 'identity');
    try {
      const m = await db.query('SELECT * FROM identity.memberships_by_email($1)', ['peter@initech.test']);
      expect(m.rows).toHaveLength(1); // the refused runs created nothing
      const u = await db.query<{ password_hash: string }>(
        'SELECT password_hash FROM identity.user_for_sign_in($1)',
        ['peter@initech.test'],
      );
      expect(await verifyPassword(PASSWORD, u.rows[0]!.password_hash)).toBe(true);
    } finally {
      await handle.close();
    }
  });

  it('create-user, set-password and add-member', async () => {
    const env = envFor();
    const cli = async (argv: string[], o: Parameters<typeof captureIo>[0] = {}) => {
      const io = captureIo(o);
      const code = await runCli(argv, env, io);
      return {
        code,
        out: io.stdout.length ? (JSON.parse(io.stdout[0]!) as Record<string, unknown>) : null,
        err: io.stderr.join('\n'),
      };
    };
    const boot = await cli([...args('Umbrella', 'alice@umbrella.test'), '--password-stdin'], {
      stdin: PASSWORD,
    });
    expect(boot.code).toBe(0);
    const tenantId = boot.out!['tenantId'] as string;

    expect(
      (await cli(['create-user', '--email', 'bob@umbrella.test', '--name', 'Bob', '--role', 'ADMIN'])).code,
    ).toBe(2);
    const created = await cli(['create-user', '--email', 'Bob@Umbrella.test', '--name', 'Bob']);
    expect(created.code).toBe(0);
    expect(created.out).toMatchObject({ created: true, passwordSet: false });
    expect(created.err).toContain('No password set');
    const bobId = created.out!['userId'];
    const again = await cli(
      ['create-user', '--email', 'bob@umbrella.test', '--name', 'Robert', '--password-stdin'],
      {
        stdin: `${PASSWORD}\n`,
      },
    );
    expect(again.out).toEqual({ userId: bobId, created: false, passwordSet: true });

    expect(
      (await cli(['add-member', '--tenant-id', 'nope', '--email', 'bob@umbrella.test', '--role', 'ADMIN']))
        .code,
    ).toBe(2);
    expect(
      (await cli(['add-member', '--tenant-id', tenantId, '--email', 'bob@umbrella.test', '--role', 'GOD']))
        .code,
    ).toBe(2);
    const noTenant = await cli([
      'add-member',
      '--tenant-id',
      '00000000-0000-4000-8000-000000000000',
      '--email',
      'bob@umbrella.test',
      '--role',
      'ADMIN',
    ]);
    expect(noTenant.code).toBe(1);
    expect(noTenant.err).toContain('no tenant with id');
    const noUser = await cli([
      'add-member',
      '--tenant-id',
      tenantId,
      '--email',
      'carol@umbrella.test',
      '--role',
      'ADMIN',
    ]);
    expect(noUser.code).toBe(1);
    expect(noUser.err).toContain('create-user');
    const added = await cli([
      'add-member',
      '--tenant-id',
      tenantId,
      '--email',
      'bob@umbrella.test',
      '--role',
      'admin',
    ]);
    expect(added.out).toEqual({ tenantId, userId: bobId, role: 'ADMIN', previousRole: null });
    const changed = await cli([
      'add-member',
      '--tenant-id',
      tenantId,
      '--email',
      'bob@umbrella.test',
      '--role',
      'VIEWER',
    ]);
    expect(changed.out).toMatchObject({ role: 'VIEWER', previousRole: 'ADMIN' });
    const lastOwner = await cli([
      'add-member',
      '--tenant-id',
      tenantId,
      '--email',
      'alice@umbrella.test',
      '--role',
      'ADMIN',
    ]);
    expect(lastOwner.code).toBe(1);
    expect(lastOwner.err).toContain('last owner');

    const unknown = await cli(['set-password', '--email', 'carol@umbrella.test', '--password-stdin'], {
      stdin: PASSWORD,
    });
    expect(unknown.code).toBe(1);
    expect(unknown.err).toContain('create-user');

    // set-password replaces the password and ends the user's web sessions.
    const { db, handle } = await openDatabase(loadConfig(env), [identityMigrations], 'identity');
    try {
      await db.query("SELECT identity.create_web_session($1, $2, $3, $4, now(), now() + interval '1 hour')", [
        Buffer.alloc(32, 1),
        bobId,
        tenantId,
        Buffer.alloc(32, 2),
      ]);
    } finally {
      await handle.close();
    }
    const reset = await cli(['set-password', '--email', 'bob@umbrella.test'], {
      answers: ['another long passphrase', 'another long passphrase'],
    });
    expect(reset).toMatchObject({ code: 0, out: { userId: bobId } });
    const reopened = await openDatabase(loadConfig(env), [identityMigrations], 'identity');
    try {
      const u = await reopened.db.query<{ password_hash: string }>(
        'SELECT password_hash FROM identity.user_for_sign_in($1)',
        ['bob@umbrella.test'],
      );
      expect(await verifyPassword('another long passphrase', u.rows[0]!.password_hash)).toBe(true);
      expect(await verifyPassword(PASSWORD, u.rows[0]!.password_hash)).toBe(false);
      const live = await reopened.db.query('SELECT * FROM identity.web_session($1, now())', [
        Buffer.alloc(32, 1),
      ]);
      expect(live.rows).toEqual([]);
    } finally {
      await reopened.handle.close();
    }
  });

  it('rotate-keys promotes the pending key and publishes a new one', async () => {
    const env = envFor();
    const rotate = async () => {
      const io = captureIo({});
      const code = await runCli(['rotate-keys'], env, io);
      return {
        code,
        out: JSON.parse(io.stdout[0] ?? 'null') as { kid: string; keys: { kid: string; state: string }[] },
      };
    };
    const first = await rotate();
    expect(first.code).toBe(0);
    // On a fresh database there was no pending key yet: a new key became active directly, and one is pending now.
    expect(first.out.keys.map((k) => k.state)).toEqual(['active', 'pending', 'retired']);
    expect(first.out.keys[0]!.kid).toBe(first.out.kid);
    const pending = first.out.keys[1]!.kid;
    const second = await rotate();
    expect(second.code).toBe(0);
    expect(second.out.kid).toBe(pending);
    expect(second.out.keys.map((k) => [k.kid, k.state]).slice(0, 1)).toEqual([[pending, 'active']]);
    expect(second.out.keys.filter((k) => k.state === 'retired')).toHaveLength(2);
  });
});

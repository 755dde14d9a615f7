/**
 * Admin CLI of the identity subgraph (`npm run admin -- <command> …`):
 *
 *   bootstrap   --tenant <name> --email <e-mail> --name <display name> [--password-stdin]
 *   create-user --email <e-mail> --name <display name> [--password-stdin]
 *   set-password --email <e-mail> [--password-stdin]
 *   add-member  --tenant-id <uuid> --email <e-mail> --role OWNER|ADMIN|OPERATOR|PUBLISHER|VIEWER
 *
 * Opens the configured database (the same environment as `npm start` or the identity service: DATABASE_URL, or the
 * embedded PGlite under DATA_DIR), applies the runtime and identity migrations and works with the migration role's
 * rights (creating users, setting passwords and memberships go through definer functions only that role may call).
 * Prints one JSON line to stdout; messages go to stderr. Exit codes: 0 done, 1 failed, 2 usage.
 *
 * Passwords never come from an argument (shell history, `ps`) and there is no default: `--password-stdin` reads one
 * line from standard input, otherwise a terminal is asked twice with echo off.
 *
 * The embedded PGlite database is single-process: stop `npm start` before running this against it.
 */
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import {
  AppError,
  ConfigError,
  embeddedDatabaseInUse,
  keyVault,
  loadConfig,
  migrate,
  openHandle,
  runtimeMigrations,
  type Config,
  type DatabaseHandle,
} from '@agentgraph/runtime';
import { z } from 'zod';
import { bootstrapTenant, type BootstrapTenantInput } from './bootstrap.js';
import { BootstrapInput, Email, isUuid, parseInput } from './input.js';
import { identityMigrations } from './index.js';
import { ensureSigningKey } from './keys.js';
import { ROLES, type Role } from './models.js';
import { checkPasswordPolicy, hashPassword } from './passwords.js';
import { issuerKeys, rotateSigningKey } from './keys.js';
import { issueAccessToken } from './tokens.js';

const USAGE = `Usage:
  npm run admin -- bootstrap --tenant <name> --email <e-mail> --name <display name> [--password-stdin]
  npm run admin -- create-user --email <e-mail> --name <display name> [--password-stdin]
  npm run admin -- set-password --email <e-mail> [--password-stdin]
  npm run admin -- add-member --tenant-id <tenant id> --email <e-mail> --role <OWNER|ADMIN|OPERATOR|PUBLISHER|VIEWER>
  npm run admin -- rotate-keys

bootstrap     creates a tenant owned by a user (created if the e-mail is new) and prints
              {"tenantId", "userId", "accessToken"}. A new owner needs a password; an existing
              one keeps theirs. Running it again prints the same ids and a fresh token.
create-user   creates a user without any membership ({"userId", "created", "passwordSet"}).
set-password  sets or replaces a user's password and signs them out of the web pages.
add-member    makes an existing user a member of a tenant, or changes their role.
rotate-keys   rotates the token-signing key now: the pending key (already in the JWKS) starts signing, the
              active one is retired (published one more hour) and a new pending key is made. Running
              identity replicas pick it up within 30 s. Prints {"kid", "keys": [{kid, state}]}.

  --password-stdin  read the password from the first line of standard input
                    (otherwise you are asked in the terminal; never pass it as an argument)
  --force           open the embedded database even though it looks in use (only after a crash of npm start)

Passwords: 12 to 1024 characters, not the e-mail address. Configuration comes from the environment,
as for npm start (DATABASE_URL, DATA_DIR, TOKEN_ISSUER, ...).`;

export interface CliIo {
  out(line: string): void;
  err(line: string): void;
  /** All of standard input (for --password-stdin). */
  readStdin(): Promise<string>;
  /** Asks on the terminal with echo off; null when standard input is not a terminal. */
  promptSecret(question: string): Promise<string | null>;
}

function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer | string) => chunks.push(Buffer.from(c)));
    stream.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    stream.on('error', reject);
  });
}

/** Reads one line from the terminal without echoing it (raw mode); Ctrl-C or Ctrl-D abandon. */
function promptOnTerminal(question: string): Promise<string | null> {
  const stdin = process.stdin;
  if (!stdin.isTTY) return Promise.resolve(null);
  process.stderr.write(question);
  return new Promise((resolve, reject) => {
    let value = '';
    const done = (result: string | null, error?: Error) => {
      stdin.off('data', onData);
      stdin.setRawMode(false);
      stdin.pause();
      process.stderr.write('\n');
      if (error) reject(error);
      else resolve(result);
    };
    const onData = (chunk: Buffer) => {
      for (const ch of chunk.toString('utf8')) {
        if (ch === '\r' || ch === '\n') return done(value);
        if (ch === '\u0003' || ch === '\u0004') return done(null, new Error('Cancelled.'));
        if (ch === '\u007f' || ch === '\b') value = [...value].slice(0, -1).join('');
        else if (ch >= ' ') value += ch;
      }
    };
    stdin.setRawMode(true);
    stdin.resume();
    stdin.on('data', onData);
  });
}

const stdio: CliIo = {
  out: (line) => process.stdout.write(line + '\n'),
  err: (line) => process.stderr.write(line + '\n'),
  readStdin: () => readAll(process.stdin),
  promptSecret: promptOnTerminal,
};

/** A usage problem: exit code 2, message on stderr. */
class UsageError extends Error {}

type Values = {
  tenant?: string;
  'tenant-id'?: string;
  email?: string;
  name?: string;
  role?: string;
  'password-stdin'?: boolean;
  force?: boolean;
  help?: boolean;
};

const COMMANDS = {
  bootstrap: { required: ['tenant', 'email', 'name'], allowed: ['password-stdin'] },
  'create-user': { required: ['email', 'name'], allowed: ['password-stdin'] },
  'set-password': { required: ['email'], allowed: ['password-stdin'] },
  'add-member': { required: ['tenant-id', 'email', 'role'], allowed: [] },
  'rotate-keys': { required: [], allowed: [] },
} as const satisfies Record<string, { required: (keyof Values)[]; allowed: (keyof Values)[] }>;
type Command = keyof typeof COMMANDS;

const FLAG_OF: Record<string, string> = {
  tenantName: '--tenant',
  email: '--email',
  displayName: '--name',
  password: 'the password',
};

/** Validates with zod and names the flag (not the field) in the message. */
function parseFlags<T>(schema: z.ZodType<T>, value: unknown): T {
  try {
    return parseInput(schema, value, '');
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    const f = String(err.extensions['field'] ?? '');
    throw new UsageError(FLAG_OF[f] ? err.message.replace(f, FLAG_OF[f]) : err.message);
  }
}

const CreateUserInput = BootstrapInput.pick({ email: true, displayName: true });
const MemberInput = z.object({
  tenantId: z
    .string()
    .refine(isUuid, 'must be a tenant id (a UUID, as bootstrap printed it)')
    .transform((s) => s.toLowerCase()),
  email: Email,
  role: z
    .string()
    .transform((s) => s.toUpperCase())
    .pipe(z.enum(ROLES, `must be one of ${ROLES.join(', ')}`)),
});

/** The password from stdin (first line) or the terminal (asked twice); checked against the policy. */
async function obtainPassword(io: CliIo, values: Values, email: string): Promise<string> {
  let password: string;
  if (values['password-stdin']) {
    password = (await io.readStdin()).split(/\r?\n/)[0] ?? '';
  } else {
    const first = await io.promptSecret(`Password for ${email}: `);
    if (first === null) {
      throw new UsageError(
        'This needs a password: pipe it in with --password-stdin, or run the command in a terminal to be asked.',
      );
    }
    const again = await io.promptSecret('Repeat the password: ');
    if (again !== first)
      throw new UsageError('The two passwords differ. Nothing was changed; run the command again.');
    password = first;
  }
  try {
    checkPasswordPolicy(password, { email });
  } catch (err) {
    if (err instanceof AppError) throw new UsageError(err.message.replace(/^password/, 'The password'));
    throw err;
  }
  return password;
}

async function hasPassword(db: DatabaseHandle['owner'], email: string): Promise<boolean | null> {
  const r = await db.query<{ has: boolean }>(
    'SELECT password_hash IS NOT NULL AS has FROM identity.user_for_sign_in($1)',
    [email],
  );
  return r.rows[0]?.has ?? null;
}

export async function runCli(
  argv: string[],
  env: NodeJS.ProcessEnv = process.env,
  io: CliIo = stdio,
): Promise<number> {
  let values: Values;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        tenant: { type: 'string' },
        'tenant-id': { type: 'string' },
        email: { type: 'string' },
        name: { type: 'string' },
        role: { type: 'string' },
        'password-stdin': { type: 'boolean', default: false },
        password: { type: 'string' },
        force: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }) as { values: Values & { password?: string }; positionals: string[] });
  } catch (err) {
    io.err(`${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    io.out(USAGE);
    return 0;
  }
  if ('password' in values) {
    io.err('Passwords are never passed as arguments (they end up in shell history). Use --password-stdin.');
    return 2;
  }
  const command = positionals[0] as Command | undefined;
  if (!command || !(command in COMMANDS) || positionals.length !== 1) {
    io.err(
      `${positionals.length ? `Unknown command "${positionals.join(' ')}".` : 'Missing command.'}\n\n${USAGE}`,
    );
    return 2;
  }
  const spec = COMMANDS[command];
  const missing = spec.required.filter((k) => !values[k]);
  if (missing.length) {
    io.err(`Missing ${missing.map((m) => `--${m}`).join(', ')}.\n\n${USAGE}`);
    return 2;
  }
  const given = (Object.keys(values) as (keyof Values)[]).filter(
    (k) => values[k] !== undefined && values[k] !== false && !['force', 'help'].includes(k),
  );
  const extra = given.filter(
    (k) =>
      !(spec.required as readonly string[]).includes(k) && !(spec.allowed as readonly string[]).includes(k),
  );
  if (extra.length) {
    io.err(`${command} does not take ${extra.map((m) => `--${m}`).join(', ')}.\n\n${USAGE}`);
    return 2;
  }

  // Validate everything before touching the database.
  let run: (db: DatabaseHandle['owner'], config: Config) => Promise<unknown>;
  try {
    run = await prepare(command, values, io);
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(err.message);
      return 2;
    }
    throw err;
  }

  let config: Config;
  try {
    config = loadConfig(env);
  } catch (err) {
    io.err(err instanceof ConfigError ? err.message : String(err));
    return 1;
  }
  if (!values.force) {
    const inUse = await embeddedDatabaseInUse(config);
    if (inUse) {
      io.err(inUse);
      return 1;
    }
  }

  let handle: DatabaseHandle;
  try {
    handle = await openHandle(config);
    try {
      await migrate(handle, [runtimeMigrations, identityMigrations], config.appRole);
    } catch (err) {
      await handle.close().catch(() => undefined);
      throw err;
    }
  } catch (err) {
    const where =
      config.database.driver === 'pglite'
        ? `the embedded database at ${config.database.dataDir ?? 'memory'}`
        : 'DATABASE_URL';
    io.err(
      `Could not open ${where}: ${(err as Error).message}. ` +
        (config.database.driver === 'pglite'
          ? 'Make sure npm start is stopped and the folder is readable.'
          : 'Check the URL, that the server is up, and that the user may run migrations.'),
    );
    return 1;
  }
  try {
    io.out(JSON.stringify(await run(handle.owner, config)));
    return 0;
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(err.message);
      return 2;
    }
    const hint = (err as { hint?: string }).hint;
    io.err(`${command} failed: ${(err as Error).message}${hint ? `. ${hint}` : ''}`);
    return 1;
  } finally {
    await handle.close();
  }
}

/** Parses the command's flags (and reads a password given on stdin) and returns the database work to do. */
async function prepare(
  command: Command,
  values: Values,
  io: CliIo,
): Promise<(db: DatabaseHandle['owner'], config: Config) => Promise<unknown>> {
  switch (command) {
    case 'bootstrap': {
      const input: BootstrapTenantInput = parseFlags(BootstrapInput, {
        tenantName: values.tenant,
        email: values.email,
        displayName: values.name,
      });
      const fromStdin = values['password-stdin'] ? await obtainPassword(io, values, input.email) : null;
      return async (db, config) => {
        // A new owner gets a password; an existing user keeps theirs (set-password changes it).
        const existing = await hasPassword(db, input.email);
        const password = existing ? null : (fromStdin ?? (await obtainPassword(io, values, input.email)));
        if (existing && fromStdin) {
          io.err(
            `${input.email} already has a password; it was left unchanged (use set-password to change it).`,
          );
        }
        const hash = password ? await hashPassword(password) : null;
        await ensureSigningKey(db, keyVault(config));
        const { tenantId, userId } = await bootstrapTenant(db, input, async (tx) => {
          if (hash) {
            await tx.query('SELECT identity.set_user_password($1, $2, true)', [input.email, hash]);
          }
        });
        const role = await db.query<{ role: Role | null }>('SELECT identity.membership_of($1, $2) AS role', [
          userId,
          tenantId,
        ]);
        const accessToken = await issueAccessToken(db, config, {
          tenantId,
          userId,
          role: role.rows[0]?.role ?? 'OWNER',
          scopes: ['api:read', 'api:write'],
        });
        return { tenantId, userId, accessToken };
      };
    }
    case 'create-user': {
      const input = parseFlags(CreateUserInput, { email: values.email, displayName: values.name });
      const password = values['password-stdin'] ? await obtainPassword(io, values, input.email) : null;
      const hash = password ? await hashPassword(password) : null;
      return (db) =>
        db.transaction(async (tx) => {
          const r = await tx.query<{ user_id: string; created: boolean }>(
            'SELECT user_id, created FROM identity.create_user($1, $2)',
            [input.email, input.displayName],
          );
          const { user_id: userId, created } = r.rows[0]!;
          if (hash) await tx.query('SELECT identity.set_user_password($1, $2, false)', [input.email, hash]);
          if (!hash)
            io.err(`No password set for ${input.email}; set one with set-password before they sign in.`);
          return { userId, created, passwordSet: !!hash };
        });
    }
    case 'set-password': {
      const { email } = parseFlags(CreateUserInput.pick({ email: true }), { email: values.email });
      return async (db) => {
        if ((await hasPassword(db, email)) === null) {
          throw new Error(
            `no user with this e-mail. Create one first: npm run admin -- create-user --email ${email} --name <name>`,
          );
        }
        const hash = await hashPassword(await obtainPassword(io, values, email));
        const r = await db.query<{ user_id: string | null }>(
          'SELECT identity.set_user_password($1, $2, false) AS user_id',
          [email, hash],
        );
        return { userId: r.rows[0]!.user_id };
      };
    }
    case 'rotate-keys':
      return async (db, config) => {
        const { kid } = await rotateSigningKey(db, keyVault(config));
        const keys = await issuerKeys(db, keyVault(config));
        return { kid, keys: keys.map((k) => ({ kid: k.kid, state: k.state })) };
      };
    case 'add-member': {
      const input = parseFlags(MemberInput, {
        tenantId: values['tenant-id'],
        email: values.email,
        role: values.role,
      });
      return async (db) => {
        const r = await db.transaction((tx) =>
          tx.query<{ user_id: string; previous_role: Role | null }>(
            'SELECT user_id, previous_role FROM identity.admin_set_membership($1, $2, $3)',
            [input.tenantId, input.email, input.role],
          ),
        );
        const row = r.rows[0]!;
        return {
          tenantId: input.tenantId,
          userId: row.user_id,
          role: input.role,
          previousRole: row.previous_role,
        };
      };
    }
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await runCli(process.argv.slice(2));
}

/**
 * Admin CLI of the identity subgraph:
 *
 *   npm run admin -- bootstrap --tenant "Acme" --email ada@example.com --name "Ada"
 *
 * Opens the configured database (the same environment as `npm start` or the identity service: DATABASE_URL,
 * or the embedded PGlite under DATA_DIR), applies the runtime and identity migrations, creates tenant + user +
 * OWNER membership (idempotent per e-mail and tenant name), and prints one JSON line to stdout:
 * {"tenantId": "...", "userId": "...", "accessToken": "..."}. The token is for you; keep it out of logs.
 * Messages go to stderr. Exit codes: 0 done, 1 failed, 2 usage.
 *
 * The embedded PGlite database is single-process: stop `npm start` before running this against it.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { AppError, ConfigError, loadConfig, openDatabase, type Config } from '@agentgraph/runtime';
import { bootstrapTenant, type BootstrapTenantInput } from './bootstrap.js';
import { BootstrapInput, parseInput } from './input.js';
import { identityMigrations } from './index.js';
import { ensureSigningKey } from './keys.js';
import type { Role } from './models.js';
import { issueAccessToken } from './tokens.js';

const USAGE = `Usage:
  npm run admin -- bootstrap --tenant <name> --email <e-mail> --name <display name> [--force]

Creates a tenant owned by a user (the user is created if the e-mail is new) and prints
{"tenantId", "userId", "accessToken"} as JSON. Running it again with the same e-mail and tenant
name prints the same ids and a fresh token.

  --force   open the embedded database even though it looks in use (only after a crash of npm start)

Configuration comes from the environment, as for npm start (DATABASE_URL, DATA_DIR, TOKEN_ISSUER, ...).`;

export interface CliIo {
  out(line: string): void;
  err(line: string): void;
}

const stdio: CliIo = {
  out: (line) => process.stdout.write(line + '\n'),
  err: (line) => process.stderr.write(line + '\n'),
};

/** Is anything answering on a loopback URL? (Used only to word the "database in use" message.) */
async function answers(url: string): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(1000) });
    await res.body?.cancel();
    return true;
  } catch {
    return false;
  }
}

/**
 * PGlite keeps no lock of its own: a second process opening the same folder runs on and can corrupt it. While
 * a PGlite instance has the folder open it holds postmaster.pid there, so refuse when that file exists.
 */
async function embeddedDatabaseInUse(config: Config): Promise<string | null> {
  if (config.database.driver !== 'pglite' || !config.database.dataDir) return null;
  const dir = config.database.dataDir;
  if (!existsSync(join(dir, 'postmaster.pid'))) return null;
  const identityHealth = new URL('/healthz', config.subgraphUrls.identity).href;
  const gatewayHealth = `http://${config.host}:${config.gatewayPort}/healthz`;
  const running = (await answers(gatewayHealth)) || (await answers(identityHealth));
  return running
    ? `The embedded database at ${dir} is in use by a running server (npm start answers on this machine). ` +
        'Stop npm start first (Ctrl-C in its terminal), run this command, then start it again. ' +
        'To manage a running PostgreSQL deployment instead, set DATABASE_URL.'
    : `The embedded database at ${dir} looks in use (it holds postmaster.pid): stop npm start or any other ` +
        'command using it first. If nothing is running, the last run did not shut down cleanly; run this again with --force.';
}

export async function runCli(
  argv: string[],
  env: NodeJS.ProcessEnv = process.env,
  io: CliIo = stdio,
): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        tenant: { type: 'string' },
        email: { type: 'string' },
        name: { type: 'string' },
        force: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (err) {
    io.err(`${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    io.out(USAGE);
    return 0;
  }
  if (positionals[0] !== 'bootstrap' || positionals.length !== 1) {
    io.err(
      `${positionals.length ? `Unknown command "${positionals.join(' ')}".` : 'Missing command.'}\n\n${USAGE}`,
    );
    return 2;
  }
  const missing = (['tenant', 'email', 'name'] as const).filter((k) => !values[k]);
  if (missing.length) {
    io.err(`Missing ${missing.map((m) => `--${m}`).join(', ')}.\n\n${USAGE}`);
    return 2;
  }
  let input: BootstrapTenantInput;
  try {
    input = parseInput(
      BootstrapInput,
      { tenantName: values.tenant, email: values.email, displayName: values.name },
      '',
    );
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    // Input errors name the field ("email must be ..."); say which flag.
    const field = String(err.extensions['field'] ?? '');
    const flag = { tenantName: '--tenant', email: '--email', displayName: '--name' }[field];
    io.err(flag ? err.message.replace(field, flag) : err.message);
    return 2;
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

  let opened: Awaited<ReturnType<typeof openDatabase>>;
  try {
    opened = await openDatabase(config, [identityMigrations]);
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
  const { db, handle } = opened;
  try {
    await ensureSigningKey(db);
    const { tenantId, userId } = await bootstrapTenant(db, input);
    const role = await db.query<{ role: Role | null }>('SELECT identity.membership_of($1, $2) AS role', [
      userId,
      tenantId,
    ]);
    const accessToken = await issueAccessToken(db, config, {
      tenantId,
      userId,
      role: role.rows[0]?.role ?? 'OWNER',
      scopes: [],
    });
    io.out(JSON.stringify({ tenantId, userId, accessToken }));
    return 0;
  } catch (err) {
    const hint = (err as { hint?: string }).hint;
    io.err(`Bootstrap failed: ${(err as Error).message}${hint ? `. ${hint}` : ''}`);
    return 1;
  } finally {
    await handle.close();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await runCli(process.argv.slice(2));
}

/**
 * The migrations job (production: compose.yaml's `migrate`, run once before every start or upgrade, and before the
 * services, which then run with MIGRATE=false):
 *
 *   DATABASE_URL=postgres://owner:…@db/agentgraph DATABASE_IDENTITY_URL=postgres://agentgraph_app_identity:…@db/… \
 *     tsx gateway/src/migrate.ts
 *
 * As DATABASE_URL's user (the owner of the schemas, with CREATEROLE), it applies the runtime's and every subgraph's
 * pending migrations (the same sets `npm start` applies; runtime/src/db/migrate.ts: advisory lock, checksums, no
 * destructive change without its marker), then gives each service role the login its process is configured with:
 * for every DATABASE_<SERVICE>_URL (or DATABASE_APP_URL, whose user name each service's role replaces) the role may
 * log in with that URL's password (`ALTER ROLE … LOGIN PASSWORD`). A URL naming another user than the service's role
 * is refused. So the passwords have one source, the services' URLs: to change one, change the URL, run the job again
 * and restart that service. Logs JSON lines; exit code 0 done, 1 failed (the message says why).
 */
import {
  ConfigError,
  createLogger,
  loadConfig,
  migrate,
  openHandle,
  runtimeMigrations,
  serviceRole,
  SERVICES,
  type Config,
  type DatabaseHandle,
} from '@agentgraph/runtime';
import { SUBGRAPH_MODULES } from './platform.js';

interface Login {
  role: string;
  /** The variable the URL came from, for messages. */
  variable: string;
  password: string | null;
}

/** The logins the deployment configured: each service's URL, else DATABASE_APP_URL with the role as user name. */
function configuredLogins(config: Config): Login[] {
  if (config.database.driver !== 'postgres') return [];
  const { appUrl, serviceUrls } = config.database;
  const logins: Login[] = [];
  const add = (role: string, url: string, variable: string) => {
    const u = new URL(url);
    const user = decodeURIComponent(u.username);
    if (user !== role) {
      throw new ConfigError(
        `${variable} logs in as "${user}", but that process runs as the role "${role}": name the role as the user.`,
      );
    }
    logins.push({ role, variable, password: u.password ? decodeURIComponent(u.password) : null });
  };
  if (appUrl) add(config.appRole, appUrl, 'DATABASE_APP_URL');
  for (const service of SERVICES) {
    const role = serviceRole(config.appRole, service);
    const own = serviceUrls[service];
    if (own) add(role, own, `DATABASE_${service.toUpperCase()}_URL`);
    else if (appUrl) {
      const u = new URL(appUrl);
      u.username = role;
      add(role, u.toString(), 'DATABASE_APP_URL');
    }
  }
  return logins;
}

/**
 * Lets the role log in, with the password when the URL has one. Roles are per cluster: another database's
 * migrations may change the same role at that moment ("tuple concurrently updated"), so that is retried.
 */
async function grantLogin(owner: DatabaseHandle['owner'], login: Login): Promise<void> {
  const sql = login.password
    ? "SELECT format('ALTER ROLE %I LOGIN PASSWORD %L', $1::text, $2::text) AS stmt"
    : "SELECT format('ALTER ROLE %I LOGIN', $1::text) AS stmt";
  const params = login.password ? [login.role, login.password] : [login.role];
  const { rows } = await owner.query<{ stmt: string }>(sql, params);
  for (let attempt = 1; ; attempt++) {
    try {
      await owner.query(rows[0]!.stmt);
      return;
    } catch (err) {
      if ((err as { code?: string }).code !== 'XX000' || attempt === 5) throw err;
      await new Promise((r) => setTimeout(r, 50 * attempt));
    }
  }
}

const log = createLogger({ service: 'migrate' });
try {
  const config = loadConfig();
  const logins = configuredLogins(config);
  const handle = await openHandle(config);
  try {
    const applied = await migrate(
      handle,
      [runtimeMigrations, ...SUBGRAPH_MODULES.map((m) => m.migrations)],
      config.appRole,
    );
    for (const login of logins) await grantLogin(handle.owner, login);
    log.info('migrations applied', {
      applied: applied.map((m) => `${m.namespace}/${String(m.version).padStart(3, '0')}_${m.name}`),
      logins: logins.map((l) => l.role),
    });
  } finally {
    await handle.close();
  }
} catch (err) {
  log.error('migrations failed', { error: (err as Error).message });
  process.exitCode = 1;
}

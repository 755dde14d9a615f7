/**
 * Operators' command line for coordination: the deployment-wide emergency stop (tenant admins use the GraphQL
 * mutations for their own tenant). Runs against the configured database as its owner, like identity's admin CLI.
 *
 *   npm run coordination-admin -- emergency-stop status
 *   npm run coordination-admin -- emergency-stop engage --reason "..." [--operator <name>]
 *   npm run coordination-admin -- emergency-stop lift [--operator <name>]
 *
 * Every coordination server ends all open streams within a second of an engage (NOTIFY), and refuses new streams
 * and intents until the lift. Each use is recorded (coordination.emergency_events) with the operator's name and
 * the machine it ran on. Output: one JSON line; exit 0 on success, 1 on failure, 2 on a usage error.
 */
import { hostname, userInfo } from 'node:os';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import {
  ConfigError,
  embeddedDatabaseInUse,
  loadConfig,
  migrate,
  openHandle,
  runtimeMigrations,
  type DatabaseHandle,
} from '@agentgraph/runtime';
import { engageStop, liftStop } from './emergency/store.js';
import { coordinationMigrations } from './migrations.js';

const USAGE = `Usage: npm run coordination-admin -- emergency-stop <status|engage|lift> [options]

  engage --reason <text>   engage the deployment-wide stop (1-500 characters; recorded and shown to users)
  lift                     lift it
  status                   show the engaged stops (deployment-wide and per tenant)
  --operator <name>        who you are, for the record (default: your login name)
  --force                  open the embedded database even though it looks in use (only after a crash)

Configuration comes from the environment, as for npm start (DATABASE_URL, DATA_DIR, ...).`;

export interface OperatorIo {
  out(line: string): void;
  err(line: string): void;
}

type Owner = DatabaseHandle['owner'];

async function status(owner: Owner) {
  const r = await owner.query<{
    tenant_id: string | null;
    reason: string;
    engaged_by: string;
    engaged_at: Date;
  }>(
    `SELECT tenant_id, reason, engaged_by, engaged_at FROM coordination.emergency_stops
      WHERE lifted_at IS NULL ORDER BY engaged_at`,
  );
  const row = (x: (typeof r.rows)[number]) => ({
    reason: x.reason,
    engagedBy: x.engaged_by,
    engagedAt: new Date(x.engaged_at).toISOString(),
  });
  const global = r.rows.find((x) => x.tenant_id === null);
  return {
    global: global ? row(global) : null,
    tenants: r.rows.filter((x) => x.tenant_id !== null).map((x) => ({ tenantId: x.tenant_id, ...row(x) })),
  };
}

export async function runOperatorCli(
  argv: string[],
  env: NodeJS.ProcessEnv = process.env,
  io: OperatorIo = { out: (l) => process.stdout.write(l + '\n'), err: (l) => process.stderr.write(l + '\n') },
): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: { reason: { type: 'string' }, operator: { type: 'string' }, force: { type: 'boolean' } },
    });
  } catch (err) {
    io.err(`${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const [group, command, ...rest] = parsed.positionals;
  const { reason, force } = parsed.values;
  const operator = (parsed.values.operator ?? userInfo().username).trim();
  if (group !== 'emergency-stop' || !['status', 'engage', 'lift'].includes(command ?? '') || rest.length) {
    io.err(USAGE);
    return 2;
  }
  if (command === 'engage' && (!reason?.trim() || reason.trim().length > 500)) {
    io.err('engage needs --reason with 1-500 characters: it is recorded and shown to everyone affected.');
    return 2;
  }
  if (command !== 'engage' && reason !== undefined) {
    io.err(`${command} does not take --reason.`);
    return 2;
  }
  if (!/^[\w.@-]{1,100}$/.test(operator)) {
    io.err('--operator must be 1-100 letters, digits, ".", "_", "@" or "-".');
    return 2;
  }
  let config;
  try {
    config = loadConfig(env);
  } catch (err) {
    io.err(err instanceof ConfigError ? err.message : String(err));
    return 1;
  }
  if (!force) {
    const inUse = await embeddedDatabaseInUse(config);
    if (inUse) {
      io.err(inUse);
      return 1;
    }
  }
  let handle: DatabaseHandle;
  try {
    handle = await openHandle(config);
    await migrate(handle, [runtimeMigrations, coordinationMigrations], config.appRole);
  } catch (err) {
    io.err(`Could not open the database: ${(err as Error).message}. Check DATABASE_URL (or stop npm start).`);
    return 1;
  }
  try {
    if (command === 'status') {
      io.out(JSON.stringify(await status(handle.owner)));
      return 0;
    }
    const change = {
      tenantId: null,
      actor: `operator:${operator}`,
      at: new Date(),
      origin: { userAgent: 'coordination-admin', peer: hostname() },
    };
    const changed = await handle.owner.transaction((tx) =>
      command === 'engage' ? engageStop(tx, { ...change, reason: reason!.trim() }) : liftStop(tx, change),
    );
    io.out(
      JSON.stringify({
        [command === 'engage' ? 'engaged' : 'lifted']: changed,
        ...(await status(handle.owner)),
      }),
    );
    return 0;
  } catch (err) {
    io.err(`emergency-stop ${command} failed: ${(err as Error).message}`);
    return 1;
  } finally {
    await handle.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.exitCode = await runOperatorCli(process.argv.slice(2));
}

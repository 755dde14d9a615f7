/** Opens the configured database, applies migrations as owner, and hands back the app (non-owner) connection. */
import type { Config } from '../config.js';
import { migrate, type MigrationSet } from './migrate.js';
import { openPglite } from './pglite.js';
import { openFromTemplate } from './pglite-template.js';
import { openPostgres } from './postgres.js';
import type { Database, DatabaseHandle } from './types.js';
import type { Service } from './service-roles.js';
import { tracedHandle } from '../telemetry/db.js';

export const runtimeMigrations: MigrationSet = {
  namespace: 'runtime',
  dir: new URL('../../migrations', import.meta.url).pathname,
};

export async function openHandle(config: Pick<Config, 'database' | 'appRole'>): Promise<DatabaseHandle> {
  return config.database.driver === 'pglite'
    ? openPglite(config.database.dataDir, config.appRole)
    : openPostgres(
        config.database.url,
        { size: config.database.poolSize, idleSeconds: config.database.poolIdleSeconds },
        config.appRole,
        { app: config.database.appUrl, services: config.database.serviceUrls },
      );
}

/**
 * Open, migrate (runtime first, then the given sets) and hand back the connections of `service` as its own role
 * (without one: the shared app role, which reaches only the runtime's tables). With `migrate: false` (MIGRATE=false:
 * a migrations job ran first) nothing is migrated and the owner login is never used.
 */
export async function openDatabase(
  config: Pick<Config, 'database' | 'appRole'> & Partial<Pick<Config, 'migrate'>>,
  sets: MigrationSet[],
  service?: Service,
): Promise<{ db: Database; handle: DatabaseHandle }> {
  const all = [runtimeMigrations, ...sets];
  const d = config.database;
  const templated =
    d.driver === 'pglite' && !d.dataDir && d.templateDir
      ? await openFromTemplate(d.templateDir, all, config.appRole)
      : null;
  // Database spans when tracing is on (telemetry/db.ts): the app connections, not the migrations.
  const handle = tracedHandle(templated?.handle ?? (await openHandle(config)));
  try {
    if (config.migrate !== false) {
      await migrate(handle, all, config.appRole);
      await templated?.save();
    }
    return { db: await handle.app(service), handle };
  } catch (err) {
    await handle.close().catch(() => undefined);
    throw err;
  }
}

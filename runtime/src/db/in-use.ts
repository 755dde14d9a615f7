/**
 * For command-line tools that open the database themselves (identity's admin CLI, coordination's operator CLI):
 * the embedded PGlite folder must not be opened while npm start has it.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config.js';

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
export async function embeddedDatabaseInUse(config: Config): Promise<string | null> {
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

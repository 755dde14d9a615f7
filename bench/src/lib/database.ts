/**
 * The database a bench runs its subgraphs on: PGlite in memory, or PostgreSQL — `DATABASE_URL`, else a private
 * cluster started with scripts/pg-cluster.sh (and stopped by `close`) — with a fresh database provisioned on it the
 * way the tests do (test/src/database.ts).
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { provisionTestDatabase, type TestDatabase } from '../../../test/src/database.js';

const PG_INITDB = '/usr/lib/postgresql/15/bin/initdb';

export type DatabaseKind = 'pglite' | 'postgres';

/** PostgreSQL when DATABASE_URL is set or Debian's PostgreSQL 15 binaries exist, else PGlite. */
export function defaultDatabaseKind(): DatabaseKind {
  return process.env['DATABASE_URL'] || existsSync(PG_INITDB) ? 'postgres' : 'pglite';
}

export interface BenchDatabase {
  /** The environment for the subgraphs process (DATA_DIR, or DATABASE_URL and the app role's URL). */
  env(): Promise<Record<string, string>>;
  /** The private cluster's folder while one runs (for reading its processes' CPU), else null. */
  readonly clusterDir: string | null;
  /** Drops the provisioned database and stops a private cluster. */
  close(): Promise<void>;
}

export function benchDatabase(kind: DatabaseKind, repoRoot: string, log: (m: string) => void): BenchDatabase {
  let clusterDir: string | null = null;
  let db: TestDatabase | null = null;
  return {
    get clusterDir() {
      return clusterDir;
    },
    async env() {
      if (kind === 'pglite') return { DATA_DIR: 'memory://' };
      let url = process.env['DATABASE_URL'];
      if (!url) {
        const out = execFileSync('bash', [join(repoRoot, 'scripts/pg-cluster.sh'), 'start'], {
          encoding: 'utf8',
        });
        url = /DATABASE_URL=(\S+)/.exec(out)?.[1];
        clusterDir = /PG_CLUSTER_DIR=(\S+)/.exec(out)?.[1] ?? null;
        if (!url) throw new Error(`scripts/pg-cluster.sh start printed no DATABASE_URL: ${out}`);
        log(`started a private PostgreSQL cluster (${clusterDir})`);
      }
      db = await provisionTestDatabase({ DATABASE_URL: url });
      return db.env;
    },
    async close() {
      await db?.drop().catch(() => undefined);
      db = null;
      if (clusterDir) {
        execFileSync('bash', [join(repoRoot, 'scripts/pg-cluster.sh'), 'stop', clusterDir], {
          stdio: 'ignore',
        });
        clusterDir = null;
      }
    },
  };
}

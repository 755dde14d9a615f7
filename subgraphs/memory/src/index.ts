/**
 * The memory subgraph: workspaces and memory records (schemas/memory.graphql), their search, the secret filter,
 * expiry, deletion and the background indexing queue. Served in-process by `npm start` or alone by src/main.ts.
 */
import { schemaFileOf, type SubgraphModule } from '@agentgraph/runtime';
import { startIndexingWorker, type IndexingOptions } from './indexing/worker.js';
import { memoryPrincipals } from './principals.js';
import { createResolvers } from './resolvers.js';
import { startMemorySweeper } from './sweeper.js';
import { VectorCache } from './vector-index/cache.js';
import { DEFAULT_WORKSPACE_LIMITS, type WorkspaceLimits } from './workspace-limits.js';

export interface MemoryOptions {
  /** The server clock (expiry, jobs, the sweeper). Default: the system clock. */
  now?: () => Date;
  /** How often the expiry sweeper runs (ms, default 10 000); 0 turns it off (tests sweep by hand). */
  sweepIntervalMs?: number;
  /** How often the indexing worker looks for due jobs besides NOTIFY (ms, default 1000); 0 turns it off. */
  indexIntervalMs?: number;
  /** Indexing knobs (chunk size, backoff, a failure hook for tests); `now` is the option above. */
  indexing?: Omit<IndexingOptions, 'now'>;
  /** Limits on creating workspaces per tenant (rate and ceiling); unset fields keep DEFAULT_WORKSPACE_LIMITS. */
  workspaceLimits?: Partial<WorkspaceLimits>;
  /**
   * The byte budget of the in-process copies of workspaces' embeddings that serve vector and hybrid search where
   * pgvector is missing (EXACT_IN_MEMORY, src/vector-index/); 0 turns them off (the exact scan stays in SQL).
   * Default: MEMORY_VECTOR_CACHE_MB from the environment, else 1024 MiB.
   */
  vectorCacheBytes?: number;
}

/** MEMORY_VECTOR_CACHE_MB: a whole number of MiB, 0 to turn the copies off. */
export function vectorCacheBytesFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env['MEMORY_VECTOR_CACHE_MB'];
  if (raw === undefined || raw === '') return DEFAULT_VECTOR_CACHE_MB * MIB;
  if (!/^\d{1,7}$/.test(raw)) {
    throw new Error(
      `MEMORY_VECTOR_CACHE_MB must be a whole number of MiB (0 turns the in-process vector copies off), not "${raw}".`,
    );
  }
  return Number(raw) * MIB;
}

const MIB = 1024 * 1024;
const DEFAULT_VECTOR_CACHE_MB = 1024;

export function createMemorySubgraph(opts: MemoryOptions = {}): SubgraphModule {
  const now = opts.now ?? (() => new Date());
  const vectors = new VectorCache({ maxBytes: opts.vectorCacheBytes ?? vectorCacheBytesFromEnv() });
  return {
    name: 'memory',
    schemaFile: schemaFileOf('memory'),
    resolvers: createResolvers({
      now,
      workspaceLimits: { ...DEFAULT_WORKSPACE_LIMITS, ...opts.workspaceLimits },
      vectors,
    }),
    principals: memoryPrincipals,
    migrations: { namespace: 'memory', dir: new URL('../migrations', import.meta.url).pathname },
    background: ({ db, log }) => {
      const stopSweeper =
        opts.sweepIntervalMs === 0
          ? async () => undefined
          : startMemorySweeper({ db, log, now, intervalMs: opts.sweepIntervalMs });
      const worker =
        opts.indexIntervalMs === 0
          ? null
          : startIndexingWorker({ ...opts.indexing, db, log, now, intervalMs: opts.indexIntervalMs });
      return async () => {
        await worker?.stop();
        await stopSweeper();
        vectors.close();
      };
    },
  };
}

export const memorySubgraph: SubgraphModule = createMemorySubgraph();

export { runIndexingJobs, type IndexingJob, type IndexingPass } from './indexing/worker.js';
export { sweepExpiredMemory } from './sweeper.js';
export { DEFAULT_WORKSPACE_LIMITS, type WorkspaceLimits } from './workspace-limits.js';
export { filterWrite, scan, redact } from './secrets/index.js';

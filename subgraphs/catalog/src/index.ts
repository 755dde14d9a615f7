/**
 * The catalog subgraph: plugins, their releases and the supply chain from upload to TUF-signed channels
 * (schemas/catalog.graphql, docs/architecture.md#catalog-supply-chain). `createCatalogSubgraph(options)` builds the module with injected time,
 * storage and limits (tests); `catalogSubgraph` is the default that `npm start` and `runStandalone` serve.
 *
 * HTTP besides GraphQL: POST /packages (upload), GET /tuf/<tenant>/metadata/… and /tuf/<tenant>/targets/… (the
 * repository, read-only). Background: the analysis queue and the scheduled timestamp re-signing.
 */
import { join } from 'node:path';
import {
  keyVault,
  schemaFileOf,
  type Database,
  type KeyVault,
  type Logger,
  type SubgraphModule,
} from '@agentgraph/runtime';
import { createAnalysisRunner, type AnalysisRunner } from './analysis/runner.js';
import { DEFAULT_SANDBOX_LIMITS, type SandboxLimits } from './analyzer/run-sandbox.js';
import { DirectoryPackageStore, type PackageStore } from './packages/package-store.js';
import { MAX_PACKAGE_BYTES, UPLOAD_PATH, uploadRoute } from './packages/upload-route.js';
import { catalogPrincipals } from './principals.js';
import { createResolvers } from './resolvers.js';
import { sealStoredCatalogKeys } from './tuf/keys.js';
import { startRefresher } from './tuf/refresher.js';
import { DEFAULT_TUF_SETTINGS, type TufSettings } from './tuf/repository.js';
import { TUF_PREFIX, tufRoute } from './tuf/serve-route.js';

export interface CatalogOptions {
  /** The clock of uploads, decisions, signatures and the queues. Default: the system clock. */
  now?: () => Date;
  /** Package storage. Default: a directory, CATALOG_STORAGE_DIR or ./.data/catalog-packages. */
  store?: PackageStore;
  /** Upload limit in bytes (default 5 MB). */
  maxPackageBytes?: number;
  /** Analyzer limits (time, memory, archive limits); merged over the defaults, read again for every analysis. */
  analyzer?: Partial<SandboxLimits>;
  /** TUF thresholds and lifetimes; merged over the defaults, read again for every publish (thresholds apply to
   *  repositories created afterwards). */
  tuf?: Partial<TufSettings>;
  /** How often the analysis queue is polled (orphaned jobs) and timestamps are checked; 0 = never (tests). */
  pollIntervalMs?: number;
  /** Uploads start the analysis at once (default true); tests may turn it off and drain by hand. */
  analyseOnUpload?: boolean;
}

export interface CatalogHandle {
  /** The analysis queue of the running server (after it started). */
  analysis(): AnalysisRunner;
  /** The database and log the server runs with (after it started). */
  deps(): { db: Database; log: Logger; vault: KeyVault };
}

export function createCatalogSubgraph(opts: CatalogOptions = {}): SubgraphModule & CatalogHandle {
  const now = opts.now ?? (() => new Date());
  const store =
    opts.store ??
    new DirectoryPackageStore(
      process.env['CATALOG_STORAGE_DIR'] ?? join(process.cwd(), '.data', 'catalog-packages'),
    );
  const limits = (): SandboxLimits => ({ ...DEFAULT_SANDBOX_LIMITS, ...opts.analyzer });
  const tuf = (): TufSettings => ({ ...DEFAULT_TUF_SETTINGS, ...opts.tuf });
  const poll = opts.pollIntervalMs ?? 5_000;
  let runner: AnalysisRunner | null = null;
  let running: { db: Database; log: Logger; vault: KeyVault } | null = null;
  const runnerFor = (db: Database, log: Logger, vault: KeyVault) => {
    running ??= { db, log, vault };
    runner ??= createAnalysisRunner({ db, log, vault, store, now, limits });
    return runner;
  };

  return {
    name: 'catalog',
    schemaFile: schemaFileOf('catalog'),
    resolvers: createResolvers({
      now,
      get tuf() {
        return tuf();
      },
    }),
    migrations: { namespace: 'catalog', dir: new URL('../migrations', import.meta.url).pathname },
    principals: catalogPrincipals,
    routes: ({ config, db, log, verifyToken }) => {
      const upload = uploadRoute({
        db,
        log,
        store,
        verifyToken,
        now,
        maxBytes: opts.maxPackageBytes ?? MAX_PACKAGE_BYTES,
        uploaded: () => {
          if (opts.analyseOnUpload !== false) runnerFor(db, log, keyVault(config)).kick();
        },
      });
      const serve = tufRoute({ db, store });
      return {
        [UPLOAD_PATH]: upload,
        // Every other path: the TUF repository under /tuf/, else 404.
        '*': async (req, res) => {
          const path = (req.url ?? '/').split('?')[0]!;
          if (path.startsWith(TUF_PREFIX)) return serve(req, res, path);
          res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not_found"}');
        },
      };
    },
    background: ({ config, db, log }) => {
      const vault = keyVault(config);
      // Stored private keys not sealed under the active key-encryption key (from before encryption, or an older
      // KEK) are sealed first; signing opens only sealed keys.
      const sealing = sealStoredCatalogKeys(db, vault).then(
        (sealed) => {
          if (sealed > 0)
            log.info('stored catalog keys sealed with the active key-encryption key', { sealed });
        },
        (error: unknown) => log.error('stored catalog keys could not be sealed', { error }),
      );
      const queue = runnerFor(db, log, vault);
      if (poll === 0)
        return async () => {
          await sealing;
          await queue.stop();
        };
      // Orphaned analyses (their process died) are claimed again once stale; a restart drains the queue at once.
      queue.kick();
      const timer = setInterval(() => queue.kick(), poll).unref();
      const stopRefresher = startRefresher({ db, log, now, settings: tuf(), vault, intervalMs: poll });
      return async () => {
        await sealing;
        clearInterval(timer);
        await stopRefresher();
        await queue.stop();
      };
    },
    analysis() {
      if (!runner) throw new Error('the catalog subgraph has not started');
      return runner;
    },
    deps() {
      if (!running) throw new Error('the catalog subgraph has not started');
      return running;
    },
  };
}

export const catalogSubgraph: SubgraphModule = createCatalogSubgraph();

export { DirectoryPackageStore, type PackageStore } from './packages/package-store.js';
export {
  DEFAULT_SANDBOX_LIMITS,
  runSandbox,
  sandboxArgs,
  type SandboxLimits,
} from './analyzer/run-sandbox.js';
export { DEFAULT_TUF_SETTINGS, type TufSettings } from './tuf/repository.js';
export { refreshRepositories } from './tuf/refresher.js';
export { sealStoredCatalogKeys } from './tuf/keys.js';
export { MAX_PACKAGE_BYTES, UPLOAD_PATH } from './packages/upload-route.js';
export { TUF_PREFIX } from './tuf/serve-route.js';

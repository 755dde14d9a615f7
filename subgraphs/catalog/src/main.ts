/** Runs the catalog subgraph as its own process (see README: DATABASE_URL, CATALOG_PORT, JWKS_URL). */
import { runStandalone } from '@agentgraph/runtime';
import { catalogSubgraph } from './index.js';

runStandalone(catalogSubgraph).catch((err: unknown) => {
  console.error((err as Error).message);
  process.exit(1);
});

/** Runs the memory subgraph as its own process (see README: DATABASE_URL, MEMORY_PORT, JWKS_URL). */
import { runStandalone } from '@agentgraph/runtime';
import { memorySubgraph } from './index.js';

runStandalone(memorySubgraph).catch((err: unknown) => {
  console.error((err as Error).message);
  process.exit(1);
});

/** Runs the coordination subgraph as its own process (set DATABASE_URL for PostgreSQL; see the README). */
import { runStandalone } from '@agentgraph/runtime';
import { coordinationSubgraph } from './index.js';

await runStandalone(coordinationSubgraph);

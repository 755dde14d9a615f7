/**
 * The identity subgraph as its own process (production: one per replica, against DATABASE_URL):
 *   DATABASE_URL=postgres://… CURSOR_SECRET=… AGENTGRAPH_MODE=production tsx subgraphs/identity/src/main.ts
 */
import { runStandalone } from '@agentgraph/runtime';
import { identitySubgraph } from './index.js';

await runStandalone(identitySubgraph);

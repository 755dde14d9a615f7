/** The memory subgraph: workspaces and memory records (schemas/memory.graphql). */
import { schemaFileOf, type SubgraphModule } from '@agentgraph/runtime';
import { resolvers } from './resolvers.js';

export const memorySubgraph: SubgraphModule = {
  name: 'memory',
  schemaFile: schemaFileOf('memory'),
  resolvers,
  migrations: { namespace: 'memory', dir: new URL('../migrations', import.meta.url).pathname },
};

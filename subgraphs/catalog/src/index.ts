/** The catalog subgraph: plugins and their releases (schemas/catalog.graphql). */
import { schemaFileOf, type SubgraphModule } from '@agentgraph/runtime';
import { resolvers } from './resolvers.js';

export const catalogSubgraph: SubgraphModule = {
  name: 'catalog',
  schemaFile: schemaFileOf('catalog'),
  resolvers,
  migrations: { namespace: 'catalog', dir: new URL('../migrations', import.meta.url).pathname },
};

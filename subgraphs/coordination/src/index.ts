/**
 * The coordination subgraph: rooms, their append-only message logs, and the live message stream
 * (schemas/coordination.graphql). Served in-process by `npm start` or alone by src/main.ts.
 */
import { schemaFileOf, type SubgraphModule } from '@agentgraph/runtime';
import { resolvers } from './resolvers.js';

export const coordinationSubgraph: SubgraphModule = {
  name: 'coordination',
  schemaFile: schemaFileOf('coordination'),
  resolvers,
  migrations: {
    namespace: 'coordination',
    dir: new URL('../migrations', import.meta.url).pathname,
  },
};

export { MESSAGES_CHANNEL, type MessageNotification } from './store.js';
export type { MessageModel, RoomModel } from './models.js';

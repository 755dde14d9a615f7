/** Coordination's migration set (schema `coordination`), for the module and the operator CLI. */
import type { MigrationSet } from '@agentgraph/runtime';

export const coordinationMigrations: MigrationSet = {
  namespace: 'coordination',
  dir: new URL('../migrations', import.meta.url).pathname,
};

/**
 * What a device's and a sidecar's token may call in memory (runtime/src/principals.ts; the table in
 * subgraphs/identity/README.md, "Who may call what"): read, create a workspace, write records (one or a batch). Deleting records or
 * workspaces, erasing the tenant's memory and the indexing jobs are a person's.
 */
import type { PrincipalOperations } from '@agentgraph/runtime';

const AGENT_MEMORY = [
  'Query.workspace',
  'Query.workspaces',
  'Query.memoryRecord',
  'Query.searchMemory',
  'Mutation.createWorkspace',
  'Mutation.putMemory',
  'Mutation.putMemories',
] as const;

export const memoryPrincipals: PrincipalOperations = {
  DEVICE: [...AGENT_MEMORY],
  SIDECAR: [...AGENT_MEMORY],
};

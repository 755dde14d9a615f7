/**
 * What a device's and a sidecar's token may call in the catalog (runtime/src/principals.ts; the table in
 * subgraphs/identity/README.md, "Who may call what"): the desktop host reads plugins, releases and the TUF repository
 * (it installs what was published). Uploading, declaring, reviewing, promoting, revoking and key rotation are a
 * person's, as is the review queue; the sidecar has nothing here.
 */
import type { PrincipalOperations } from '@agentgraph/runtime';

export const catalogPrincipals: PrincipalOperations = {
  DEVICE: ['Query.plugin', 'Query.plugins', 'Query.release', 'Query.tufRepository', 'Query.analyzerJwks'],
  SIDECAR: [],
};

/**
 * What a device's and a sidecar's token may call in identity (runtime/src/principals.ts; the table in README.md, "Who
 * may call what"). Everything else here (members, enrolment, managing devices, the profile) is a person's.
 */
import type { PrincipalOperations } from '@agentgraph/runtime';

export const identityPrincipals: PrincipalOperations = {
  DEVICE: [
    'Query.capabilities',
    'Query.viewer',
    'Query.tenant',
    // Also how coordination checks a device (an intent's target, a report's key, a message's recipient) with the
    // caller's own token.
    'Query.device',
    // The local user's switch: the device's own token only (the resolver refuses any other device's id).
    'Mutation.setRemoteActionsEnabled',
  ],
  SIDECAR: ['Query.capabilities', 'Query.viewer', 'Query.tenant', 'Query.device'],
};

/**
 * What a device's and a sidecar's token may call in coordination (runtime/src/principals.ts; the table in
 * subgraphs/identity/README.md, "Who may call what"). The resolvers confine each to the device's own objects: its
 * intents (`visible`, `requireDeviceToken`, WRONG_DEVICE), its inbox (the caller's address). Creating or cancelling
 * intents and the emergency stop are a person's.
 */
import type { PrincipalOperations } from '@agentgraph/runtime';

/**
 * Rooms and agent messages: the desktop and its sidecar open rooms (additive, like a memory workspace) and post in
 * them, and send, read and acknowledge agent messages as the device.
 */
const ROOMS_AND_MESSAGES = [
  'Query.room',
  'Query.rooms',
  'Mutation.createRoom',
  'Query.agentInbox',
  'Query.sentAgentMessages',
  'Query.agentMessage',
  'Mutation.postMessage',
  'Mutation.sendAgentMessage',
  'Mutation.acknowledgeAgentMessage',
  'Subscription.roomMessages',
  'Subscription.agentMessages',
] as const;

export const coordinationPrincipals: PrincipalOperations = {
  DEVICE: [
    ...ROOMS_AND_MESSAGES,
    // Its own intents only: the stream, the polling backlog, one intent, its updates, signed state reports.
    'Query.intent',
    'Query.deviceIntents',
    'Subscription.deviceIntents',
    'Subscription.intentUpdates',
    'Mutation.reportIntentState',
  ],
  // Intents are the host's: it verifies, runs the local policy and signs reports with the device key.
  SIDECAR: [...ROOMS_AND_MESSAGES],
};

/** Intent verification (browser and Node). The persistent replay cache for Node is in index.node.ts. */
export {
  createIntentVerifier,
  INTENT_TYP,
  DEFAULT_INTENT_ALGORITHMS,
  REQUIRED_INTENT_CLAIMS,
} from './verify.js';
export type { IntentVerifier, IntentVerifierOptions, VerifiedIntent } from './verify.js';
export { IntentVerificationError, type IntentRejectionReason } from './errors.js';
export { IntentKeySet, type KeySetOptions } from './key-set.js';
export { MemoryReplayCache, type ReplayCache } from './replay-cache.js';

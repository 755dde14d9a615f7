/** Subscriptions over graphql-sse with resume, dedupe, verification and the polling fallback (browser-safe). */
export {
  createSubscriptions,
  DEFAULT_IDLE_TIMEOUT_MS,
  DEFAULT_MAX_STREAM_FAILURES,
  DEFAULT_POLL_INTERVAL_MS,
  DEFAULT_STREAM_RETRY_MS,
  streamUrlFor,
  type Subscriptions,
  type SubscriptionsOptions,
} from './subscriber.js';
export type {
  DropReason,
  ItemSource,
  PollPage,
  PollPosition,
  PollSpec,
  ResumeSpec,
  SubscribeOptions,
  SubscriptionItem,
  SubscriptionLogger,
  SubscriptionSpec,
  SubscriptionStatus,
} from './types.js';
export { EventStreamParser, type SseComment, type SseEvent, type SseItem } from './sse-parser.js';
export { SequenceGate } from './sequence.js';

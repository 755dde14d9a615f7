/** The public API of the AgentGraph TypeScript SDK runtime (generated code builds on these). */
export {
  AgentGraphClient,
  type AgentGraphClientOptions,
  type CallOptions,
  type ClientConnection,
  type ExecuteResult,
  type OperationSpec,
  type TokenProvider,
} from './client.js';
export {
  AbortError,
  AgentGraphError,
  type AgentGraphErrorClass,
  type AgentGraphErrorInit,
  ErrorRegistry,
  errorClassName,
  type ErrorTable,
  type ErrorTableEntry,
  type GiveUpReason,
  type GraphQLErrorShape,
  InvalidResponseError,
  NetworkError,
  PrivacyError,
  type PrivacyRefusal,
  type RetryClass,
  TimeoutError,
} from './errors.js';
export { errorFromAnswer, errorIsRetryable, statusIsRetryable, wantsTokenRefresh } from './classify.js';
export {
  DecorrelatedJitterBackoff,
  decorrelatedJitterBackoffV2,
  type BackoffStep,
  P_FACTOR,
  RP_SCALING_FACTOR,
} from './backoff.js';
export { parseHttpDate, parseRetryAfter } from './retry-after.js';
export { decideRetry, type RetryDecision, type RetryState } from './retry.js';
export { type Clock, systemClock } from './clock.js';
export { IDEMPOTENCY_KEY_HEADER, IDEMPOTENCY_KEY_VARIABLE, randomKey } from './idempotency.js';
export {
  type Connection,
  type FetchPage,
  type PageInfo,
  paginate,
  type PaginateOptions,
} from './pagination.js';
export { applyPrivacyGate, type PrivacyGateResult } from './privacy.js';
export {
  classAllowed,
  DATA_CLASSES,
  type DataClass,
  DEFAULT_PRIVACY_POLICY,
  type PrivacyPolicy,
  type PrivacyRule,
  type PrivacyTable,
} from './privacy-types.js';
export {
  detect,
  DETECTORS,
  type Detector,
  HIGH_ENTROPY_MIN_BITS,
  HIGH_ENTROPY_MIN_LENGTH,
  luhnValid,
  shannonEntropy,
} from './detectors.js';
export { type LogEntry, type Logger, silentLogger } from './logger.js';
export {
  applyCapabilities,
  CAPABILITIES_DOCUMENT,
  type Capabilities,
  DEFAULT_MAX_PAYLOAD_BYTES,
  DEFAULT_RETRY_SETTINGS,
  DEFAULT_TIMEOUT_MS,
  type EffectiveSettings,
  type RetrySettings,
} from './settings.js';
export { APIPromise } from './api-promise.js';
export { ACCEPT, type FetchLike, GRAPHQL_RESPONSE_JSON, type HttpResponse } from './transport.js';
export {
  DEFAULT_UPLOAD_TIMEOUT_MS,
  packageUploadUrl,
  uploadPackage,
  type UploadPackageOptions,
  type UploadPackageResult,
} from './upload.js';
// Offline delivery and intents (browser-safe parts; the SQLite stores are in index.node.ts).
export * from './outbox/index.js';
export * from './inbox/index.js';
export * from './intents/index.js';
export * from './subscriptions/index.js';
export * from './oauth/index.js';

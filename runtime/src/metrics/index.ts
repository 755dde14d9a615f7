/** Prometheus metrics and access lines (docs/operations.md#metrics). */
export { createMetrics, operationLabel, outcomeLabel, type Metrics, type OutboxStats } from './registry.js';
export { METRICS_PATH, serveMetrics } from './endpoint.js';
export { principalLabel, RequestRecord, rootFieldOf } from './access.js';

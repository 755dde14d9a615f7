/**
 * Prometheus metrics of one server (docs/operations.md#metrics): a registry per server, never prom-client's global
 * one, so the all-in-one process's five servers each serve their own series (label `service`) and tests can make
 * as many as they like. Every name starts with `agentgraph_`, every unit is a base unit (seconds), and every label
 * has a bounded set of values (operation names: see `operationLabel`, codes: `outcomeLabel`).
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { errorTable } from '../errors.js';

/** The connection pool's use (Database.poolStats). */
export interface PoolStats {
  total: number;
  idle: number;
  waiting: number;
}

/** An outbox table's backlog, read on scrape. */
export interface OutboxStats {
  outbox: string;
  pending: number;
  /** Age of the oldest row in seconds (0 when empty). */
  oldestSeconds: number;
}

/** What the revocation-list gauges read (RevocationList). */
export interface RevocationSource {
  readonly loadedAt: number;
  readonly notificationLagMs: number | undefined;
  readonly size: number;
}

export type IdempotencyOutcome = 'replay' | 'conflict' | 'in_progress';
export type DispatchStage = 'delivered' | 'acknowledged';

export interface Metrics {
  readonly registry: Registry;
  readonly service: string;
  /** One answered request: its operation label, outcome code (OK, an error code, an HTTP status) and duration. */
  observeRequest(operation: string, code: string, seconds: number): void;
  /** Adds a source of open streams (the gauge is the sum, read on scrape). */
  watchStreams(count: () => number): void;
  /** An intent entered `state` (created: QUEUED). */
  intentTransition(state: string): void;
  /** An intent reached its device (`delivered`) or the device's first answer (`acknowledged`), `seconds` after creation. */
  intentDispatched(stage: DispatchStage, seconds: number): void;
  /** A request refused by a rate limiter (`coordination_intent`, `memory_workspace`, …). */
  rateLimited(limiter: string): void;
  idempotency(outcome: IdempotencyOutcome): void;
  watchRevocations(list: RevocationSource): void;
  /** The database's pool, read on scrape (PGlite: one connection, reported as such). */
  watchPool(db: { driver: string; poolStats?(): PoolStats }): void;
  /** A subgraph's outboxes' backlog, read on each scrape with one query. */
  watchOutboxes(read: () => Promise<OutboxStats[]>): void;
  /** The Prometheus text exposition of every series. */
  scrape(): Promise<string>;
}

export interface MetricsOptions {
  /** The service label of every series: `gateway`, `identity`, `memory`, `coordination`, `catalog`. */
  service: string;
  /** Node's process metrics (prom-client's collectDefaultMetrics); default true. */
  processMetrics?: boolean;
  now?: () => number;
}

const REQUEST_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Includes 1 s exactly: the dispatch SLI (99 % under 1 s) is a ratio of this bucket to the count. */
const DISPATCH_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

const CODES = new Set(errorTable.map((e) => e.code));

/** The outcome label: OK, a code of the error table, an HTTP status, else OTHER (never free text). */
export function outcomeLabel(code: string | undefined, status: number): string {
  if (code !== undefined) return CODES.has(code) ? code : 'OTHER';
  if (status < 400) return 'OK';
  return status >= 100 && status <= 599 ? String(status) : 'OTHER';
}

/**
 * The operation label: the name when it is one of `known` (the operations manifest's, bounded), `anonymous` when the
 * request names none, else `other` — a client's free-chosen names never become series.
 */
export function operationLabel(name: string | undefined | null, known: ReadonlySet<string>): string {
  if (!name) return 'anonymous';
  return known.has(name) ? name : 'other';
}

export function createMetrics(opts: MetricsOptions): Metrics {
  const registry = new Registry();
  registry.setDefaultLabels({ service: opts.service });
  const now = opts.now ?? Date.now;
  if (opts.processMetrics ?? true) collectDefaultMetrics({ register: registry, prefix: 'agentgraph_' });
  const registers = [registry];

  const requests = new Histogram({
    name: 'agentgraph_request_duration_seconds',
    help: 'GraphQL requests answered, by operation and outcome code (OK, an error code, or the HTTP status), in seconds.',
    labelNames: ['operation', 'code'] as const,
    buckets: REQUEST_BUCKETS,
    registers,
  });

  const streamSources: (() => number)[] = [];
  new Gauge({
    name: 'agentgraph_open_streams',
    help: 'Subscription streams open now.',
    registers,
    collect() {
      this.set(streamSources.reduce((n, f) => n + f(), 0));
    },
  });

  const transitions = new Counter({
    name: 'agentgraph_intent_transitions_total',
    help: 'Intents that entered each state (QUEUED when created).',
    labelNames: ['state'] as const,
    registers,
  });
  const dispatch = new Histogram({
    name: 'agentgraph_intent_dispatch_seconds',
    help: "Time from an intent's creation to its delivery to the device (stage delivered) and to the device's first answer (stage acknowledged), in seconds.",
    labelNames: ['stage'] as const,
    buckets: DISPATCH_BUCKETS,
    registers,
  });
  const refused = new Counter({
    name: 'agentgraph_rate_limited_total',
    help: 'Requests refused with RATE_LIMITED, by limiter.',
    labelNames: ['limiter'] as const,
    registers,
  });
  const idempotency = new Counter({
    name: 'agentgraph_idempotency_total',
    help: 'Idempotency keys seen again: replay (the stored answer), conflict (IDEMPOTENCY_KEY_REUSED), in_progress (IDEMPOTENCY_KEY_IN_PROGRESS).',
    labelNames: ['outcome'] as const,
    registers,
  });

  const revocationLists: RevocationSource[] = [];
  new Gauge({
    name: 'agentgraph_revocation_list_age_seconds',
    help: 'Seconds since the token revocation list was last loaded in full (at start and after its listener reconnected).',
    registers,
    collect() {
      this.reset();
      const loaded = revocationLists.map((l) => l.loadedAt).filter((t) => t > 0);
      if (loaded.length) this.set(Math.max(0, (now() - Math.min(...loaded)) / 1000));
    },
  });
  new Gauge({
    name: 'agentgraph_revocation_notification_lag_seconds',
    help: "The last revocation notification's delay from its commit to its arrival here, in seconds.",
    registers,
    collect() {
      this.reset();
      const lags = revocationLists.map((l) => l.notificationLagMs).filter((l) => l !== undefined);
      if (lags.length) this.set(Math.max(...lags) / 1000);
    },
  });
  new Gauge({
    name: 'agentgraph_revocation_list_entries',
    help: 'Live token revocations held in memory.',
    registers,
    collect() {
      this.reset();
      if (revocationLists.length) this.set(revocationLists.reduce((n, l) => n + l.size, 0));
    },
  });

  const pools: { driver: string; poolStats?(): PoolStats }[] = [];
  new Gauge({
    name: 'agentgraph_db_pool_connections',
    help: 'Database connections by state: total (open), idle, waiting (requests queued for a connection). PGlite: total 1, one in-process connection.',
    labelNames: ['state'] as const,
    registers,
    collect() {
      this.reset();
      for (const db of pools) {
        const s = db.poolStats?.() ?? (db.driver === 'pglite' ? { total: 1 } : undefined);
        if (!s) continue;
        for (const [state, n] of Object.entries(s)) this.inc({ state }, n);
      }
    },
  });

  const outboxReaders: (() => Promise<OutboxStats[]>)[] = [];
  const outboxPending = new Gauge({
    name: 'agentgraph_outbox_pending',
    help: 'Rows in an outbox table, read on scrape.',
    labelNames: ['outbox'] as const,
    registers,
  });
  const outboxOldest = new Gauge({
    name: 'agentgraph_outbox_oldest_age_seconds',
    help: "Age of an outbox table's oldest row, in seconds (0 when empty).",
    labelNames: ['outbox'] as const,
    registers,
  });
  const outboxErrors = new Counter({
    name: 'agentgraph_outbox_scrape_errors_total',
    help: 'Scrapes whose outbox query failed (the outbox gauges keep their last values).',
    registers,
  });
  // Read before the exposition is written (a gauge's own collect would query once per gauge).
  const readOutboxes = () =>
    Promise.all(
      outboxReaders.map(async (read) => {
        try {
          for (const s of await read()) {
            outboxPending.set({ outbox: s.outbox }, s.pending);
            outboxOldest.set({ outbox: s.outbox }, s.oldestSeconds);
          }
        } catch {
          outboxErrors.inc();
        }
      }),
    );

  return {
    registry,
    service: opts.service,
    observeRequest: (operation, code, seconds) => requests.observe({ operation, code }, seconds),
    watchStreams: (count) => void streamSources.push(count),
    intentTransition: (state) => transitions.inc({ state }),
    intentDispatched: (stage, seconds) => dispatch.observe({ stage }, seconds),
    rateLimited: (limiter) => refused.inc({ limiter }),
    idempotency: (outcome) => idempotency.inc({ outcome }),
    watchRevocations: (list) => void revocationLists.push(list),
    watchPool: (db) => void pools.push(db),
    watchOutboxes: (read) => void outboxReaders.push(read),
    async scrape() {
      await readOutboxes();
      return registry.metrics();
    },
  };
}

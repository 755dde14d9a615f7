/**
 * One request's access line and latency observation, the same on the gateway and every subgraph: a JSON line
 * `request` with method, path, operationName, status, latencyMs, principal (PERSON, DEVICE, SIDECAR or ANONYMOUS)
 * and the correlation id (from the log scope); never a token. GraphQL requests are also observed in
 * `agentgraph_request_duration_seconds` by operation label and outcome code.
 */
import type { ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { getOperationAST, Kind, type DocumentNode } from 'graphql';
import { withCorrelationId, type Logger } from '../log.js';
import { principalKindOf } from '../principals.js';
import type { AuthContext } from '../tenancy.js';
import { outcomeLabel, type Metrics } from './registry.js';

/** The principal kind of a verified token, or ANONYMOUS. */
export function principalLabel(auth: AuthContext | null | undefined): string {
  return auth ? principalKindOf(auth) : 'ANONYMOUS';
}

const ROOT = { query: 'Query', mutation: 'Mutation', subscription: 'Subscription' } as const;

/**
 * A subgraph's operation label: the schema coordinate of the operation's first root field (`Mutation.createIntent`,
 * `Query._entities`), bounded by the schema (the document was validated); `other` when there is none to name.
 */
export function rootFieldOf(document: DocumentNode, operationName: string | null | undefined): string {
  const operation = getOperationAST(document, operationName);
  const first = operation?.selectionSet.selections[0];
  return operation && first?.kind === Kind.FIELD
    ? `${ROOT[operation.operation]}.${first.name.value}`
    : 'other';
}

export class RequestRecord {
  /** The bounded operation label (metrics). */
  operation?: string;
  /** The operation name for the log line (free text, cut to 100 characters). */
  operationName?: string;
  principal?: string;
  /** The error code the request ended with (an AppError's, or the response's first error's). */
  code?: string;
  readonly started = performance.now();

  constructor(
    readonly method: string | undefined,
    readonly path: string,
    readonly correlationId: string,
  ) {}

  /** Writes the access line (debug for probes) and, when `metrics` is given, observes the request. */
  finish(res: ServerResponse, log: Logger, metrics?: Metrics): void {
    const seconds = (performance.now() - this.started) / 1000;
    const status = res.statusCode;
    metrics?.observeRequest(this.operation ?? 'other', outcomeLabel(this.code, status), seconds);
    const fields = {
      method: this.method,
      path: this.path,
      operationName: this.operationName?.slice(0, 100),
      status,
      latencyMs: Math.round(seconds * 100_000) / 100,
      principal: this.principal ?? 'ANONYMOUS',
    };
    withCorrelationId(this.correlationId, () =>
      this.path === '/readyz' || this.path === '/healthz' || this.path === '/metrics'
        ? log.debug('request', fields)
        : log.info('request', fields),
    );
  }
}

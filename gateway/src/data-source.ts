/**
 * How the gateway talks to a subgraph: one undici Pool of keep-alive connections per subgraph origin (no connection
 * set-up per fetch, no make-fetch-happen cache layer), forwarding the caller's Authorization and the correlation id
 * (every subgraph verifies the token itself: zero trust) and the gateway secret (x-agentgraph-gateway: subgraphs answer
 * `_service`/`_entities` only with it; runtime/src/gateway-secret.ts), and collecting `extensions.idempotentReplay`.
 *
 * It is a RemoteGraphQLDataSource (so `buildService` and the hooks keep their meaning), with an undici-based
 * `fetcher`; `process` is overridden with a lean path that skips the node-fetch Request/Headers objects the stock
 * class allocates on every fetch, and keeps the subgraph's coded errors when it answers a request error (4xx).
 *
 * Identical read fetches in flight at the same time are shared (same subgraph, same Authorization, same operation and
 * variables): under load many clients ask the same thing, and one subgraph round trip answers them all. Each caller
 * parses its own copy (the gateway mutates results while merging). Only queries are shared, never mutations, and a
 * read never joins a fetch that started before a mutation through this gateway completed, so a client that wrote and
 * then reads sees its write. The shared fetch carries the first caller's correlation id.
 */
import { RemoteGraphQLDataSource, type GraphQLDataSourceProcessOptions } from '@apollo/gateway';
import type { GatewayGraphQLResponse } from '@apollo/server-gateway-interface';
import type { Fetcher, FetcherRequestInit, FetcherResponse } from '@apollo/utils.fetcher';
import {
  GATEWAY_SECRET_HEADER,
  inChildSpan,
  injectTraceHeaders,
  setActiveSpanAttributes,
} from '@agentgraph/runtime';
import { SpanKind } from '@opentelemetry/api';
import { Pool } from 'undici';

/** Per-request state shared by the gateway handler, the data sources and the plugins. */
export interface GatewayContext {
  correlationId: string;
  /** The caller's Authorization header, forwarded as is (never logged). */
  authorization?: string;
  /** Set when any subgraph answered with a stored result (idempotent replay). */
  idempotentReplay: boolean;
  /** `x-forwarded-for` to send on: what the caller sent, then the address the gateway saw (audit records). */
  forwardedFor?: string;
  /** The caller's `user-agent` (audit records). */
  userAgent?: string;
}

export interface PoolOptions {
  /** Connections per subgraph origin. */
  connections?: number;
  /** Fail a subgraph fetch whose headers/body do not arrive within this time. */
  timeoutMs?: number;
}

/** One keep-alive pool per origin, shared by the data source, readiness checks and anything else that calls subgraphs. */
export class SubgraphPools {
  private readonly pools = new Map<string, Pool>();
  constructor(private readonly opts: PoolOptions = {}) {}

  for(origin: string): Pool {
    let pool = this.pools.get(origin);
    if (!pool) {
      pool = new Pool(origin, {
        connections: this.opts.connections ?? 128,
        pipelining: 1,
        keepAliveTimeout: 30_000,
        keepAliveMaxTimeout: 60_000,
        headersTimeout: this.opts.timeoutMs ?? 30_000,
        bodyTimeout: this.opts.timeoutMs ?? 30_000,
      });
      this.pools.set(origin, pool);
    }
    return pool;
  }

  /** Closes every pool: gracefully (waiting for queued requests), or at once when `abandon` is set. */
  async close(abandon = false): Promise<void> {
    const pools = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(pools.map((p) => (abandon ? p.destroy() : p.close().catch(() => p.destroy()))));
  }
}

/** A fetch-compatible function over the pools, for the stock RemoteGraphQLDataSource code path. */
export function pooledFetcher(pools: SubgraphPools): Fetcher {
  return async (url: string, init?: FetcherRequestInit): Promise<FetcherResponse> => {
    const target = new URL(url);
    const res = await pools.for(target.origin).request({
      path: target.pathname + target.search,
      method: (init?.method ?? 'GET') as 'GET',
      headers: init?.headers as Record<string, string> | undefined,
      body: init?.body as string | undefined,
    });
    const text = await res.body.text();
    const headers = new Headers();
    for (const [k, v] of Object.entries(res.headers)) {
      if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(', ') : v);
    }
    const response = new Response(text, { status: res.statusCode, headers });
    Object.defineProperty(response, 'url', { value: url });
    return response as unknown as FetcherResponse;
  };
}

interface SubgraphAnswer {
  data?: Record<string, unknown> | null;
  errors?: GatewayGraphQLResponse['errors'];
  extensions?: Record<string, unknown>;
}

/** Shared by a gateway's data sources: bumped whenever a mutation fetch completes, so later reads start afresh. */
export class DedupeState {
  epoch = 0;
  /** How many fetches joined one already in flight (for tests and tuning). */
  shared = 0;
  constructor(readonly enabled = true) {}
}

interface RawAnswer {
  status: number;
  text: string;
}

export class PooledDataSource extends RemoteGraphQLDataSource<GatewayContext> {
  private readonly pool: Pool;
  private readonly path: string;
  private readonly subgraph: string;
  private readonly dedupe: DedupeState;
  private readonly inflight = new Map<string, Promise<RawAnswer>>();
  private readonly gatewaySecret: string | undefined;
  private readonly spanAttributes: Record<string, string | number>;

  constructor(
    subgraph: string,
    url: string,
    pools: SubgraphPools,
    dedupe = new DedupeState(),
    /** Sent on every fetch as x-agentgraph-gateway (config.gatewaySecret). */
    gatewaySecret?: string,
  ) {
    super({ url, fetcher: pooledFetcher(pools), honorSubgraphCacheControlHeader: false, apq: false });
    const target = new URL(url);
    this.subgraph = subgraph;
    this.pool = pools.for(target.origin);
    this.path = target.pathname + target.search;
    this.dedupe = dedupe;
    this.gatewaySecret = gatewaySecret;
    this.spanAttributes = {
      'http.request.method': 'POST',
      'url.full': target.origin + this.path,
      'server.address': target.hostname,
      'server.port': Number(target.port) || 80,
      'peer.service': subgraph,
    };
  }

  private async send(headers: Record<string, string>, body: string): Promise<RawAnswer> {
    const res = await this.pool.request({ path: this.path, method: 'POST', headers, body });
    return { status: res.statusCode, text: await res.body.text() };
  }

  /** The fetch, as a CLIENT span of the request's trace when tracing is on (telemetry in runtime/src/telemetry/). */
  override process(
    options: GraphQLDataSourceProcessOptions<GatewayContext>,
  ): Promise<GatewayGraphQLResponse> {
    return inChildSpan('gateway', `POST ${this.subgraph}`, SpanKind.CLIENT, this.spanAttributes, () =>
      this.fetchAnswer(options),
    );
  }

  private async fetchAnswer(
    options: GraphQLDataSourceProcessOptions<GatewayContext>,
  ): Promise<GatewayGraphQLResponse> {
    const { request } = options;
    const context = options.context as Partial<GatewayContext> | undefined;
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/graphql-response+json, application/json',
    };
    if (this.gatewaySecret) headers[GATEWAY_SECRET_HEADER] = this.gatewaySecret;
    if (context?.authorization) headers['authorization'] = context.authorization;
    if (context?.correlationId) headers['x-correlation-id'] = context.correlationId;
    if (context?.forwardedFor) headers['x-forwarded-for'] = context.forwardedFor;
    if (context?.userAgent) headers['user-agent'] = context.userAgent;
    // W3C traceparent of the fetch span: the subgraph continues the trace (it trusts it with the gateway secret only).
    injectTraceHeaders(headers);
    const body = JSON.stringify({
      query: request.query,
      variables: request.variables,
      operationName: request.operationName,
    });
    // Incoming operations carry the client's request context; health checks and schema loading do not.
    const operation =
      'incomingRequestContext' in options ? options.incomingRequestContext.operation?.operation : undefined;
    let raw: RawAnswer;
    if (operation === 'query' && this.dedupe.enabled) {
      const key = `${this.dedupe.epoch}\n${headers['authorization'] ?? ''}\n${body}`;
      let shared = this.inflight.get(key);
      if (shared) {
        this.dedupe.shared++;
        setActiveSpanAttributes(() => ({ 'agentgraph.fetch.shared': true }));
      } else {
        shared = this.send(headers, body).finally(() => this.inflight.delete(key));
        this.inflight.set(key, shared);
      }
      raw = await shared;
    } else {
      try {
        raw = await this.send(headers, body);
      } finally {
        if (operation !== 'query') this.dedupe.epoch++;
      }
    }
    setActiveSpanAttributes(() => ({ 'http.response.status_code': raw.status }));
    let answer: SubgraphAnswer;
    try {
      answer = JSON.parse(raw.text) as SubgraphAnswer;
    } catch {
      throw new Error(`Subgraph ${this.subgraph} answered HTTP ${raw.status} with a body that is not JSON`);
    }
    if (raw.status >= 300) {
      // A request error from the subgraph (401 token rejected, 400 limits, 503 shutting down): keep its coded errors.
      if (Array.isArray(answer?.errors) && answer.errors.length) return { errors: answer.errors };
      throw new Error(`Subgraph ${this.subgraph} answered HTTP ${raw.status}`);
    }
    if (answer.extensions?.['idempotentReplay'] === true && context) context.idempotentReplay = true;
    return answer as GatewayGraphQLResponse;
  }
}

/**
 * The gateway: the public HTTP face of the graph.
 *
 * - POST/GET /graphql: @apollo/gateway (query planning, entity resolution across subgraphs) inside @apollo/server 5,
 *   served by a lean node:http handler that calls `executeHTTPGraphQLRequest` (no express, body-parser or cors).
 *   Before Apollo runs: the body limit (413), JSON parsing (400 GRAPHQL_PARSE_FAILED), token verification (401) and
 *   the document limits (400 QUERY_TOO_COMPLEX / BAD_USER_INPUT), with the parse and the static limit check cached per
 *   query string. Subgraphs are called over pooled keep-alive connections (see data-source.ts).
 * - /graphql/stream: graphql-sse, forwarded to the subgraph that owns the subscription (see stream.ts).
 * - Both resolve persisted operations first (APQ, trusted documents; see persisted.ts).
 * - /healthz (liveness, no I/O) and /readyz (gateway loaded and every subgraph ready).
 * - close(): graceful shutdown that drains requests and completes streams.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { ApolloGateway } from '@apollo/gateway';
import {
  ApolloServer,
  HeaderMap,
  type ApolloServerPlugin,
  type GraphQLRequestListener,
} from '@apollo/server';
import {
  ApolloServerPluginCacheControlDisabled,
  ApolloServerPluginInlineTraceDisabled,
  ApolloServerPluginLandingPageDisabled,
  ApolloServerPluginSchemaReportingDisabled,
  ApolloServerPluginUsageReportingDisabled,
} from '@apollo/server/plugin/disabled';
import {
  AppError,
  checkDocumentLimits,
  closeGracefully,
  usesVariablePageArgs,
  correlationIdFrom,
  currentCorrelationId,
  createMetrics,
  METRICS_PATH,
  operationLabel,
  outcomeLabel,
  principalLabel,
  serveMetrics,
  type Metrics,
  errorTable,
  InFlight,
  isClientCode,
  maskedError,
  forwardedForOf,
  httpStatusOf,
  isJsonContentType,
  acceptsGraphQLResponseJson,
  documentError,
  Lru,
  parseJsonBody,
  readBody,
  sendJson,
  sendRequestError,
  sendThrown,
  unsupportedMediaType,
  withCorrelationId,
  endRequestSpan,
  runInContext,
  startRequestSpan,
  type Config,
  type Logger,
  type SubgraphName,
  type TokenVerifier,
} from '@agentgraph/runtime';
import {
  Kind,
  parse,
  type DocumentNode,
  type GraphQLError,
  type GraphQLFormattedError,
  type GraphQLSchema,
} from 'graphql';
import { DedupeState, PooledDataSource, SubgraphPools, type GatewayContext } from './data-source.js';
import {
  createPersistedDocuments,
  withoutPersistedQuery,
  type PersistedDocuments,
  type ResolvedDocument,
} from './persisted.js';
import type { ConsoleRoutes } from './console/index.js';
import { createStreamHandler, type StreamEndListener, type Timers } from './stream.js';
import type { ReservationLimits } from './stream-reservations.js';
import { subgraphSchemaOf, subscriptionOwners } from './supergraph.js';
import { rememberRequestSpan, tracingPlugin } from './tracing.js';
import type { Span } from '@opentelemetry/api';

export type { GatewayContext } from './data-source.js';
export type { Timers } from './stream.js';

export interface GatewayOptions {
  config: Config;
  log: Logger;
  /** The composed supergraph (schemas/supergraph.graphql). */
  supergraphSdl: string;
  /** Subgraph name → its /graphql URL; overrides the routing URLs written in the supergraph. */
  subgraphUrls: Partial<Record<string, string>>;
  /** Verifies the caller's token (identity's JWKS); the subgraphs verify it again (zero trust). */
  verifyToken: TokenVerifier;
  /** Interval of SSE comment heartbeats on open streams (default 15 s). */
  heartbeatMs?: number;
  /** Timer functions for heartbeats (tests inject fake ones). */
  timers?: Timers;
  /** Keep-alive connections per subgraph (default 128). */
  subgraphConnections?: number;
  /** Share identical in-flight read fetches to a subgraph (default true; see data-source.ts). */
  dedupeInflightReads?: boolean;
  /** How long /readyz waits for each subgraph's /readyz (default 1 s). */
  readinessTimeoutMs?: number;
  /** Subgraph name → its own schema, for checking forwarded subscriptions (default: built from schemas/<name>.graphql). */
  subgraphSchemas?: Map<string, GraphQLSchema>;
  /** Persisted operations (APQ, trusted documents); default: from config.persistedQueries (reads the manifest). */
  persisted?: PersistedDocuments;
  /** The web console's routes (console/index.ts), asked for every path the API does not own. */
  console?: ConsoleRoutes;
  /** Streams to a subgraph share one connection (default true) or get one each (see stream.ts). */
  streamMultiplex?: boolean;
  /** graphql-sse single-connection mode on /graphql/stream: limits of reservations (stream-reservations.ts). */
  streamReservations?: Partial<ReservationLimits>;
  /** The clock of stream reservation expiry (tests inject a fake one). */
  now?: () => number;
  /** The gateway's metrics, served on /metrics (default: a registry of its own, service "gateway"). */
  metrics?: Metrics;
}

export interface Gateway {
  readonly server: Server;
  /** Starts listening; resolves to the base URL (http://host:port). */
  listen(port: number, host: string): Promise<string>;
  /** Base URL once listening. */
  readonly url: string | undefined;
  readonly openStreams: number;
  /** Counters: subgraph fetches that joined an identical one in flight. */
  readonly stats: { sharedFetches: number };
  /** Its Prometheus metrics (served on /metrics). */
  readonly metrics: Metrics;
  /** Graceful shutdown: stop accepting, /readyz 503, complete streams, drain requests (up to shutdownGraceMs). */
  close(): Promise<void>;
}

const TABLE_CODES = new Set(errorTable.map((e) => e.code));
/** Apollo Server's own request-error codes, mapped onto the shared table. */
const APOLLO_CODES: Record<string, string> = {
  BAD_REQUEST: 'BAD_USER_INPUT',
  OPERATION_RESOLUTION_FAILURE: 'GRAPHQL_VALIDATION_FAILED',
  // Apollo's own APQ is off (the gateway resolves persisted queries itself), so this is never expected.
  PERSISTED_QUERY_NOT_SUPPORTED: 'BAD_USER_INPUT',
};
/** Apollo Server's header on a persisted-query miss: a CDN must not cache it. */
const NOT_FOUND_CACHE_CONTROL = 'private, no-cache, must-revalidate';

export function formatGatewayError(
  formatted: GraphQLFormattedError,
  error: unknown,
  log: Logger,
): GraphQLFormattedError {
  const correlationId = currentCorrelationId();
  const extensions = formatted.extensions ?? {};
  const code = typeof extensions['code'] === 'string' ? extensions['code'] : undefined;
  const mapped = code ? (isClientCode(code) ? code : APOLLO_CODES[code]) : undefined;
  if (mapped) {
    // serviceName is the gateway's topology, not something a client can act on.
    const { serviceName: _service, ...rest } = extensions;
    return {
      ...formatted,
      extensions: { ...rest, code: mapped, ...(correlationId ? { correlationId } : {}) },
    };
  }
  const original = (error as GraphQLError | undefined)?.originalError ?? error;
  const fields = {
    code,
    subgraph: extensions['serviceName'],
    path: formatted.path,
    error:
      original instanceof Error
        ? { name: original.name, message: original.message, stack: original.stack }
        : String(original),
  };
  // A subgraph already logged (and masked) its own internal errors; the gateway's own are errors here.
  if (extensions['serviceName'] && code === 'INTERNAL_SERVER_ERROR')
    log.warn('subgraph internal error', fields);
  else log.error('request failed', fields);
  return maskedError(correlationId, formatted);
}

/**
 * After execution: marks the response as a replay when any subgraph answered one (collected by the data sources), and
 * gives a response that carries no data at all (`data: null`, every error coded from the table) the status of its
 * first error, as a request error: a forged cursor on a root connection is 400, a reused idempotency key 422, a key
 * still in flight 409 (the SDKs classify retries by status, docs/architecture.md#error-codes). Partial data stays 200.
 */
const DOCUMENT_ERROR_CODES = new Set(['GRAPHQL_PARSE_FAILED', 'GRAPHQL_VALIDATION_FAILED', 'BAD_USER_INPUT']);
const responseListener: GraphQLRequestListener<GatewayContext> = {
  async willSendResponse({ contextValue, request, response }) {
    if (response.body.kind !== 'single') return;
    const result = response.body.singleResult;
    // A document that does not validate or variables that do not coerce (Apollo answers 400, no data entry): 200
    // for a client that accepts only application/json, as GraphQL over HTTP asks (runtime's documentError).
    if (
      response.http.status === 400 &&
      result.data === undefined &&
      !acceptsGraphQLResponseJson(request.http?.headers.get('accept')) &&
      result.errors?.every((e) => DOCUMENT_ERROR_CODES.has(e.extensions?.['code'] as string))
    ) {
      response.http.status = 200;
    }
    const firstCode = result.errors?.[0]?.extensions?.['code'];
    const outcome = (contextValue as OutcomeHolder)[OUTCOME];
    if (outcome && typeof firstCode === 'string') outcome.code = firstCode;
    if (contextValue.idempotentReplay) result.extensions = { ...result.extensions, idempotentReplay: true };
    const errors = result.errors;
    if (result.data !== null || !errors?.length || (response.http.status ?? 200) !== 200) return;
    const codes = errors.map((e) => e.extensions?.['code']);
    if (!codes.every((c) => typeof c === 'string' && TABLE_CODES.has(c))) return;
    response.http.status = httpStatusOf(codes[0] as string);
    const retryAfterMs = errors[0]!.extensions?.['retryAfterMs'];
    if (typeof retryAfterMs === 'number')
      response.http.headers.set('retry-after', String(Math.ceil(retryAfterMs / 1000)));
  },
};
/**
 * Where the first error code of a request's answer goes, for its metrics: Apollo Server hands plugins a shallow copy
 * of the context, so the context carries the request's record (RequestEnd) under a symbol.
 */
const OUTCOME = Symbol('agentgraph.outcome');
type OutcomeHolder = { [OUTCOME]?: { code?: string } };
const responsePlugin: ApolloServerPlugin<GatewayContext> = {
  async requestDidStart() {
    return responseListener;
  },
};

function apolloLogger(log: Logger) {
  const text = (args: unknown[]) => args.map((a) => (a instanceof Error ? a.message : String(a))).join(' ');
  return {
    debug: (...a: unknown[]) => log.debug(text(a), { component: 'apollo' }),
    info: (...a: unknown[]) => log.debug(text(a), { component: 'apollo' }),
    warn: (...a: unknown[]) => log.warn(text(a), { component: 'apollo' }),
    error: (...a: unknown[]) => log.error(text(a), { component: 'apollo' }),
  };
}

interface PreparedQuery {
  document?: DocumentNode;
  parseError?: AppError;
  /** Static limit verdict per operation name ('' for the only one): null = passed. */
  checked: Map<string, AppError | null>;
  /** first/last take variables somewhere, so values must be checked per request. */
  dynamic: boolean;
  /** Name of the document's only operation (for the access log when the request names none). */
  soleOperationName?: string;
}

interface RequestInfo {
  operationName?: string;
  /** PERSON, DEVICE, SIDECAR or ANONYMOUS (the access line). */
  principal?: string;
  /** The error code the request ended with (metrics). */
  code?: string;
}

export async function createGateway(opts: GatewayOptions): Promise<Gateway> {
  const { config, log } = opts;
  const limits = config.limits;
  // The runtime verifier caches verified tokens until they expire, so this costs a map lookup per request.
  const verifyToken = opts.verifyToken;
  const pools = new SubgraphPools({ connections: opts.subgraphConnections ?? 128 });
  const dedupe = new DedupeState(opts.dedupeInflightReads ?? true);
  const persisted = opts.persisted ?? createPersistedDocuments(config.persistedQueries, log);
  const subgraphUrls: Record<string, string> = {};
  for (const [name, url] of Object.entries(opts.subgraphUrls)) if (url) subgraphUrls[name] = url;

  // @apollo/gateway otherwise starts an OTLP exporter that reports usage metrics to Apollo and probes cloud metadata
  // endpoints (AWS, GCP, Azure, Alibaba) at start: no egress a control plane did not ask for. Only the env var turns it off.
  process.env['APOLLO_TELEMETRY_DISABLED'] ??= 'true';
  const apolloGateway = new ApolloGateway({
    supergraphSdl: opts.supergraphSdl,
    // Never answer the experimental query-plan header (it exposes the topology) whatever NODE_ENV says.
    __exposeQueryPlanExperimental: false,
    buildService: ({ name, url }) => {
      const target = subgraphUrls[name] ?? url;
      if (!target) throw new Error(`No URL for subgraph ${name}`);
      subgraphUrls[name] = target;
      return new PooledDataSource(name, target, pools, dedupe, config.gatewaySecret);
    },
    logger: apolloLogger(log),
  });
  let apiSchema: GraphQLSchema | undefined;
  apolloGateway.onSchemaLoadOrUpdate(({ apiSchema: schema }) => {
    apiSchema = schema;
  });

  const apollo = new ApolloServer<GatewayContext>({
    gateway: apolloGateway,
    introspection: config.introspection,
    includeStacktraceInErrorResponses: false,
    hideSchemaDetailsFromClientErrors: config.mode === 'production',
    stopOnTerminationSignals: false,
    csrfPrevention: true,
    allowBatchedHttpRequests: false,
    persistedQueries: false,
    logger: apolloLogger(log),
    formatError: (formatted, error) => formatGatewayError(formatted, error, log),
    plugins: [
      ApolloServerPluginLandingPageDisabled(),
      ApolloServerPluginUsageReportingDisabled(),
      ApolloServerPluginSchemaReportingDisabled(),
      ApolloServerPluginInlineTraceDisabled(),
      ApolloServerPluginCacheControlDisabled(),
      responsePlugin,
      tracingPlugin,
      ...(persisted.mode === 'apq' ? [persisted.plugin<GatewayContext>()] : []),
    ],
  });
  await apollo.start();

  const owners = subscriptionOwners(opts.supergraphSdl);
  const subgraphSchemas =
    opts.subgraphSchemas ??
    new Map(
      [...new Set(owners.values())].map((name) => [name, subgraphSchemaOf(name as SubgraphName)] as const),
    );
  const streams = createStreamHandler({
    apiSchema: () => apiSchema,
    owners,
    subgraphSchemas,
    subgraphUrls,
    limits,
    introspection: config.introspection,
    hideSuggestions: config.mode === 'production',
    gatewaySecret: config.gatewaySecret,
    log,
    heartbeatMs: opts.heartbeatMs,
    timers: opts.timers,
    persisted,
    multiplex: opts.streamMultiplex,
    reservations: opts.streamReservations,
    now: opts.now,
  });

  const metrics = opts.metrics ?? createMetrics({ service: 'gateway' });
  metrics.watchStreams(() => streams.openStreams);

  const documents = new Lru<string, PreparedQuery>(2000);
  const prepare = (query: string): PreparedQuery => {
    let p = documents.get(query);
    if (p) return p;
    try {
      const document = parse(query);
      const ops = document.definitions.filter((d) => d.kind === Kind.OPERATION_DEFINITION);
      p = {
        document,
        checked: new Map(),
        dynamic: usesVariablePageArgs(document),
        soleOperationName: ops.length === 1 ? ops[0]!.name?.value : undefined,
      };
    } catch (err) {
      p = {
        parseError: documentError(
          new AppError('GRAPHQL_PARSE_FAILED', `The query does not parse: ${(err as Error).message}`),
        ),
        checked: new Map(),
        dynamic: false,
      };
    }
    documents.set(query, p);
    return p;
  };

  const checkLimits = (
    query: string,
    operationName: string | undefined,
    variables: Record<string, unknown> | undefined,
    info: RequestInfo,
  ) => {
    const p = prepare(query);
    if (p.parseError) throw p.parseError;
    info.operationName = operationName ?? p.soleOperationName;
    const doc = p.document!;
    const key = operationName ?? '';
    let verdict = p.checked.get(key);
    if (verdict === undefined) {
      try {
        checkDocumentLimits(doc, operationName, null, limits);
        verdict = null;
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        verdict = err;
      }
      p.checked.set(key, verdict);
    }
    if (verdict) throw verdict;
    if (p.dynamic) checkDocumentLimits(doc, operationName, variables ?? {}, limits);
  };

  let shuttingDown = false;
  const inflight = new InFlight();
  let baseUrl: string | undefined;

  /**
   * One request's end: its log line and the count of requests in flight. An object, not closures: an open stream keeps
   * it until it ends (stream.ts calls `streamEnded`), and it is all the stream keeps of this request's handling.
   */
  class RequestEnd implements RequestInfo, StreamEndListener {
    operationName?: string;
    principal?: string;
    code?: string;
    private readonly started = performance.now();
    constructor(
      private readonly req: IncomingMessage,
      private readonly res: ServerResponse,
      private readonly path: string,
      private readonly correlationId: string,
      /** The request's SERVER span when tracing is on: for a stream, the stream's lifetime, with its end reason. */
      private readonly span?: Span,
    ) {}

    /** The stream it opened is over (called from the stream's own events, outside the request's log context). */
    streamEnded(reason?: string): void {
      if (reason) this.span?.setAttribute('agentgraph.stream.end_reason', reason);
      withCorrelationId(this.correlationId, () => this.settle());
    }

    settle(): void {
      const ms = performance.now() - this.started;
      const status = this.res.statusCode;
      if (this.path === '/graphql') {
        const operation = operationLabel(this.operationName, persisted.operationNames);
        metrics.observeRequest(operation, outcomeLabel(this.code, status), ms / 1000);
      }
      const fields = {
        method: this.req.method,
        path: this.path,
        operationName: this.operationName?.slice(0, 100),
        status,
        latencyMs: Math.round(ms * 100) / 100,
        principal: this.principal ?? 'ANONYMOUS',
      };
      if (this.path === '/readyz' || this.path === METRICS_PATH) log.debug('request', fields);
      else log.info('request', fields);
      if (this.span) endRequestSpan(this.span, this.res.statusCode);
      inflight.leave();
      if (shuttingDown) server.closeIdleConnections();
    }
  }

  const readyz = async (res: ServerResponse) => {
    if (shuttingDown || !apiSchema) return sendJson(res, 503, { status: 'unavailable' });
    const timeout = opts.readinessTimeoutMs ?? 1000;
    const checks = Object.values(subgraphUrls).map(async (url) => {
      const target = new URL('/readyz', url);
      try {
        const r = await pools.for(target.origin).request({
          path: target.pathname,
          method: 'GET',
          signal: AbortSignal.timeout(timeout),
          headersTimeout: timeout,
          bodyTimeout: timeout,
        });
        await r.body.dump();
        return r.statusCode === 200;
      } catch {
        return false;
      }
    });
    const ok = (await Promise.all(checks)).every(Boolean);
    sendJson(res, ok ? 200 : 503, { status: ok ? 'ready' : 'unavailable' });
  };

  const graphql = async (
    req: IncomingMessage,
    res: ServerResponse,
    correlationId: string,
    info: RequestInfo,
    search: string,
  ) => {
    let body: unknown;
    let query: string | undefined;
    let operationName: string | undefined;
    let variables: Record<string, unknown> | undefined;
    let extensions: unknown;
    if (req.method === 'POST') {
      if (!isJsonContentType(req.headers['content-type'])) {
        // Never read, never run (CSRF: a browser sends text/plain or a form cross-site without a preflight).
        req.resume();
        sendRequestError(res, unsupportedMediaType(), 415, correlationId);
        return;
      }
      body = parseJsonBody(await readBody(req, limits.maxBodyBytes));
      if (!body || typeof body !== 'object' || Array.isArray(body)) {
        throw new AppError(
          'BAD_USER_INPUT',
          'The request must be {"query": string, "variables"?: object, "operationName"?: string}.',
        );
      }
      const b = body as Record<string, unknown>;
      query = typeof b['query'] === 'string' ? b['query'] : undefined;
      operationName = typeof b['operationName'] === 'string' ? b['operationName'] : undefined;
      variables =
        b['variables'] && typeof b['variables'] === 'object'
          ? (b['variables'] as Record<string, unknown>)
          : undefined;
      extensions = b['extensions'];
    } else if (req.method === 'GET') {
      const params = new URLSearchParams(search);
      query = params.get('query') ?? undefined;
      operationName = params.get('operationName') ?? undefined;
      const v = params.get('variables');
      if (v) {
        try {
          const parsed = JSON.parse(v) as unknown;
          variables = parsed && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : undefined;
        } catch {
          throw new AppError('GRAPHQL_PARSE_FAILED', 'The "variables" search parameter is not valid JSON.');
        }
      }
      const e = params.get('extensions');
      if (e) {
        try {
          extensions = JSON.parse(e) as unknown;
        } catch {
          throw new AppError('GRAPHQL_PARSE_FAILED', 'The "extensions" search parameter is not valid JSON.');
        }
      }
    } else {
      res.writeHead(405, { allow: 'GET, POST' }).end();
      return;
    }
    info.operationName = operationName;
    let resolved: ResolvedDocument;
    try {
      resolved = persisted.resolve({ query, extensions, operationName });
    } catch (err) {
      if (err instanceof AppError && err.code === 'PERSISTED_QUERY_NOT_FOUND')
        res.setHeader('cache-control', NOT_FOUND_CACHE_CONTROL);
      throw err;
    }
    query = resolved.query;
    if (resolved.persisted) {
      // Apollo Server sees an ordinary request: the document, and no persistedQuery extension.
      if (req.method === 'POST') {
        const { extensions: _sent, ...rest } = body as Record<string, unknown>;
        const kept = withoutPersistedQuery(extensions);
        body = { ...rest, query, ...(kept ? { extensions: kept } : {}) };
      } else {
        const params = new URLSearchParams(search);
        params.set('query', query);
        const rest = withoutPersistedQuery(extensions);
        if (rest) params.set('extensions', JSON.stringify(rest));
        else params.delete('extensions');
        search = `?${params.toString()}`;
      }
    }
    checkLimits(query, operationName, variables, info);
    const authorization = req.headers.authorization;
    info.principal = principalLabel(await verifyToken(authorization)); // 401 on a bad token before any subgraph is asked

    const headers = new HeaderMap();
    for (const [k, v] of Object.entries(req.headers)) {
      if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(', ') : v);
    }
    const context: GatewayContext = {
      correlationId,
      authorization,
      idempotentReplay: false,
      forwardedFor: forwardedForOf(req),
      userAgent: req.headers['user-agent'],
    };
    if (resolved.register) persisted.rememberAfterValidation(context, resolved.register, query);
    (context as OutcomeHolder)[OUTCOME] = info;
    rememberRequestSpan(context);
    const result = await apollo.executeHTTPGraphQLRequest({
      httpGraphQLRequest: { method: req.method, headers, search, body },
      context: async () => context,
    });
    res.statusCode = result.status ?? 200;
    for (const [k, v] of result.headers) res.setHeader(k, v);
    if (result.body.kind === 'complete') {
      res.setHeader('content-length', Buffer.byteLength(result.body.string));
      res.end(result.body.string);
    } else {
      for await (const chunk of result.body.asyncIterator) res.write(chunk);
      res.end();
    }
  };

  /** Resolves once the client was answered: `true` when a stream opened (`onEnd` is called when it is over). */
  const stream = async (
    req: IncomingMessage,
    res: ServerResponse,
    correlationId: string,
    onEnd: RequestEnd,
  ): Promise<boolean> => {
    if (shuttingDown)
      throw new AppError('SERVICE_UNAVAILABLE', 'Shutting down; reconnect.', { retryAfterMs: 1000 });
    const authorization = req.headers.authorization;
    const auth = await verifyToken(authorization);
    onEnd.principal = principalLabel(auth);
    if (!auth || !authorization) {
      throw new AppError(
        'UNAUTHENTICATED',
        'Streams need an access token. Send "Authorization: Bearer <token>".',
      );
    }
    return streams.handle(req, res, {
      auth,
      authorization,
      correlationId,
      forwardedFor: forwardedForOf(req),
      userAgent: req.headers['user-agent'],
      onEnd,
    });
  };

  const handle = async (
    req: IncomingMessage,
    res: ServerResponse,
    path: string,
    search: string,
    correlationId: string,
    span?: Span,
  ) => {
    const info = new RequestEnd(req, res, path, correlationId, span);
    // An open stream ends later, from its own events: no promise of this request stays pending meanwhile (each would
    // cost memory per idle stream, the more so under AsyncLocalStorage).
    let streaming = false;
    try {
      if (path === '/graphql') await graphql(req, res, correlationId, info, search);
      else if (path === '/graphql/stream') streaming = await stream(req, res, correlationId, info);
      else if (path === '/readyz') await readyz(res);
      else if (path === METRICS_PATH) await serveMetrics(req, res, metrics, config, correlationId);
      else if (!(opts.console && (await opts.console(req, res, path, search))))
        sendJson(res, 404, { error: 'not_found', message: `No route ${path}` });
    } catch (err) {
      if (err instanceof AppError) info.code = err.code;
      // A stream request sets no header before its answer (stream.ts): a refusal thrown here gets the id now.
      if (!res.headersSent && !res.hasHeader('x-correlation-id'))
        res.setHeader('x-correlation-id', correlationId);
      sendThrown(res, err, correlationId, log, path);
    } finally {
      if (!streaming) info.settle();
    }
  };

  const server = createServer((req, res) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    if (path === '/healthz') {
      sendJson(res, 200, { status: 'ok' });
      return;
    }
    const correlationId = correlationIdFrom(req.headers['x-correlation-id']);
    // Streams answer with every header in one writeHead (a header set here would stay on the response as a map).
    if (path !== '/graphql/stream') res.setHeader('x-correlation-id', correlationId);
    if (shuttingDown) res.setHeader('connection', 'close');
    inflight.enter();
    // A SERVER span when tracing is on, always a new root: a client's traceparent is only linked (runtime telemetry).
    const traced =
      path === '/graphql' || path === '/graphql/stream'
        ? startRequestSpan(req, res, {
            tracer: 'gateway',
            route: path,
            trusted: () => false,
            endOnClose: false,
          })
        : undefined;
    // handle() settles every request itself (its log line, inflight): the request's end for a stream comes later.
    void runInContext(traced?.context, withCorrelationId, correlationId, () =>
      handle(req, res, path, q < 0 ? '' : url.slice(q), correlationId, traced?.span),
    );
  });
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;

  let closing: Promise<void> | null = null;

  return {
    server,
    get url() {
      return baseUrl;
    },
    get openStreams() {
      return streams.openStreams;
    },
    get stats() {
      return { sharedFetches: dedupe.shared };
    },
    metrics,
    listen(port, host) {
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          const addr = server.address() as AddressInfo;
          baseUrl = `http://${host.includes(':') ? `[${host}]` : host}:${addr.port}`;
          log.info('gateway listening', { url: `${baseUrl}/graphql` });
          resolve(baseUrl);
        });
      });
    },
    close() {
      closing ??= (async () => {
        shuttingDown = true;
        const streamsClosed = streams.close();
        // Requests still running after the grace period are cut off (stuck): do not wait for their subgraph fetches.
        const stuck = !(await closeGracefully(server, config.shutdownGraceMs, inflight.idle()));
        await streamsClosed;
        await apollo.stop();
        await pools.close(stuck);
        log.info('gateway stopped');
      })();
      return closing;
    },
  };
}

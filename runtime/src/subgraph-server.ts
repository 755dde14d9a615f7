/**
 * The HTTP server every subgraph runs on: GraphQL over HTTP at POST /graphql, graphql-sse at /graphql/stream for
 * the subscriptions it owns, /healthz (liveness, no I/O) and /readyz (readiness), plus routes a subgraph adds
 * (e.g. identity's JWKS). Each request verifies its own token (zero trust), carries the correlation id it was
 * given, runs under the same document limits as the gateway, and answers with codes from the error table.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  getOperationAST,
  GraphQLError,
  NoSchemaIntrospectionCustomRule,
  parse,
  specifiedRules,
  validate,
  createSourceEventStream,
  type DocumentNode,
  type ExecutionArgs,
  type ExecutionResult,
  type GraphQLFormattedError,
  type GraphQLSchema,
  execute,
} from 'graphql';
import type { OperationResult } from 'graphql-sse';
import { z } from 'zod';
import { assertOperationScope, type TokenVerifier } from './auth.js';
import type { Config } from './config.js';
import { CursorCodec } from './connection.js';
import { classifyDatabaseError } from './db/errors.js';
import type { Database } from './db/types.js';
import { AppError, maskedError } from './errors.js';
import { assertGatewayAccess, GATEWAY_SECRET_HEADER, isGatewayRequest } from './gateway-secret.js';
import {
  acceptsGraphQLResponseJson,
  documentError,
  GRAPHQL_RESPONSE_JSON,
  isJsonContentType,
  parseJsonBody,
  readBody,
  sendJson,
  sendRequestError,
  sendThrown,
  unsupportedMediaType,
} from './http-body.js';
import { closeGracefully, InFlight } from './http-shutdown.js';
import { checkInputText } from './input-text.js';
import { checkDocumentLimits } from './limits.js';
import { withoutSuggestions } from './schema-details.js';
import { correlationIdFrom, withCorrelationId, type Logger } from './log.js';
import { Lru } from './lru.js';
import {
  createMetrics,
  METRICS_PATH,
  principalLabel,
  RequestRecord,
  rootFieldOf,
  serveMetrics,
  type Metrics,
} from './metrics/index.js';
import type { RevocationList } from './revocation.js';
import {
  createStreamGuard,
  endWithReason,
  type EndWithReasonOptions,
  type StreamStopSource,
} from './stream-guard.js';
import { originOf, type RequestOrigin } from './origin.js';
import { createPrincipalCheck, type PrincipalOperations } from './principals.js';
import { executeEvent } from './shared-events.js';
import { createSseHandler } from './sse-http.js';
import type { AuthContext } from './tenancy.js';
import { runInContext, setActiveSpanAttributes, startRequestSpan } from './telemetry/tracing.js';

/** graphql-sse's header naming a reservation (single-connection mode). */
export const STREAM_TOKEN_HEADER = 'x-graphql-event-stream-token';

export interface SubgraphContext {
  auth: AuthContext | null;
  db: Database;
  log: Logger;
  config: Config;
  cursors: CursorCodec;
  correlationId: string;
  /** Merged into the response's `extensions` (e.g. idempotentReplay). */
  responseExtensions: Record<string, unknown>;
  /** Aborted when the client goes away or the server shuts down (streams use it). */
  signal: AbortSignal;
  /**
   * The request's Authorization header as received, for calls to another subgraph on the caller's behalf. An
   * operation of a stream reservation (single-connection mode) holds it until its subscribe resolver has returned,
   * not for the stream's life: a token is most of what an idle stream would otherwise keep.
   */
  authorization?: string | undefined;
  /** Where the request came from (audit records). */
  origin: RequestOrigin;
  /** This server's metrics (resolvers count rate-limit refusals, idempotency replays, intent transitions). */
  metrics?: Metrics;
}

export type RouteHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void> | void;

export interface SubgraphServerOptions {
  name: string;
  schema: GraphQLSchema;
  config: Config;
  db: Database;
  log: Logger;
  verifyToken: TokenVerifier;
  /** Extra routes by exact path; the key '*' (if any) answers every other path (identity's OAuth provider). */
  routes?: Record<string, RouteHandler>;
  /** When given, a stream ends as soon as its token is revoked (it always ends when its token expires). */
  revocations?: Pick<RevocationList, 'isRevoked' | 'subscribe'>;
  /** Other reasons to end streams (StreamStopSource). */
  streamStops?: readonly StreamStopSource[];
  /** Root fields a device's and a sidecar's token may call (principals.ts); absent: none. */
  principals?: PrincipalOperations;
  /** This server's metrics, served on /metrics (default: a registry of its own). */
  metrics?: Metrics;
}

export interface RunningServer {
  server: Server;
  url: string;
  /** Streams running now: distinct-connection streams and operations of reservations. */
  openStreams(): number;
  close(): Promise<void>;
}

const GraphQLRequest = z.object({
  query: z.string().min(1).max(200_000),
  operationName: z.string().nullish(),
  variables: z.record(z.string(), z.unknown()).nullish(),
  extensions: z.record(z.string(), z.unknown()).nullish(),
});

interface Prepared {
  document?: DocumentNode;
  error?: AppError;
}

/** Turns any thrown error into a client-safe formatted error with a code; unexpected ones are logged and masked. */
export function formatError(err: GraphQLError, log: Logger, correlationId: string): GraphQLFormattedError {
  const original = err.originalError;
  if (original instanceof AppError || (!original && err.extensions['code'])) {
    return err.toJSON();
  }
  if (!original) {
    // graphql-js's own execution errors (a null for a non-null field, a value the type cannot serialise): the
    // server broke its schema's promise, which the client cannot fix by changing the request.
    log.error('execution error', { path: err.path, message: err.message });
    return { ...err.toJSON(), extensions: { ...err.extensions, code: 'INTERNAL_SERVER_ERROR' } };
  }
  if (original instanceof GraphQLError && original.extensions['code']) return original.toJSON();
  // The database unreachable (SERVICE_UNAVAILABLE, retryAfterMs) or refusing a character (BAD_USER_INPUT).
  const database = classifyDatabaseError(original);
  if (database) {
    log.warn('database call failed', { path: err.path, code: database.code, error: original });
    return {
      message: database.message,
      path: err.path,
      locations: err.locations,
      extensions: database.extensions,
    };
  }
  log.error('resolver failed', { path: err.path, error: original });
  return maskedError(correlationId, { path: err.path, locations: err.locations });
}

export function createSubgraphServer(opts: SubgraphServerOptions): {
  server: Server;
  listen(port: number, host: string): Promise<RunningServer>;
} {
  const { schema, config, db, log, verifyToken } = opts;
  const cursors = new CursorCodec(config.cursorSecret);
  const documents = new Lru<string, Prepared>(1000);
  const rules = config.introspection ? specifiedRules : [...specifiedRules, NoSchemaIntrospectionCustomRule];
  // Production: no "Did you mean …?" in validation and coercion messages (they name schema members the caller did not
  // ask for, introspection by guessing), as the gateway's Apollo Server does (hideSchemaDetailsFromClientErrors).
  const shown = config.mode === 'production' ? withoutSuggestions : (message: string) => message;
  const checkPrincipal = createPrincipalCheck(schema, opts.principals);
  const streams = new Set<AbortController>();
  const metrics = opts.metrics ?? createMetrics({ service: opts.name });
  metrics.watchStreams(() => streams.size);
  metrics.watchPool(db);
  /** Each request's access line and metrics (metrics/access.ts). */
  const records = new WeakMap<IncomingMessage, RequestRecord>();
  const guard = createStreamGuard({ revocations: opts.revocations, stops: opts.streamStops });
  let shuttingDown = false;

  const prepare = (query: string): Prepared => {
    let prepared = documents.get(query);
    if (prepared) return prepared;
    let document: DocumentNode;
    try {
      document = parse(query);
    } catch (err) {
      prepared = {
        error: documentError(
          new AppError('GRAPHQL_PARSE_FAILED', `The query does not parse: ${(err as Error).message}`),
        ),
      };
      documents.set(query, prepared);
      return prepared;
    }
    const errors = validate(schema, document, rules);
    prepared = errors.length
      ? {
          error: documentError(
            new AppError('GRAPHQL_VALIDATION_FAILED', errors.map((e) => shown(e.message)).join(' ')),
          ),
        }
      : { document };
    documents.set(query, prepared);
    return prepared;
  };

  /** Verifies the token and, for a known operation, that the token has its scope (api:read / api:write). */
  const contextFor = async (
    req: IncomingMessage,
    correlationId: string,
    signal: AbortSignal,
    document?: DocumentNode,
    operationName?: string | null,
  ) => {
    const auth = await verifyToken(req.headers.authorization);
    // The gateway proves itself with its secret (gateway-secret.ts), checked once per request: only it may ask for
    // `_service` and `_entities` (on /graphql and /graphql/stream alike), and only its x-forwarded-for is trusted.
    const fromGateway = isGatewayRequest(req.headers[GATEWAY_SECRET_HEADER], config.gatewaySecret);
    if (document) assertGatewayAccess(document, fromGateway);
    const record = records.get(req);
    if (record) record.principal = principalLabel(auth);
    const operation = document && getOperationAST(document, operationName);
    if (operation) {
      assertOperationScope(auth, operation.operation);
      checkPrincipal(auth, document!, operation);
    }
    const ctx: SubgraphContext = {
      auth,
      db,
      log, // loggers are immutable: a child without fields would be the same logger, at a cost per open stream
      config,
      cursors,
      correlationId,
      responseExtensions: {},
      signal,
      authorization: req.headers.authorization,
      origin: originOf(req, fromGateway),
      metrics,
    };
    return ctx;
  };

  const handleGraphQL = async (req: IncomingMessage, res: ServerResponse, correlationId: string) => {
    if (req.method !== 'POST') {
      res.writeHead(405, { allow: 'POST' }).end();
      return;
    }
    if (!isJsonContentType(req.headers['content-type'])) {
      // Never read, never run: a browser may send text/plain or a form cross-site without a preflight.
      req.resume();
      sendRequestError(res, unsupportedMediaType(), 415, correlationId);
      return;
    }
    const body = GraphQLRequest.safeParse(parseJsonBody(await readBody(req, config.limits.maxBodyBytes)));
    if (!body.success) {
      throw new AppError(
        'BAD_USER_INPUT',
        'The request must be {"query": string, "variables"?: object, "operationName"?: string}.',
      );
    }
    const { query, variables, operationName } = body.data;
    const prepared = prepare(query);
    if (prepared.error) throw prepared.error;
    const document = prepared.document!;
    const record = records.get(req);
    if (record) {
      record.operation = rootFieldOf(document, operationName);
      record.operationName = operationName ?? record.operation;
    }
    checkDocumentLimits(document, operationName, variables ?? {}, config.limits);
    const unstorable = checkInputText(schema, document, operationName, variables);
    if (unstorable) throw unstorable;
    const abort = new AbortController();
    const ctx = await contextFor(req, correlationId, abort.signal, document, operationName);
    setActiveSpanAttributes(() => ({
      'graphql.operation.type': getOperationAST(document, operationName)?.operation ?? '',
      ...(operationName ? { 'graphql.operation.name': operationName } : {}),
    }));
    const result = (await execute({
      schema,
      document,
      variableValues: variables ?? undefined,
      operationName: operationName ?? undefined,
      contextValue: ctx,
    })) as ExecutionResult;
    if (!('data' in result) || result.data === undefined) {
      // Variable coercion or operation selection failed: a request error.
      const first = result.errors?.[0];
      throw documentError(
        new AppError('BAD_USER_INPUT', first ? shown(first.message) : 'The request could not be executed.'),
      );
    }
    const out: Record<string, unknown> = { data: result.data };
    if (result.errors?.length) {
      const errors = result.errors.map((e) => formatError(e, ctx.log, correlationId));
      out['errors'] = errors;
      const code = errors[0]!.extensions?.['code'];
      if (record && typeof code === 'string') record.code = code;
    }
    const extensions = { ...result.extensions, ...ctx.responseExtensions };
    if (Object.keys(extensions).length) out['extensions'] = extensions;
    sendJson(
      res,
      200,
      out,
      {},
      acceptsGraphQLResponseJson(req.headers.accept) ? GRAPHQL_RESPONSE_JSON : undefined,
    );
  };

  /** The operation behind each context of a reservation's operation (single-connection mode). */
  const operations = new WeakMap<object, StreamOperation>();
  /** Open reservation event streams (single-connection mode), ended on shutdown once their operations completed. */
  const reservations = new Set<ServerResponse>();
  const requests = new InFlight();
  let drained: (() => void) | null = null;
  const forget = (abort: AbortController) => {
    streams.delete(abort);
    if (streams.size === 0) drained?.();
  };

  /** A stream's events mapped to execution results (what graphql-js's `subscribe` does, without a second iterator). */
  class MappedStream implements EndWithReasonOptions<unknown, ExecutionResult> {
    constructor(readonly args: ExecutionArgs) {}
    map(payload: unknown): ExecutionResult | Promise<ExecutionResult> {
      // Once per (item, document, arguments) for items their source shared between streams (shared-events.ts).
      return executeEvent(payload, this.args, () => execute({ ...this.args, rootValue: payload }));
    }
  }

  /**
   * One operation of a reservation (single-connection mode), from its subscribe to its end: the options of its
   * `endWithReason` (methods on the prototype, so an idle stream holds no closure of its own).
   */
  class StreamOperation extends MappedStream {
    constructor(
      readonly abort: AbortController,
      override readonly args: ExecutionArgs & { contextValue: SubgraphContext },
    ) {
      super(args);
    }

    cleanup(): void {
      this.abort.abort();
      forget(this.abort);
      guard.unwatch(this.abort);
    }

    onError(err: unknown): ExecutionResult {
      const ctx = this.args.contextValue;
      ctx.log.error('stream failed', { error: err, correlationId: ctx.correlationId });
      return {
        errors: [
          new GraphQLError(
            'The stream source went away. Reconnect to resume (pass the last sequence you handled).',
            { extensions: { code: 'SERVICE_UNAVAILABLE', retryAfterMs: 1000 } },
          ),
        ],
      };
    }
  }

  /**
   * The context of a stream's operation. A distinct-connection stream is counted and watched from here on and ends
   * when its response closes; an operation of a reservation only from onOperation on, and ends by its StreamOperation.
   */
  const streamContext = async (
    raw: IncomingMessage,
    res: ServerResponse,
    abort: AbortController,
    document: DocumentNode,
    operationName: string | null | undefined,
  ): Promise<SubgraphContext> => {
    const correlationId = correlationIdFrom(raw.headers['x-correlation-id']);
    if (raw.headers[STREAM_TOKEN_HEADER]) {
      // An operation of a reservation: its request ends at once (202); it lives until it completes, is cancelled
      // (DELETE), or its event stream closes. Nothing here needs undoing: graphql-sse drops an operation cancelled
      // while its context was being made without running it (204) and never calls onOperation.
      const ctx = await contextFor(raw, correlationId, abort.signal, document, operationName);
      await guard.admit(ctx.auth);
      return ctx;
    }
    streams.add(abort);
    // The response, not the request: since Node 16 a request emits 'close' once its body is read, before the
    // stream even starts, so the client leaving was never noticed. The response closes when the client goes.
    const gone = () => {
      abort.abort();
      forget(abort);
      guard.unwatch(abort);
      // While shutting down, a finished stream leaves an idle keep-alive socket that would hold close() open.
      if (shuttingDown) setImmediate(() => server.closeIdleConnections());
    };
    if (res.closed) gone();
    else res.once('close', gone);
    const ctx = await contextFor(raw, correlationId, abort.signal, document, operationName);
    await guard.admit(ctx.auth);
    if (!res.closed) guard.watch(ctx.auth, abort);
    return ctx;
  };

  const refusal = (
    status: number,
    statusText: string,
    error: { message: string; extensions?: Record<string, unknown> },
    headers: Record<string, string> = {},
  ) =>
    [
      JSON.stringify({ errors: [error] }),
      { status, statusText, headers: { 'content-type': 'application/json; charset=utf-8', ...headers } },
    ] as [string, { status: number; statusText: string; headers: Record<string, string> }];

  // Our adapter of graphql-sse to node:http (sse-http.ts): the events of one wake-up leave in a few writes, not one each.
  const sse = createSseHandler<SubgraphContext & Record<PropertyKey, unknown>>({
    schema,
    // Distinct connections (one request per stream), and graphql-sse's single-connection mode, which the gateway uses
    // to carry many streams over one connection: PUT makes a reservation (for any caller with a valid token: it
    // carries nothing by itself), its token then names the event stream and each operation, and every operation is
    // authenticated with its own caller's token like any request (`onSubscribe`).
    authenticate: async (req) => {
      const token = req.headers.get(STREAM_TOKEN_HEADER);
      if (token) return token;
      if (req.method !== 'PUT') return null as unknown as string;
      const auth = await verifyToken(req.raw.headers.authorization);
      if (!auth) throw new AppError('UNAUTHENTICATED', 'A stream reservation needs an access token.');
      return randomUUID();
    },
    // The document comes parsed and validated from `prepare` (cached by query text, shared by every operation of the
    // same query): graphql-sse does not parse it again, and validation already happened there, with our rules.
    onSubscribe: async (req, params) => {
      const prepared = typeof params.query === 'string' ? prepare(params.query) : undefined;
      if (prepared?.error) {
        const { message, extensions } = prepared.error;
        return refusal(400, 'Bad Request', { message, extensions });
      }
      const document = prepared?.document;
      if (!document)
        return refusal(400, 'Bad Request', { message: 'The request must carry a "query" string.' });
      // Checked before a context exists (graphql-sse checks again): a refused operation leaves nothing watched.
      const operation = getOperationAST(document, params.operationName);
      if (!operation) return refusal(400, 'Bad Request', { message: 'Unable to detect operation AST' });
      if (operation.operation === 'mutation' && req.method === 'GET') {
        return refusal(
          405,
          'Method Not Allowed',
          { message: 'Cannot perform mutations over GET' },
          { allow: 'POST' },
        );
      }
      // The same document limits as /graphql (and the gateway): depth, aliases, page sizes with variable defaults.
      try {
        checkDocumentLimits(document, params.operationName, params.variables ?? {}, config.limits);
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        return refusal(400, 'Bad Request', { message: err.message, extensions: err.extensions });
      }
      const unstorable = checkInputText(schema, document, params.operationName, params.variables);
      if (unstorable) {
        return refusal(400, 'Bad Request', {
          message: unstorable.message,
          extensions: unstorable.extensions,
        });
      }
      const abort = new AbortController();
      const ctx = (await streamContext(
        req.raw,
        req.context.res,
        abort,
        document,
        params.operationName,
      )) as SubgraphContext & Record<PropertyKey, unknown>;
      const args = {
        schema,
        document,
        operationName: params.operationName,
        variableValues: params.variables,
        contextValue: ctx,
      };
      if (req.raw.headers[STREAM_TOKEN_HEADER]) operations.set(ctx, new StreamOperation(abort, args));
      return args;
    },
    // Validation happened in `prepare`, with our rules (introspection off unless configured).
    validate: () => [],
    // The source event stream only: onOperation maps its events (StreamOperation.map), one iterator per stream.
    subscribe: (args) => createSourceEventStream(args) as unknown as OperationResult,
    // A revoked or expired token ends the stream with a last UNAUTHENTICATED event (stream-guard.ts).
    onOperation: (ctx, req, args, result) => {
      const streaming = Symbol.asyncIterator in result;
      const operation = operations.get(ctx);
      if (!operation) {
        return streaming
          ? endWithReason(result as AsyncIterable<unknown>, ctx.signal, new MappedStream(args))
          : undefined;
      }
      operations.delete(ctx);
      // An operation of a reservation: its request was answered (202) and is not needed again, but graphql-sse keeps
      // its request object for the operation's life; let the request and response behind it go.
      Object.assign(req, { raw: undefined, context: undefined, headers: undefined, body: undefined });
      ctx.authorization = undefined;
      if (!streaming) {
        operation.cleanup();
        return undefined;
      }
      streams.add(operation.abort);
      guard.watch(ctx.auth, operation.abort);
      if (shuttingDown) operation.abort.abort();
      // One operation failing must not end the others on its connection: it ends alone, saying so with a code.
      return endWithReason(result as AsyncIterable<unknown>, ctx.signal, operation);
    },
    // Errors inside a stream get the same masking and codes as on /graphql.
    onNext: (ctx, _req, result) =>
      result.errors?.length
        ? ({
            ...result,
            errors: result.errors.map((e) => formatError(e, ctx.log, ctx.correlationId)),
          } as unknown as typeof result)
        : undefined,
  });

  const server = createServer((req, res) => {
    const correlationId = correlationIdFrom(req.headers['x-correlation-id']);
    res.setHeader('x-correlation-id', correlationId);
    const path = (req.url ?? '/').split('?')[0]!;
    const record = new RequestRecord(req.method, path, correlationId);
    records.set(req, record);
    // Requests a graceful close waits for (streams are counted apart: `streams`, `reservations`).
    const counted = path !== '/graphql/stream';
    if (counted) requests.enter();
    res.once('close', () => {
      if (counted) requests.leave();
      record.finish(res, log, path === '/graphql' ? metrics : undefined);
    });
    // A SERVER span when tracing is on: it continues the caller's trace only for the gateway (its secret), else a root.
    const traced =
      path === '/graphql' || path === '/graphql/stream'
        ? startRequestSpan(req, res, {
            tracer: opts.name,
            route: path,
            trusted: () => isGatewayRequest(req.headers[GATEWAY_SECRET_HEADER], config.gatewaySecret),
            endOnClose: true,
          })?.context
        : undefined;
    runInContext(traced, withCorrelationId, correlationId, async () => {
      try {
        if (path === '/graphql') return await handleGraphQL(req, res, correlationId);
        if (path === METRICS_PATH) return await serveMetrics(req, res, metrics, config, correlationId);
        if (path === '/graphql/stream') {
          if (shuttingDown)
            throw new AppError('SERVICE_UNAVAILABLE', 'Shutting down; reconnect.', { retryAfterMs: 1000 });
          // As on /graphql: graphql-sse alone takes any Content-Type that contains "application/json".
          if (req.method === 'POST' && !isJsonContentType(req.headers['content-type'])) {
            req.resume();
            return sendRequestError(res, unsupportedMediaType(), 415, correlationId);
          }
          // A distinct-connection stream (no reservation token) without a valid access token is refused with 401
          // before any stream opens, as the gateway does (graphql-sse would answer 200 and then an error event).
          if (!req.headers[STREAM_TOKEN_HEADER] && (req.method === 'POST' || req.method === 'GET')) {
            if (!(await verifyToken(req.headers.authorization))) {
              req.resume();
              throw new AppError(
                'UNAUTHENTICATED',
                'Streams need an access token. Send "Authorization: Bearer <token>".',
              );
            }
          }
          if (req.headers[STREAM_TOKEN_HEADER] && (req.headers.accept ?? '').includes('text/event-stream')) {
            reservations.add(res);
            res.once('close', () => reservations.delete(res));
          }
          res.setHeader('x-accel-buffering', 'no');
          res.setHeader('cache-control', 'no-cache, no-transform');
          return await sse(req, res);
        }
        if (path === '/healthz') return sendJson(res, 200, { status: 'ok' });
        if (path === '/readyz') {
          if (shuttingDown) return sendJson(res, 503, { status: 'unavailable' });
          try {
            await db.ping();
            return sendJson(res, 200, { status: 'ready' });
          } catch {
            return sendJson(res, 503, { status: 'unavailable' });
          }
        }
        const route = opts.routes?.[path] ?? opts.routes?.['*'];
        if (route) return await route(req, res);
        sendJson(res, 404, { error: 'not_found', message: `No route ${path}` });
      } catch (err) {
        if (err instanceof AppError) record.code = err.code;
        sendThrown(res, err, correlationId, log, path);
      }
    }).catch(() => res.destroy()); // last resort: a rejection here would be unhandled, which stops Node
  });
  server.keepAliveTimeout = 65_000;

  return {
    server,
    listen(port, host) {
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          const addr = server.address() as AddressInfo;
          const url = `http://${host}:${addr.port}`;
          log.info('subgraph listening', { subgraph: opts.name, url: `${url}/graphql` });
          resolve({
            server,
            url,
            openStreams: () => streams.size,
            async close() {
              shuttingDown = true;
              guard.close();
              for (const s of streams) s.abort();
              // Reservation streams end once their operations have ended (each sent its `complete`), and a moment
              // more for graphql-sse to write those out; a client that misses one sees its connection drop and
              // reconnects either way.
              const streamsEnded = new Promise<void>((r) => {
                const endReservations = () =>
                  setTimeout(() => {
                    for (const res of reservations) res.end();
                    r();
                  }, 100).unref();
                if (streams.size === 0) endReservations();
                else drained = endReservations;
              });
              await closeGracefully(
                server,
                config.shutdownGraceMs,
                Promise.all([streamsEnded, requests.idle()]),
              );
            },
          });
        });
      });
    },
  };
}

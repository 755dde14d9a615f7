/**
 * /graphql/stream on the gateway: graphql-sse in distinct-connections mode, and in single-connection mode (a PUT
 * reservation, one event stream, operations started and stopped by short requests: stream-reservations.ts).
 * @apollo/gateway executes no
 * subscriptions, so each one is checked here (the request as graphql-sse reads it, document limits, the API schema,
 * then the owning subgraph's own schema) and forwarded to the subgraph that owns its root field; its event stream is
 * relayed byte for byte except events carrying errors (stream-relay.ts). Closing either side closes the other;
 * shutdown completes every open stream so clients reconnect elsewhere.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  AppError,
  checkDocumentLimits,
  usesVariablePageArgs,
  isClientCode,
  maskedError,
  GATEWAY_SECRET_HEADER,
  injectTraceHeaders,
  isJsonContentType,
  Lru,
  readBody,
  withoutSuggestions,
  type AuthContext,
  type DocumentLimits,
  type Logger,
} from '@agentgraph/runtime';
import {
  type GraphQLError,
  Kind,
  NoSchemaIntrospectionCustomRule,
  getOperationAST,
  parse,
  specifiedRules,
  validate,
  type DocumentNode,
  type ExecutionResult,
  type GraphQLFormattedError,
  type GraphQLSchema,
  type SelectionSetNode,
  type FragmentDefinitionNode,
} from 'graphql';
import { resolveStreamRequest, type PersistedDocuments } from './persisted.js';
import { MuxClientStream, type ClientStreamHost, type StreamEndListener } from './stream-client.js';
import { StreamMux } from './stream-mux.js';
import { HeartbeatGroup, openUpstream, realTimers, SseRelay, type Timers } from './stream-relay.js';
import {
  DEFAULT_RESERVATION_LIMITS,
  RESERVATION_TOKEN_HEADER,
  ReservedOperation,
  Reservations,
  type Reservation,
  type ReservationLimits,
} from './stream-reservations.js';

export { realTimers, type Timers } from './stream-relay.js';
export type { StreamEndListener } from './stream-client.js';

export interface StreamOptions {
  /** The gateway's API schema (what clients may ask for); a getter because the gateway loads it at start. */
  apiSchema: () => GraphQLSchema | undefined;
  /** Root Subscription field → owning subgraph name. */
  owners: Map<string, string>;
  /** Subgraph name → its own schema, built from its SDL. */
  subgraphSchemas: Map<string, GraphQLSchema>;
  /** Subgraph name → its /graphql URL; the stream is served at the same origin under /graphql/stream. */
  subgraphUrls: Record<string, string>;
  limits: DocumentLimits & { maxBodyBytes: number };
  introspection: boolean;
  /** Production: no "Did you mean …?" in validation messages (runtime/src/schema-details.ts). */
  hideSuggestions?: boolean;
  /** Sent to the subgraph on every stream request as x-agentgraph-gateway (runtime/src/gateway-secret.ts). */
  gatewaySecret?: string;
  log: Logger;
  heartbeatMs?: number;
  timers?: Timers;
  /** Persisted operations: hash-only requests (APQ) and the trusted-documents mode apply to streams too. */
  persisted?: PersistedDocuments;
  /**
   * Carry every stream to a subgraph over one connection (graphql-sse single-connection mode; default true), or open a
   * connection per stream (distinct connections, as a plain graphql-sse client would).
   */
  multiplex?: boolean;
  /** Single-connection mode: reservations per principal, operations per reservation, unfulfilled reservation TTL. */
  reservations?: Partial<ReservationLimits>;
  /** The clock of reservation expiry (tests). */
  now?: () => number;
}

interface Subscription {
  query: string;
  variables?: Record<string, unknown>;
  operationName?: string;
}

interface StreamRequestContext {
  auth: AuthContext;
  authorization: string;
  correlationId: string;
  /** Sent on to the subgraph for its audit records (see runtime/src/origin.ts). */
  forwardedFor?: string;
  userAgent?: string;
  /**
   * Told once when a stream that `handle` opened is over (not for a request it refused): the caller's end of the
   * request (gateway.ts logs it then), without a promise pending for the stream's whole life.
   */
  onEnd?: StreamEndListener;
}

interface PreparedStream {
  error?: AppError;
  document?: DocumentNode;
  owner?: string;
  /** Variables used as first/last (the limit check must see their values). */
  dynamicLimits?: boolean;
}

type SseResponse = [string | null, { status: number; statusText: string; headers?: Record<string, string> }];

function codedResponse(err: AppError, status: number, correlationId: string): SseResponse {
  return [
    JSON.stringify({ errors: [{ message: err.message, extensions: { ...err.extensions, correlationId } }] }),
    {
      status,
      statusText: status === 400 ? 'Bad Request' : 'Error',
      headers: { 'content-type': 'application/json; charset=utf-8' },
    },
  ];
}

function rootFieldNames(
  doc: DocumentNode,
  set: SelectionSetNode,
  out: string[],
  seen = new Set<string>(),
): void {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const def of doc.definitions)
    if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def);
  for (const sel of set.selections) {
    if (sel.kind === Kind.FIELD) out.push(sel.name.value);
    else if (sel.kind === Kind.INLINE_FRAGMENT) rootFieldNames(doc, sel.selectionSet, out, seen);
    else if (!seen.has(sel.name.value)) {
      seen.add(sel.name.value);
      const frag = fragments.get(sel.name.value);
      if (frag) rootFieldNames(doc, frag.selectionSet, out, seen);
    }
  }
}

/** A relayed event's errors: codes a client may see stay as they are; anything else is masked (the subgraph logged it). */
function safeEvent(event: ExecutionResult, correlationId: string): ExecutionResult {
  if (!event.errors?.length) return event;
  const errors = event.errors.map((e) => {
    const json = (
      typeof (e as GraphQLError).toJSON === 'function' ? (e as GraphQLError).toJSON() : e
    ) as GraphQLFormattedError;
    if (isClientCode(json.extensions?.['code'])) return json;
    return maskedError(correlationId, { path: json.path }, 'Reconnect');
  });
  return { ...event, errors } as unknown as ExecutionResult;
}

/**
 * runtime's readBody with listeners instead of an async iterator, whose end-of-stream watchers stay on the request
 * (which the open stream keeps) for the stream's whole life. Same limit and error.
 */
function readSmallBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) return readBody(req, maxBytes);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= maxBytes) chunks.push(chunk);
      if (size > maxBytes) {
        done();
        req.resume();
        reject(
          new AppError(
            'PAYLOAD_TOO_LARGE',
            `The request body is over the limit of ${maxBytes} bytes. Send less per request (see capabilities.limits).`,
            { maxBodyBytes: maxBytes },
          ),
        );
      }
    };
    const onEnd = () => {
      done();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
    };
    const onError = (err: Error) => {
      done();
      reject(err);
    };
    const done = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  });
}

/** Stands for a header block already sent (see forgetSentHeader). */
const SENT_HEADER = 'HTTP/1.1 (sent)\r\n\r\n';

/**
 * Lets go of the header block Node keeps on a response once it has sent it (`_header`, some 300 bytes per idle
 * stream): after sending, Node only tests it for truth (`headersSent`, and refusing another `writeHead`/`setHeader`),
 * so a shared stand-in keeps every answer the same. Done only once the block went out (`_headerSent`).
 */
export function forgetSentHeader(res: ServerResponse): void {
  const sent = res as ServerResponse & { _header?: unknown; _headerSent?: unknown };
  if (sent._headerSent === true && typeof sent._header === 'string') sent._header = SENT_HEADER;
}

const NO_HEADERS: IncomingMessage['headers'] = Object.freeze({});
const NO_RAW_HEADERS: string[] = Object.freeze([]) as unknown as string[];

/**
 * Lets go of an open stream's request headers: Node keeps the request until its response ends, and with it every
 * header as received (`rawHeaders`, the bearer token among them) and their parsed copy (`headers`), which nothing
 * reads once the stream is open (the request's log line reads its method). Hundreds of bytes per idle stream.
 */
export function releaseHeaders(req: IncomingMessage): void {
  req.headers = NO_HEADERS;
  req.rawHeaders = NO_RAW_HEADERS;
}

interface StreamParams {
  query?: unknown;
  variables?: unknown;
  operationName?: unknown;
  extensions?: unknown;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The request's GraphQL parameters, read as graphql-sse 2.6's handler reads a distinct-connections request (same
 * refusals: 415 without a JSON POST or a GET, 400 with its message otherwise), so clients see what they saw when that
 * handler read them here; except that a POST's type must be application/json itself, not merely contain it
 * (`text/plain; charset=application/json` is what a browser may send cross-site without a preflight).
 */
function readParams(
  method: string | undefined,
  url: string,
  contentType: string | undefined,
  body: string | Record<string, unknown> | null,
): StreamParams | { status: number; message?: string } {
  const params: StreamParams = {};
  try {
    if (method === 'GET') {
      try {
        const search = new URLSearchParams(url.split('?')[1]);
        params.operationName = search.get('operationName') ?? undefined;
        params.query = search.get('query') ?? undefined;
        const variables = search.get('variables');
        if (variables) params.variables = JSON.parse(variables);
        const extensions = search.get('extensions');
        if (extensions) params.extensions = JSON.parse(extensions);
      } catch {
        throw new Error('Unparsable URL');
      }
    } else if (method === 'POST' && isJsonContentType(contentType)) {
      if (!body) throw new Error('Missing body');
      const data: unknown = typeof body === 'string' ? JSON.parse(body) : body;
      if (!isObject(data)) throw new Error('JSON body must be an object');
      params.operationName = data['operationName'];
      params.query = data['query'];
      params.variables = data['variables'];
      params.extensions = data['extensions'];
    } else {
      return { status: 415 };
    }
    if (params.query == null) throw new Error('Missing query');
    if (typeof params.query !== 'string') throw new Error('Invalid query');
    if (params.variables != null && !isObject(params.variables)) throw new Error('Invalid variables');
    if (params.extensions != null && !isObject(params.extensions)) throw new Error('Invalid extensions');
    return params;
  } catch (err) {
    return { status: 400, message: err instanceof Error ? err.message : String(err) };
  }
}

/** The reservation a single-connection request names: the graphql-sse header, or `?token=` (EventSource). */
function reservationToken(req: IncomingMessage): string | undefined {
  const header = req.headers[RESERVATION_TOKEN_HEADER];
  if (typeof header === 'string' && header) return header;
  const query = req.url?.split('?')[1];
  return query ? (new URLSearchParams(query).get('token') ?? undefined) : undefined;
}

export function createStreamHandler(opts: StreamOptions) {
  const { log, limits } = opts;
  // Upstream streams get a connection each (never the query pools'); it ends with its stream. Those not yet answered
  // are here, so close() can drop them.
  const pending = new Set<() => void>();
  // The open streams (to complete them on shutdown), which also get the heartbeats.
  const open = new HeartbeatGroup(opts.timers ?? realTimers, opts.heartbeatMs ?? 15_000);
  const prepared = new Lru<string, PreparedStream>(500);
  // Many streams per connection to a subgraph (stream-mux.ts), or one connection each (stream-relay.ts).
  const multiplex = opts.multiplex ?? true;
  const muxes = new Map<string, { mux: StreamMux; host: ClientStreamHost }>();
  const rules = opts.introspection ? specifiedRules : [...specifiedRules, NoSchemaIntrospectionCustomRule];
  let closed = false;
  // Single-connection mode: the reservations, whose event streams join `open` while connected.
  const reservations = new Reservations(
    {
      maskErrors: (data, correlationId) => maskErrors(data, correlationId),
      failureEvent: (_reason, correlationId) => failureEvent(correlationId),
      streamChanged(stream, isOpen) {
        if (isOpen) open.add(stream);
        else open.delete(stream);
      },
    },
    { ...DEFAULT_RESERVATION_LIMITS, ...opts.reservations },
    opts.now,
  );

  const prepare = (query: string, operationName: string | undefined): PreparedStream => {
    const key = `${operationName ?? ''}\n${query}`;
    let p = prepared.get(key);
    if (p) return p;
    p = prepareUncached(query, operationName);
    prepared.set(key, p);
    return p;
  };

  const prepareUncached = (query: string, operationName: string | undefined): PreparedStream => {
    const schema = opts.apiSchema();
    if (!schema)
      return {
        error: new AppError('SERVICE_UNAVAILABLE', 'The gateway is starting; retry shortly.', {
          retryAfterMs: 1000,
        }),
      };
    let document: DocumentNode;
    try {
      document = parse(query);
    } catch (err) {
      return {
        error: new AppError('GRAPHQL_PARSE_FAILED', `The query does not parse: ${(err as Error).message}`),
      };
    }
    try {
      checkDocumentLimits(document, operationName, null, limits);
    } catch (err) {
      if (err instanceof AppError) return { error: err };
      throw err;
    }
    const errors = validate(schema, document, rules);
    if (errors.length) {
      const shown = opts.hideSuggestions ? withoutSuggestions : (m: string) => m;
      return {
        error: new AppError('GRAPHQL_VALIDATION_FAILED', errors.map((e) => shown(e.message)).join(' ')),
      };
    }
    const op = getOperationAST(document, operationName);
    if (!op) {
      return {
        error: new AppError('GRAPHQL_VALIDATION_FAILED', 'Name the operation to run with "operationName".'),
      };
    }
    if (op.operation !== 'subscription') {
      return {
        error: new AppError(
          'BAD_USER_INPUT',
          `/graphql/stream serves subscriptions only; send ${op.operation === 'query' ? 'queries' : 'mutations'} to /graphql.`,
        ),
      };
    }
    const fields: string[] = [];
    rootFieldNames(document, op.selectionSet, fields);
    const owners = new Set(fields.filter((f) => f !== '__typename').map((f) => opts.owners.get(f)));
    const owner = [...owners][0];
    if (owners.size !== 1 || !owner) {
      return {
        error: new AppError(
          'GRAPHQL_VALIDATION_FAILED',
          `No single subgraph serves the subscription field(s) ${fields.join(', ')}.`,
        ),
      };
    }
    const subgraphSchema = opts.subgraphSchemas.get(owner);
    if (subgraphSchema) {
      const ownErrors = validate(subgraphSchema, document);
      if (ownErrors.length) {
        return {
          error: new AppError(
            'GRAPHQL_VALIDATION_FAILED',
            `The subscription is streamed by the ${owner} subgraph, which cannot resolve every selected field: ` +
              ownErrors.map((e) => e.message).join(' ') +
              ' Select only the fields it owns (ids of other entities) in the subscription, and fetch the other fields with a query on /graphql.',
          ),
        };
      }
    }
    return { document, owner, dynamicLimits: usesVariablePageArgs(document) };
  };

  /** The checks before anything is opened upstream: the owner and the subscription to send it, or a refusal. */
  const check = (
    params: StreamParams,
    ctx: StreamRequestContext,
  ): SseResponse | { owner: string; subscription: Subscription } => {
    const query = params.query;
    if (typeof query !== 'string' || !query) {
      return codedResponse(
        new AppError('BAD_USER_INPUT', 'Send {"query": "subscription ..."}.'),
        400,
        ctx.correlationId,
      );
    }
    const operationName = typeof params.operationName === 'string' ? params.operationName : undefined;
    const p = prepare(query, operationName);
    if (p.error)
      return codedResponse(p.error, p.error.code === 'SERVICE_UNAVAILABLE' ? 503 : 400, ctx.correlationId);
    const variables = isObject(params.variables) ? params.variables : undefined;
    if (p.dynamicLimits) {
      try {
        checkDocumentLimits(p.document!, operationName, variables ?? {}, limits);
      } catch (err) {
        if (err instanceof AppError) return codedResponse(err, 400, ctx.correlationId);
        throw err;
      }
    }
    opts.persisted?.rememberFromExtensions(params.extensions as Record<string, unknown> | undefined, query);
    // What graphql-sse's client sends: the subscription as given (undefined members left out).
    return { owner: p.owner!, subscription: { query, variables, operationName } };
  };

  /** The subgraph's refusal (status and coded errors), as the client gets it. */
  const refusal = (status: number, text: string, correlationId: string): SseResponse => {
    let errors: Array<{ message?: string; extensions?: Record<string, unknown> }> | undefined;
    try {
      const body = JSON.parse(text) as { errors?: typeof errors };
      errors = Array.isArray(body.errors) ? body.errors : undefined;
    } catch {
      errors = undefined;
    }
    const fallbackCode =
      status === 401
        ? 'UNAUTHENTICATED'
        : status === 403
          ? 'FORBIDDEN'
          : status < 500
            ? 'BAD_USER_INPUT'
            : 'SERVICE_UNAVAILABLE';
    const coded = (errors ?? [{ message: `The stream source answered HTTP ${status}.` }]).map((e) => ({
      message: e.message ?? 'The stream was refused.',
      extensions: { ...(e.extensions ?? {}), code: e.extensions?.['code'] ?? fallbackCode, correlationId },
    }));
    return [
      JSON.stringify({ errors: coded }),
      {
        status: status >= 500 ? 503 : status,
        statusText: 'Error',
        headers: { 'content-type': 'application/json; charset=utf-8' },
      },
    ];
  };

  const unavailable = (correlationId: string): SseResponse =>
    codedResponse(
      new AppError('SERVICE_UNAVAILABLE', 'The stream source is unavailable. Retry shortly.', {
        retryAfterMs: 1000,
      }),
      503,
      correlationId,
    );

  const respond = (res: ServerResponse, [body, init]: SseResponse, correlationId: string): void => {
    if (!res.writable) return;
    res.writeHead(init.status, { ...init.headers, 'x-correlation-id': correlationId }).end(body ?? undefined);
  };

  /**
   * Serves one /graphql/stream request (the caller authenticated it). Resolves once the client was answered: `true`
   * when a stream opened (`ctx.onEnd` is called when it is over), `false` when the request was refused. Every answer
   * carries `x-correlation-id` (the caller sets no header before: a header set early stays on the response as a map).
   */
  async function handle(
    req: IncomingMessage,
    res: ServerResponse,
    ctx: StreamRequestContext,
  ): Promise<boolean> {
    if (req.method === 'PUT') {
      reserve(res, ctx);
      return false;
    }
    const token = reservationToken(req);
    if (token !== undefined) return serveReserved(req, res, ctx, token);
    const accept = (req.headers.accept ?? '').toLowerCase();
    if (!accept.includes('text/event-stream')) {
      refuse(
        res,
        406,
        new AppError(
          'BAD_USER_INPUT',
          'Streams need "Accept: text/event-stream" (graphql-sse, distinct connections mode), or a reservation ' +
            '(PUT, then its token in x-graphql-event-stream-token: single connection mode).',
        ),
        ctx.correlationId,
      );
      return false;
    }
    const target = await readSubscription(req, res, ctx);
    if (!target) return false;
    const { owner, base, subscription } = target;
    const headers = upstreamHeaders(ctx);
    const opened = multiplex
      ? await serveMultiplexed(res, ctx, owner, base, headers, subscription)
      : await serveDistinct(res, ctx, owner, base, headers, subscription);
    if (opened) releaseHeaders(req);
    return opened;
  }

  /**
   * The subscription a request asks for, checked (body, persisted document, parameters, document, owner), with the
   * owning subgraph's origin; or `undefined` when the request was refused (answered here).
   */
  async function readSubscription(
    req: IncomingMessage,
    res: ServerResponse,
    ctx: StreamRequestContext,
  ): Promise<{ owner: string; base: string; subscription: Subscription; params: StreamParams } | undefined> {
    let text: string | null = null;
    if (req.method === 'POST') text = (await readSmallBody(req, limits.maxBodyBytes)).toString('utf8');
    // The document first (a hash alone, trusted documents): a refusal is thrown before anything is opened.
    const { body, url } = opts.persisted
      ? resolveStreamRequest(opts.persisted, req.method, text, req.url ?? '/')
      : { body: text, url: req.url ?? '/' };
    const params = readParams(req.method, url, req.headers['content-type'], body);
    if ('status' in params && typeof params.status === 'number') {
      const message = params.message ?? `The stream request was refused (HTTP ${params.status}).`;
      refuse(res, params.status, new AppError('BAD_USER_INPUT', message), ctx.correlationId);
      return undefined;
    }
    const checked = check(params as StreamParams, ctx);
    if (Array.isArray(checked)) {
      respond(res, checked, ctx.correlationId);
      return undefined;
    }
    const base = opts.subgraphUrls[checked.owner];
    if (!base) {
      refuse(
        res,
        503,
        new AppError('SERVICE_UNAVAILABLE', 'The stream source is not configured.'),
        ctx.correlationId,
      );
      return undefined;
    }
    return { ...checked, base, params: params as StreamParams };
  }

  /** What the subgraph gets with the caller's stream: its token, the gateway secret, trace and audit headers. */
  const upstreamHeaders = (ctx: StreamRequestContext): Record<string, string> => {
    const headers: Record<string, string> = {
      authorization: ctx.authorization,
      ...(opts.gatewaySecret ? { [GATEWAY_SECRET_HEADER]: opts.gatewaySecret } : {}),
      'x-correlation-id': ctx.correlationId,
      ...(ctx.forwardedFor ? { 'x-forwarded-for': ctx.forwardedFor } : {}),
      ...(ctx.userAgent ? { 'user-agent': ctx.userAgent } : {}),
    };
    // The stream's request span goes on in the subgraph (which trusts it with the gateway secret only).
    injectTraceHeaders(headers);
    return headers;
  };

  const refuse = (res: ServerResponse, status: number, err: AppError, correlationId: string): void =>
    respond(res, codedResponse(err, status, correlationId), correlationId);

  /** Single-connection mode, PUT: a reservation for the caller, answered 201 with its token. */
  const reserve = (res: ServerResponse, ctx: StreamRequestContext): void => {
    if (closed) {
      respond(res, shuttingDown(ctx.correlationId), ctx.correlationId);
      return;
    }
    const made = reservations.reserve(ctx.auth);
    if ('refused' in made) {
      const max = reservations.limits.perPrincipal;
      refuse(
        res,
        429,
        new AppError(
          'RATE_LIMITED',
          `You hold ${max} stream reservations already (the limit). Carry more subscriptions on one reservation, or close an event stream first.`,
          { retryAfterMs: 1000 },
        ),
        ctx.correlationId,
      );
      return;
    }
    if (!res.writable) return;
    res
      .writeHead(201, 'Created', {
        'content-type': 'text/plain; charset=utf-8',
        'cache-control': 'no-store',
        'x-correlation-id': ctx.correlationId,
      })
      .end(made.reservation.token);
  };

  /**
   * Single-connection mode, a request naming a reservation: its event stream (GET with `Accept: text/event-stream`),
   * an operation to start (→ 202), or `DELETE ?operationId=` to stop one (→ 200). `true` when the event stream opened.
   */
  async function serveReserved(
    req: IncomingMessage,
    res: ServerResponse,
    ctx: StreamRequestContext,
    token: string,
  ): Promise<boolean> {
    const reservation = reservations.find(token, ctx.auth);
    if (!reservation) {
      refuse(
        res,
        404,
        new AppError(
          'NOT_FOUND',
          'No stream reservation with this token for this caller (it expired, its event stream closed, or it was made with another access token). Make one with PUT /graphql/stream.',
        ),
        ctx.correlationId,
      );
      return false;
    }
    const search = new URLSearchParams((req.url ?? '').split('?')[1] ?? '');
    if (req.method === 'DELETE') {
      const operationId = search.get('operationId');
      if (!operationId) {
        refuse(
          res,
          400,
          new AppError(
            'BAD_USER_INPUT',
            'Name the operation to stop: DELETE /graphql/stream?operationId=<id>.',
          ),
          ctx.correlationId,
        );
        return false;
      }
      reservation.operations.get(operationId)?.end(null);
      if (res.writable) res.writeHead(200, { 'x-correlation-id': ctx.correlationId }).end();
      return false;
    }
    const accept = (req.headers.accept ?? '').toLowerCase();
    if (req.method === 'GET' && accept.includes('text/event-stream') && !search.has('query'))
      return connectReserved(req, res, ctx, reservation);
    await startReserved(req, res, ctx, reservation);
    return false;
  }

  /** The reservation's one event stream. */
  const connectReserved = (
    req: IncomingMessage,
    res: ServerResponse,
    ctx: StreamRequestContext,
    reservation: Reservation,
  ): boolean => {
    if (closed) {
      respond(res, shuttingDown(ctx.correlationId), ctx.correlationId);
      return false;
    }
    if (reservation.connected) {
      refuse(
        res,
        409,
        new AppError(
          'BAD_USER_INPUT',
          "This reservation's event stream is open already; a reservation has one event stream at a time.",
        ),
        ctx.correlationId,
      );
      return false;
    }
    if (res.destroyed) return false;
    answerStream(res, ctx.correlationId);
    reservation.connect(res, ctx.onEnd);
    releaseHeaders(req);
    return true;
  };

  /** One subscription on a reservation: checked like any stream, started upstream, answered 202. */
  async function startReserved(
    req: IncomingMessage,
    res: ServerResponse,
    ctx: StreamRequestContext,
    reservation: Reservation,
  ): Promise<void> {
    const target = await readSubscription(req, res, ctx);
    if (!target) return;
    const operationId = (target.params.extensions as Record<string, unknown> | undefined)?.['operationId'];
    if (typeof operationId !== 'string' || operationId.length === 0 || operationId.length > 128) {
      refuse(
        res,
        400,
        new AppError(
          'BAD_USER_INPUT',
          'An operation on a reservation needs "extensions": {"operationId": "<1 to 128 characters>"}; its events carry that id.',
        ),
        ctx.correlationId,
      );
      return;
    }
    if (reservation.operations.has(operationId)) {
      refuse(
        res,
        409,
        new AppError(
          'BAD_USER_INPUT',
          `An operation with id "${operationId}" is running on this reservation; use a new id.`,
        ),
        ctx.correlationId,
      );
      return;
    }
    if (reservation.operations.size >= reservations.limits.operations) {
      refuse(
        res,
        429,
        new AppError(
          'RATE_LIMITED',
          `This reservation runs ${reservations.limits.operations} operations already (the limit). Stop one, or make another reservation.`,
          { retryAfterMs: 1000 },
        ),
        ctx.correlationId,
      );
      return;
    }
    const op = new ReservedOperation(operationId, reservation, ctx.correlationId);
    reservation.operations.set(operationId, op);
    const { mux } = muxFor(target.owner, target.base);
    const answer = await mux.start(upstreamHeaders(ctx), target.subscription, op);
    if (answer.kind !== 'accepted') {
      reservation.forget(op);
      if (answer.kind === 'unreachable') {
        log.warn('stream source unreachable', { error: answer.error.message });
        respond(
          res,
          closed ? shuttingDown(ctx.correlationId) : unavailable(ctx.correlationId),
          ctx.correlationId,
        );
      } else respond(res, refusal(answer.status, answer.body, ctx.correlationId), ctx.correlationId);
      return;
    }
    op.upstream = mux;
    op.upstreamId = answer.id;
    // The event stream closed (or the gateway began closing) while the subgraph answered: stop it there.
    if (reservation.isClosed || closed) op.drop();
    if (res.writable) res.writeHead(202, 'Accepted', { 'x-correlation-id': ctx.correlationId }).end();
  }

  /**
   * Answers 200 with the SSE headers in one `writeHead` (name, value, ... : the response then keeps only the header
   * text, no header map).
   */
  const answerStream = (res: ServerResponse, correlationId: string): void => {
    res.writeHead(200, 'OK', [
      'connection',
      'keep-alive',
      'cache-control',
      'no-cache, no-transform',
      'content-encoding',
      'none',
      'content-type',
      'text/event-stream; charset=utf-8',
      'x-accel-buffering',
      'no',
      'x-correlation-id',
      correlationId,
    ]);
    res.flushHeaders();
    forgetSentHeader(res);
  };

  const shuttingDown = (correlationId: string): SseResponse =>
    codedResponse(
      new AppError('SERVICE_UNAVAILABLE', 'Shutting down; reconnect.', { retryAfterMs: 1000 }),
      503,
      correlationId,
    );

  /** A `next` event's data with its errors masked for the client (`safeEvent`). */
  const maskErrors = (data: string, correlationId: string): string => {
    let event: ExecutionResult;
    try {
      event = JSON.parse(data) as ExecutionResult;
    } catch {
      event = { errors: [{ message: 'unparsable event' } as unknown as GraphQLError] };
    }
    return JSON.stringify(safeEvent(event, correlationId));
  };

  /** The last `next` event's data when the source went away: a code and when to retry. */
  const failureEvent = (correlationId: string): string =>
    JSON.stringify({
      errors: [
        {
          message: 'The stream source went away. Reconnect to resume (pass the last sequence you handled).',
          extensions: { code: 'SERVICE_UNAVAILABLE', retryAfterMs: 1000, correlationId },
        },
      ],
    });

  /** One shared connection per owner, and what its client streams share (no closures per stream). */
  const muxFor = (owner: string, base: string): { mux: StreamMux; host: ClientStreamHost } => {
    let entry = muxes.get(owner);
    if (!entry) {
      const mux = new StreamMux(base, log, owner);
      entry = {
        mux,
        host: {
          maskErrors,
          // The mux logs the broken connection once for all its streams.
          failureEvent: (_reason, correlationId) => failureEvent(correlationId),
          ended(client) {
            open.delete(client);
            if (client.id !== undefined) mux.cancel(client.id);
          },
        },
      };
      muxes.set(owner, entry);
    }
    return entry;
  };

  /**
   * One stream as an operation on the gateway's shared connection to the owner (stream-mux.ts). Once open, the stream
   * is its `MuxClientStream` alone: no promise, frame or closure of this function stays behind.
   */
  async function serveMultiplexed(
    res: ServerResponse,
    ctx: StreamRequestContext,
    owner: string,
    base: string,
    headers: Record<string, string>,
    subscription: Subscription,
  ): Promise<boolean> {
    const { mux, host } = muxFor(owner, base);
    const client = new MuxClientStream(res, ctx.correlationId, host);
    const answer = await mux.start(headers, subscription, client);
    if (answer.kind === 'unreachable') {
      if (!res.destroyed) {
        log.warn('stream source unreachable', { error: answer.error.message });
        respond(
          res,
          closed ? shuttingDown(ctx.correlationId) : unavailable(ctx.correlationId),
          ctx.correlationId,
        );
      }
      return false;
    }
    if (answer.kind === 'refused') {
      respond(res, refusal(answer.status, answer.body, ctx.correlationId), ctx.correlationId);
      return false;
    }
    client.id = answer.id;
    if (closed || res.destroyed) {
      mux.cancel(answer.id);
      if (closed) respond(res, shuttingDown(ctx.correlationId), ctx.correlationId);
      return false;
    }
    answerStream(res, ctx.correlationId);
    open.add(client);
    client.opened(ctx.onEnd);
    return true;
  }

  /** One stream on a connection of its own to the owner (stream-relay.ts). */
  async function serveDistinct(
    res: ServerResponse,
    ctx: StreamRequestContext,
    owner: string,
    base: string,
    headers: Record<string, string>,
    subscription: Subscription,
  ): Promise<boolean> {
    const upstream = openUpstream(new URL('/graphql/stream', base), headers, JSON.stringify(subscription));
    // The client may leave before the subgraph answers.
    res.once('close', upstream.abort);
    pending.add(upstream.abort);
    const answer = await upstream.answer;
    pending.delete(upstream.abort);
    res.off('close', upstream.abort);
    if (answer.kind === 'unreachable') {
      if (!res.destroyed) {
        log.warn('stream source unreachable', { error: answer.error.message });
        respond(res, unavailable(ctx.correlationId), ctx.correlationId);
      }
      return false;
    }
    if (answer.kind === 'refused') {
      respond(res, refusal(answer.status, answer.body, ctx.correlationId), ctx.correlationId);
      return false;
    }
    if (closed || res.destroyed) {
      answer.request.destroy();
      if (closed) respond(res, shuttingDown(ctx.correlationId), ctx.correlationId);
      return false;
    }
    answerStream(res, ctx.correlationId);
    const { correlationId, onEnd } = ctx;
    const relay: SseRelay = new SseRelay(res, answer.request, answer.response, {
      maskErrors: (data) => maskErrors(data, correlationId),
      onFailure(reason) {
        log.warn('upstream stream failed', { subgraph: owner, error: reason });
        return failureEvent(correlationId);
      },
      onEnd(reason) {
        open.delete(relay);
        onEnd?.streamEnded(reason);
      },
    });
    open.add(relay);
    return true;
  }

  return {
    handle,
    get openStreams(): number {
      return open.size;
    },
    /** Completes every open stream (each client gets `complete` and its connection ends). */
    completeAll(): void {
      for (const s of open.list()) s.finish();
      reservations.finishAll();
    },
    /** Completes every stream and closes the upstream connections. */
    async close(): Promise<void> {
      closed = true;
      // The shared connections first: the subgraphs end their operations, and no cancel is sent for each stream.
      for (const { mux } of muxes.values()) mux.close();
      for (const s of open.list()) s.finish();
      reservations.finishAll();
      for (const abort of [...pending]) abort();
    },
  };
}

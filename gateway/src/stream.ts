/**
 * /graphql/stream on the gateway: graphql-sse in distinct-connections mode. @apollo/gateway executes no
 * subscriptions, so each one is checked here (document limits, the API schema, then the owning subgraph's own schema)
 * and forwarded to the subgraph that owns its root field with the graphql-sse client, relaying every event. Closing
 * either side closes the other; shutdown completes every open stream so clients reconnect elsewhere.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  AppError,
  checkDocumentLimits,
  errorTable,
  Lru,
  readBody,
  type AuthContext,
  type DocumentLimits,
  type Logger,
} from '@agentgraph/runtime';
import {
  GraphQLError,
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
import { createHandler, type OperationResult, type RequestParams } from 'graphql-sse';
import { createClient, NetworkError } from 'graphql-sse';
import { Agent, fetch as undiciFetch } from 'undici';
import { resolveStreamRequest, type PersistedDocuments } from './persisted.js';

export interface Timers {
  setInterval(fn: () => void, ms: number): unknown;
  clearInterval(handle: unknown): void;
}

export const realTimers: Timers = {
  setInterval: (fn, ms) => setInterval(fn, ms),
  clearInterval: (h) => clearInterval(h as NodeJS.Timeout),
};

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
  log: Logger;
  heartbeatMs?: number;
  timers?: Timers;
  /** Persisted operations: hash-only requests (APQ) and the trusted-documents mode apply to streams too. */
  persisted?: PersistedDocuments;
}

interface StreamRequestContext {
  res: ServerResponse;
  auth: AuthContext;
  authorization: string;
  correlationId: string;
  /** Sent on to the subgraph for its audit records (see runtime/src/origin.ts). */
  forwardedFor?: string;
  userAgent?: string;
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

function usesVariablePageArgs(doc: DocumentNode): boolean {
  let found = false;
  const walk = (set: SelectionSetNode): void => {
    for (const sel of set.selections) {
      if (sel.kind === Kind.FIELD) {
        for (const a of sel.arguments ?? []) {
          if ((a.name.value === 'first' || a.name.value === 'last') && a.value.kind === Kind.VARIABLE)
            found = true;
        }
      }
      if ('selectionSet' in sel && sel.selectionSet) walk(sel.selectionSet);
    }
  };
  for (const def of doc.definitions) {
    if (def.kind === Kind.OPERATION_DEFINITION || def.kind === Kind.FRAGMENT_DEFINITION)
      walk(def.selectionSet);
  }
  return found;
}

/** Codes a client may see in a relayed event as they are; anything else is masked (the subgraph logged it). */
const SAFE_CODES = new Set(errorTable.map((e) => e.code).filter((c) => c !== 'INTERNAL_SERVER_ERROR'));

function safeEvent(event: ExecutionResult, correlationId: string): ExecutionResult {
  if (!event.errors?.length) return event;
  const errors = event.errors.map((e) => {
    const json = (
      typeof (e as GraphQLError).toJSON === 'function' ? (e as GraphQLError).toJSON() : e
    ) as GraphQLFormattedError;
    const code = json.extensions?.['code'];
    if (typeof code === 'string' && SAFE_CODES.has(code)) return json;
    return {
      message: `Internal server error in the stream. Reconnect; if it persists, report correlation id ${correlationId}.`,
      ...(json.path ? { path: json.path } : {}),
      extensions: { code: 'INTERNAL_SERVER_ERROR', correlationId },
    };
  });
  return { ...event, errors } as unknown as ExecutionResult;
}

interface OpenStream {
  finish(): void;
}

export function createStreamHandler(opts: StreamOptions) {
  const { log, limits } = opts;
  // Upstream streams get their own dispatcher: long-lived, closed with the gateway, never mixed with the query pools.
  const streamAgent = new Agent({ bodyTimeout: 0, keepAliveTimeout: 1_000 });
  const streamFetch = ((input: string, init?: RequestInit) =>
    undiciFetch(input, { ...(init as object), dispatcher: streamAgent } as Parameters<
      typeof undiciFetch
    >[1])) as unknown as typeof fetch;
  const timers = opts.timers ?? realTimers;
  const heartbeatMs = opts.heartbeatMs ?? 15_000;
  const prepared = new Lru<string, PreparedStream>(500);
  const open = new Set<OpenStream>();
  const rules = opts.introspection ? specifiedRules : [...specifiedRules, NoSchemaIntrospectionCustomRule];

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
      return { error: new AppError('GRAPHQL_VALIDATION_FAILED', errors.map((e) => e.message).join(' ')) };
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

  /** Connects to the owner's stream; resolves once it answered 200 (an async generator of its events) or with its error. */
  const forward = async (
    owner: string,
    params: RequestParams,
    ctx: StreamRequestContext,
  ): Promise<SseResponse | AsyncGenerator<ExecutionResult, void, unknown>> => {
    const base = opts.subgraphUrls[owner];
    if (!base)
      return codedResponse(
        new AppError('SERVICE_UNAVAILABLE', 'The stream source is not configured.'),
        503,
        ctx.correlationId,
      );
    const client = createClient({
      url: new URL('/graphql/stream', base).href,
      fetchFn: streamFetch,
      singleConnection: false,
      retryAttempts: 0,
      headers: {
        authorization: ctx.authorization,
        'x-correlation-id': ctx.correlationId,
        ...(ctx.forwardedFor ? { 'x-forwarded-for': ctx.forwardedFor } : {}),
        ...(ctx.userAgent ? { 'user-agent': ctx.userAgent } : {}),
      },
    });
    const queue: ExecutionResult[] = [];
    let done = false;
    let failed: unknown = null;
    let wake: (() => void) | null = null;
    const poke = () => {
      const w = wake;
      wake = null;
      w?.();
    };
    let settle!: (v: 'connected' | { error: unknown }) => void;
    const connected = new Promise<'connected' | { error: unknown }>((r) => (settle = r));
    const dispose = client.subscribe(
      {
        query: params.query,
        variables: params.variables ?? undefined,
        operationName: params.operationName ?? undefined,
      },
      {
        next: (value) => {
          queue.push(value as ExecutionResult);
          poke();
        },
        error: (error) => {
          failed = error;
          done = true;
          settle({ error });
          poke();
        },
        complete: () => {
          done = true;
          settle('connected');
          poke();
        },
      },
      { connected: () => settle('connected') },
    );
    const stop = () => {
      if (!done) done = true;
      dispose();
      client.dispose();
      open.delete(entry);
      poke();
    };
    const entry: OpenStream = { finish: stop };
    const first = await connected;
    if (first !== 'connected') {
      stop();
      return upstreamError(first.error, ctx.correlationId);
    }
    open.add(entry);
    let reportedFailure = false;
    const iterator: AsyncGenerator<ExecutionResult, void, unknown> = {
      async next() {
        for (;;) {
          if (queue.length) return { value: safeEvent(queue.shift()!, ctx.correlationId), done: false };
          if (done) {
            if (failed && !reportedFailure) {
              reportedFailure = true;
              log.warn('upstream stream failed', {
                subgraph: owner,
                error: failed instanceof Error ? failed.message : String(failed),
              });
              return {
                value: {
                  errors: [
                    new GraphQLError(
                      'The stream source went away. Reconnect to resume (pass the last sequence you handled).',
                      {
                        extensions: {
                          code: 'SERVICE_UNAVAILABLE',
                          retryAfterMs: 1000,
                          correlationId: ctx.correlationId,
                        },
                      },
                    ),
                  ],
                },
                done: false,
              };
            }
            stop();
            return { value: undefined, done: true };
          }
          await new Promise<void>((r) => (wake = r));
        }
      },
      async return() {
        stop();
        return { value: undefined, done: true };
      },
      async throw() {
        stop();
        return { value: undefined, done: true };
      },
      [Symbol.asyncIterator]() {
        return this;
      },
    } as AsyncGenerator<ExecutionResult, void, unknown>;
    return iterator;
  };

  const upstreamError = async (error: unknown, correlationId: string): Promise<SseResponse> => {
    if (error instanceof NetworkError && error.response) {
      const response = error.response as Response;
      const status = response.status;
      let errors: Array<{ message?: string; extensions?: Record<string, unknown> }> | undefined;
      try {
        const body = (await response.json()) as { errors?: typeof errors };
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
    }
    log.warn('stream source unreachable', { error: error instanceof Error ? error.message : String(error) });
    return codedResponse(
      new AppError('SERVICE_UNAVAILABLE', 'The stream source is unavailable. Retry shortly.', {
        retryAfterMs: 1000,
      }),
      503,
      correlationId,
    );
  };

  const sse = createHandler<IncomingMessage, StreamRequestContext>({
    // Distinct connections only: no stream tokens, so the single-connection routes (PUT/DELETE) answer 404.
    authenticate: () => undefined as unknown as string,
    onSubscribe: async (req, params): Promise<SseResponse | OperationResult | void> => {
      const ctx = req.context;
      const query = params.query;
      if (typeof query !== 'string' || !query) {
        return codedResponse(
          new AppError('BAD_USER_INPUT', 'Send {"query": "subscription ..."}.'),
          400,
          ctx.correlationId,
        );
      }
      const operationName = params.operationName ?? undefined;
      const p = prepare(query, operationName);
      if (p.error)
        return codedResponse(p.error, p.error.code === 'SERVICE_UNAVAILABLE' ? 503 : 400, ctx.correlationId);
      if (p.dynamicLimits) {
        try {
          checkDocumentLimits(p.document!, operationName, params.variables, limits);
        } catch (err) {
          if (err instanceof AppError) return codedResponse(err, 400, ctx.correlationId);
          throw err;
        }
      }
      opts.persisted?.rememberFromExtensions(params.extensions, query);
      return forward(p.owner!, params, ctx);
    },
  });

  /** Serves one /graphql/stream request (the caller authenticated it). Resolves when the stream ends. */
  async function handle(
    req: IncomingMessage,
    res: ServerResponse,
    ctx: Omit<StreamRequestContext, 'res'>,
  ): Promise<void> {
    const accept = (req.headers.accept ?? '').toLowerCase();
    if (!accept.includes('text/event-stream')) {
      const [body, init] = codedResponse(
        new AppError(
          'BAD_USER_INPUT',
          'Streams need "Accept: text/event-stream" (graphql-sse, distinct connections mode).',
        ),
        406,
        ctx.correlationId,
      );
      res.writeHead(init.status, init.headers).end(body);
      return;
    }
    let text: string | null = null;
    if (req.method === 'POST') text = (await readBody(req, limits.maxBodyBytes)).toString('utf8');
    // The document first (a hash alone, trusted documents): a refusal is thrown before graphql-sse runs anything.
    const { body, url } = opts.persisted
      ? resolveStreamRequest(opts.persisted, req.method, text, req.url ?? '/')
      : { body: text, url: req.url ?? '/' };
    const [out, init] = await sse({
      method: req.method ?? 'GET',
      url,
      headers: {
        get(key: string) {
          if (key === 'accept') return 'text/event-stream';
          const v = req.headers[key];
          return Array.isArray(v) ? v.join('\n') : v;
        },
      },
      body,
      raw: req,
      context: { ...ctx, res },
    });
    if (!out || typeof out === 'string') {
      // graphql-sse's own refusals (bad JSON, wrong media type, ...) have no code: give them one.
      let text = out;
      if (init.status >= 400) {
        let message = `The stream request was refused (HTTP ${init.status}).`;
        type Refusal = { errors?: Array<{ message?: string; extensions?: { code?: string } }> };
        let parsed: Refusal | null = null;
        try {
          parsed = text ? (JSON.parse(text) as Refusal) : null;
        } catch {
          parsed = null;
        }
        if (parsed?.errors?.every((e) => e.extensions?.code)) {
          text = JSON.stringify(parsed);
        } else {
          message = parsed?.errors?.[0]?.message ?? message;
          text = JSON.stringify({
            errors: [
              {
                message,
                extensions: {
                  code: init.status >= 500 ? 'INTERNAL_SERVER_ERROR' : 'BAD_USER_INPUT',
                  correlationId: ctx.correlationId,
                },
              },
            ],
          });
        }
        res
          .writeHead(init.status, { ...init.headers, 'content-type': 'application/json; charset=utf-8' })
          .end(text);
        return;
      }
      res.writeHead(init.status, init.headers).end(text ?? undefined);
      return;
    }
    res.writeHead(init.status, {
      ...init.headers,
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      'x-accel-buffering': 'no',
      connection: 'keep-alive',
    });
    res.flushHeaders();
    const heartbeat = timers.setInterval(() => {
      if (res.writable) res.write(':\n\n');
    }, heartbeatMs);
    const onClose = () => void out.return(undefined);
    res.once('close', onClose);
    try {
      for await (const chunk of out) {
        if (!res.writable) break;
        const ok = res.write(chunk);
        if (!ok) {
          await new Promise<void>((r) => {
            res.once('drain', r);
            res.once('close', r);
          });
        }
      }
    } finally {
      timers.clearInterval(heartbeat);
      res.off('close', onClose);
      if (!res.writableEnded) res.end();
    }
  }

  return {
    handle,
    get openStreams(): number {
      return open.size;
    },
    /** Completes every open stream (each client gets `complete` and its connection ends). */
    completeAll(): void {
      for (const s of [...open]) s.finish();
    },
    /** Completes every stream and closes the upstream connections. */
    async close(): Promise<void> {
      for (const s of [...open]) s.finish();
      await streamAgent.destroy();
    },
  };
}

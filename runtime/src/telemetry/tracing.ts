/**
 * OpenTelemetry traces (off by default). `startTracing` registers a tracer provider when the environment asks for an
 * exporter (`OTEL_TRACES_EXPORTER=otlp`, the endpoint from `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or
 * `OTEL_EXPORTER_OTLP_ENDPOINT`), or when a test hands it one. Until then every helper here is a flag check: the
 * servers create no span, inject no header and wrap no database (no cost when off).
 *
 * The spans are made by hand at the few places that matter (the gateway's request and its fetch to each subgraph,
 * the subgraph's request, each database statement, stream lifetimes); @apollo/gateway adds its own (`gateway.request`,
 * `gateway.plan`, `gateway.execute`, `gateway.fetch`) through the same global provider.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Link,
  type Span,
} from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import {
  defaultResource,
  detectResources,
  envDetector,
  resourceFromAttributes,
} from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  ConsoleSpanExporter,
  NodeTracerProvider,
  SimpleSpanProcessor,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';

/** Whether a provider started here is registered: every helper checks this first. */
let enabled = false;

export function tracingEnabled(): boolean {
  return enabled;
}

export interface TracingOptions {
  /** `service.name` unless `OTEL_SERVICE_NAME` says otherwise (gateway, identity, memory, …). */
  serviceName: string;
  /** Where the settings come from (default process.env). */
  env?: Readonly<Record<string, string | undefined>>;
  /** Spans go to this exporter as each ends, whatever the environment says (tests: InMemorySpanExporter). */
  exporter?: SpanExporter;
}

export interface Tracing {
  readonly enabled: boolean;
  /** The exporters in use (`otlp`, `console`, or `custom` for one passed in). */
  readonly exporters: readonly string[];
  /** Where OTLP spans are sent, when they are. */
  readonly endpoint?: string;
  /** Sends the spans still buffered. */
  flush(): Promise<void>;
  /** Flushes, then unregisters the provider: tracing is off again. */
  shutdown(): Promise<void>;
}

const OFF: Tracing = {
  enabled: false,
  exporters: [],
  flush: async () => undefined,
  shutdown: async () => undefined,
};

/** The OTLP/HTTP traces URL: the signal's own endpoint as given, else the base endpoint + `/v1/traces`. */
export function otlpTracesEndpoint(env: Readonly<Record<string, string | undefined>>): string {
  const own = env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']?.trim();
  if (own) return own;
  const base = env['OTEL_EXPORTER_OTLP_ENDPOINT']?.trim() || 'http://localhost:4318';
  return `${base.replace(/\/+$/, '')}/v1/traces`;
}

/**
 * Starts tracing for this process when the environment (or the caller) asks for it; one provider per process (the
 * all-in-one platform shares it between the gateway and the subgraphs, which name their spans' tracer).
 */
export function startTracing(opts: TracingOptions): Tracing {
  const env = opts.env ?? process.env;
  if (enabled) throw new Error('Tracing is already started in this process.');
  const processors: SpanProcessor[] = [];
  const exporters: string[] = [];
  let endpoint: string | undefined;
  if (opts.exporter) {
    processors.push(new SimpleSpanProcessor(opts.exporter));
    exporters.push('custom');
  } else {
    if (env['OTEL_SDK_DISABLED']?.trim().toLowerCase() === 'true') return OFF;
    // Off by default (the OpenTelemetry default would be otlp): a process sends nothing it was not told to.
    const kinds = (env['OTEL_TRACES_EXPORTER'] ?? 'none')
      .split(',')
      .map((k) => k.trim().toLowerCase())
      .filter((k) => k && k !== 'none');
    for (const kind of new Set(kinds)) {
      if (kind === 'otlp') {
        endpoint = otlpTracesEndpoint(env);
        processors.push(new BatchSpanProcessor(new OTLPTraceExporter({ url: endpoint })));
      } else if (kind === 'console') {
        processors.push(new SimpleSpanProcessor(new ConsoleSpanExporter()));
      } else {
        throw new Error(`OTEL_TRACES_EXPORTER: "${kind}" is not supported here (otlp, console or none).`);
      }
      exporters.push(kind);
    }
    if (processors.length === 0) return OFF;
  }
  const provider = new NodeTracerProvider({
    // The SDK's own attributes, then OTEL_RESOURCE_ATTRIBUTES, then service.name (OTEL_SERVICE_NAME or the service's).
    resource: defaultResource()
      .merge(detectResources({ detectors: [envDetector] }))
      .merge(
        resourceFromAttributes({ [ATTR_SERVICE_NAME]: env['OTEL_SERVICE_NAME']?.trim() || opts.serviceName }),
      ),
    spanProcessors: processors,
  });
  // The global tracer provider, the AsyncLocalStorage context manager and the W3C trace-context propagator.
  provider.register();
  enabled = true;
  return {
    enabled: true,
    exporters,
    endpoint,
    flush: () => provider.forceFlush(),
    async shutdown() {
      enabled = false;
      try {
        await provider.shutdown();
      } finally {
        trace.disable();
        context.disable();
        propagation.disable();
      }
    },
  };
}

/** Header getter for `propagation.extract` over Node's lower-cased header object. */
const headerGetter = {
  keys: (carrier: Record<string, string | string[] | undefined>) => Object.keys(carrier),
  get: (carrier: Record<string, string | string[] | undefined>, key: string) => carrier[key],
};

/**
 * The remote span context a request's `traceparent`/`tracestate` name, if well-formed (only when tracing is on).
 * Baggage is never read from a request.
 */
export function remoteContextOf(headers: Record<string, string | string[] | undefined>): Context | undefined {
  if (!enabled || headers['traceparent'] === undefined) return undefined;
  const extracted = propagation.extract(ROOT_CONTEXT, headers, headerGetter);
  const remote = trace.getSpanContext(extracted);
  return remote && trace.isSpanContextValid(remote) ? trace.setSpanContext(ROOT_CONTEXT, remote) : undefined;
}

/** Writes `traceparent` (and `tracestate`) of the active span into outgoing request headers; nothing when off. */
export function injectTraceHeaders(headers: Record<string, string>): void {
  if (!enabled) return;
  const active = trace.getSpan(context.active());
  if (!active) return;
  propagation.inject(trace.setSpan(ROOT_CONTEXT, active), headers);
}

/** `trace_id` and `span_id` of the active span, for log lines (undefined when off or outside a span). */
export function activeTraceIds(): { trace_id: string; span_id: string } | undefined {
  if (!enabled) return undefined;
  const span = trace.getActiveSpan();
  if (!span) return undefined;
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}

export interface ServerSpanOptions {
  /** The tracer (instrumentation scope): the service's name. */
  tracer: string;
  name: string;
  attributes?: Attributes;
  /**
   * The caller's trace context: continued when `trusted` (the gateway's own requests to a subgraph), else only
   * linked (a public client's `traceparent` never picks our trace ids). Absent: a new root.
   */
  remote?: Context;
  trusted?: boolean;
}

/** Starts a request's SERVER span (a new root unless the remote parent is trusted); undefined when off. */
export function startServerSpan(opts: ServerSpanOptions): { span: Span; context: Context } | undefined {
  if (!enabled) return undefined;
  const parent = opts.remote && opts.trusted ? opts.remote : ROOT_CONTEXT;
  const remote = opts.remote && !opts.trusted ? trace.getSpanContext(opts.remote) : undefined;
  const links: Link[] = remote
    ? [{ context: remote, attributes: { 'agentgraph.link': 'untrusted traceparent' } }]
    : [];
  const span = trace
    .getTracer(opts.tracer)
    .startSpan(
      opts.name,
      { kind: SpanKind.SERVER, attributes: opts.attributes, links, root: !opts.trusted },
      parent,
    );
  return { span, context: trace.setSpan(parent, span) };
}

/** Marks a span failed with a code (never the error's message: it may hold values). */
export function markSpanError(span: Span, code: string): void {
  span.setAttribute('error.type', code);
  span.setStatus({ code: SpanStatusCode.ERROR, message: code });
}

/**
 * Runs `fn` inside a child span of the active one (a CLIENT span for calls that leave the process). When off, or
 * with no active span (background work: a sweeper's statements are not traced), `fn` runs as is.
 */
export function inChildSpan<T>(
  tracer: string,
  name: string,
  kind: SpanKind,
  attributes: Attributes,
  fn: (span: Span | undefined) => Promise<T>,
): Promise<T> {
  if (!enabled || !trace.getActiveSpan()) return fn(undefined);
  return trace.getTracer(tracer).startActiveSpan(name, { kind, attributes }, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      const code =
        err && typeof err === 'object' && 'code' in err && typeof err.code === 'string'
          ? err.code
          : err instanceof Error
            ? err.name
            : 'Error';
      markSpanError(span, code);
      throw err;
    } finally {
      span.end();
    }
  });
}

/** A CLIENT span around a call that leaves the process (another service), as inChildSpan; `fn` runs as is when off. */
export function inClientSpan<T>(
  tracer: string,
  name: string,
  attributes: Attributes,
  fn: (span: Span | undefined) => Promise<T>,
): Promise<T> {
  return inChildSpan(tracer, name, SpanKind.CLIENT, attributes, fn);
}

export interface RequestSpanOptions {
  /** The tracer (instrumentation scope): the service's name. */
  tracer: string;
  /** The route (`/graphql`, `/graphql/stream`): the span is named `<method> <route>`. */
  route: string;
  /** Whether the request may continue its caller's trace (asked only when it carries a `traceparent`). */
  trusted: () => boolean;
  /** End the span when the response closes (else the caller ends it). */
  endOnClose: boolean;
}

/** A request's SERVER span and the context to run its handling in; undefined when tracing is off. */
export function startRequestSpan(
  req: IncomingMessage,
  res: ServerResponse,
  opts: RequestSpanOptions,
): { span: Span; context: Context } | undefined {
  if (!enabled) return undefined;
  const remote = remoteContextOf(req.headers);
  const started = startServerSpan({
    tracer: opts.tracer,
    name: `${req.method ?? 'GET'} ${opts.route}`,
    remote,
    trusted: remote ? opts.trusted() : false,
    attributes: {
      'http.request.method': req.method ?? 'GET',
      'url.path': opts.route,
      'http.route': opts.route,
    },
  })!;
  if (opts.endOnClose) res.once('close', () => endRequestSpan(started.span, res.statusCode));
  return started;
}

/** Ends a request span with its status (5xx marks it failed). */
export function endRequestSpan(span: Span, status: number): void {
  span.setAttribute('http.response.status_code', status);
  if (status >= 500) markSpanError(span, String(status));
  span.end();
}

/** Calls fn(...args) with `ctx` as the active context (as is without one). */
export function runInContext<A extends unknown[], T>(
  ctx: Context | undefined,
  fn: (...args: A) => T,
  ...args: A
): T {
  return ctx ? context.with(ctx, fn, undefined, ...args) : fn(...args);
}

/** Adds attributes to the active span (the request's); `attributes` is not even called when off. */
export function setActiveSpanAttributes(attributes: () => Attributes): void {
  if (enabled) trace.getActiveSpan()?.setAttributes(attributes());
}

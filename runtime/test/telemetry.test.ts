/**
 * Tracing from the environment: off unless OTEL_TRACES_EXPORTER asks, and with `otlp` the spans reach a real OTLP/HTTP
 * receiver on loopback (started here, parsing the OTLP JSON it is sent) at the endpoint the environment names.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SpanKind } from '@opentelemetry/api';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  activeTraceIds,
  createLogger,
  inChildSpan,
  otlpTracesEndpoint,
  runInContext,
  startServerSpan,
  startTracing,
  tracingEnabled,
  type Tracing,
} from '../src/index.js';
import { statementText } from '../src/telemetry/db.js';

interface Received {
  path: string;
  contentType: string | undefined;
  body: any;
}

let receiver: Server;
let base: string;
const received: Received[] = [];

const readAll = async (req: IncomingMessage) => {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
};

beforeAll(async () => {
  receiver = createServer((req, res) => {
    void readAll(req).then((text) => {
      received.push({
        path: req.url ?? '',
        contentType: req.headers['content-type'],
        body: JSON.parse(text),
      });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((r) => receiver.close(r));
});

let tracing: Tracing | undefined;
afterEach(async () => {
  delete process.env['OTEL_RESOURCE_ATTRIBUTES'];
  await tracing?.shutdown();
  tracing = undefined;
  received.length = 0;
});

const attr = (attrs: { key: string; value: Record<string, unknown> }[], key: string) => {
  const v = attrs.find((a) => a.key === key)?.value;
  return v ? Object.values(v)[0] : undefined;
};

describe('tracing configuration from the environment', () => {
  it('is off by default, with OTEL_TRACES_EXPORTER=none and with OTEL_SDK_DISABLED=true', () => {
    for (const env of [
      {},
      { OTEL_TRACES_EXPORTER: 'none' },
      { OTEL_TRACES_EXPORTER: 'otlp', OTEL_SDK_DISABLED: 'true' },
    ]) {
      const t = startTracing({ serviceName: 'memory', env });
      expect(t.enabled).toBe(false);
      expect(tracingEnabled()).toBe(false);
    }
    // Off: no span, no ids, fn runs as is.
    expect(startServerSpan({ tracer: 'x', name: 'n' })).toBeUndefined();
    expect(activeTraceIds()).toBeUndefined();
  });

  it('refuses an exporter it does not have, naming the variable', () => {
    expect(() => startTracing({ serviceName: 'memory', env: { OTEL_TRACES_EXPORTER: 'zipkin' } })).toThrow(
      /OTEL_TRACES_EXPORTER: "zipkin"/,
    );
    expect(tracingEnabled()).toBe(false);
  });

  it('reads the traces endpoint: the signal endpoint as is, else the base endpoint + /v1/traces', () => {
    expect(otlpTracesEndpoint({})).toBe('http://localhost:4318/v1/traces');
    expect(otlpTracesEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' })).toBe(
      'http://collector:4318/v1/traces',
    );
    expect(
      otlpTracesEndpoint({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://jaeger:4318/custom/traces',
      }),
    ).toBe('http://jaeger:4318/custom/traces');
  });

  it('with otlp, sends the spans as OTLP JSON to the receiver the environment names, with OTEL_SERVICE_NAME', async () => {
    // Resource attributes come from the process's environment (the SDK's env detector).
    process.env['OTEL_RESOURCE_ATTRIBUTES'] = 'deployment.environment=otel-test';
    tracing = startTracing({
      serviceName: 'memory',
      env: {
        OTEL_TRACES_EXPORTER: 'otlp',
        OTEL_EXPORTER_OTLP_ENDPOINT: base,
        OTEL_SERVICE_NAME: 'memory-eu-1',
      },
    });
    expect(tracing.enabled).toBe(true);
    expect(tracing.exporters).toEqual(['otlp']);
    expect(tracing.endpoint).toBe(`${base}/v1/traces`);

    const lines: string[] = [];
    const log = createLogger({ service: 'memory' }, { write: (l) => lines.push(l) });
    const started = startServerSpan({ tracer: 'memory', name: 'POST /graphql' })!;
    const ids = started.span.spanContext();
    await runInContext(started.context, () =>
      inChildSpan('memory', 'SELECT', SpanKind.CLIENT, { 'db.system': 'postgresql' }, async () => {
        log.info('inside');
      }),
    );
    started.span.end();
    log.info('outside');
    await tracing.flush();

    expect(received.length).toBeGreaterThan(0);
    expect(received[0]!.path).toBe('/v1/traces');
    expect(received[0]!.contentType).toMatch(/application\/json/);
    const resourceSpans = received.flatMap((r) => r.body.resourceSpans as any[]);
    expect(attr(resourceSpans[0].resource.attributes, 'service.name')).toBe('memory-eu-1');
    expect(attr(resourceSpans[0].resource.attributes, 'deployment.environment')).toBe('otel-test');
    const spans = resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss: any) => ss.spans as any[]));
    const server = spans.find((s) => s.name === 'POST /graphql');
    const child = spans.find((s) => s.name === 'SELECT');
    expect(server.traceId).toBe(ids.traceId);
    expect(server.spanId).toBe(ids.spanId);
    expect(child.traceId).toBe(ids.traceId);
    expect(child.parentSpanId).toBe(ids.spanId);
    expect(attr(child.attributes, 'db.system')).toBe('postgresql');

    // The line logged inside the child span carries its ids; the one outside none.
    const inside = JSON.parse(lines[0]!);
    expect(inside.trace_id).toBe(ids.traceId);
    expect(inside.span_id).toBe(child.spanId);
    expect(JSON.parse(lines[1]!).trace_id).toBeUndefined();
  });
});

describe('database statement text', () => {
  it('is the text alone, whitespace collapsed, cut at 2000 characters', () => {
    expect(statementText('SELECT *\n   FROM t\n  WHERE id = $1')).toBe('SELECT * FROM t WHERE id = $1');
    const long = statementText(`SELECT ${'x, '.repeat(2000)}1`);
    expect(long.length).toBe(2001);
    expect(long.endsWith('…')).toBe(true);
  });
});

/**
 * OpenTelemetry traces through the platform over real HTTP, collected in memory: one cross-subgraph query is one trace
 * whose tree goes gateway server span → fetch to a subgraph → subgraph server span → database statement, with that
 * trace id on the log lines; a forged `traceparent` sent straight to a subgraph without the gateway secret does not join
 * its trace (with the secret it does); a stream's lifetime is a span with its end reason; and with tracing off there
 * are no spans of ours, no trace ids in the logs, and the same answers.
 */
import { randomUUID } from 'node:crypto';
import { trace } from '@opentelemetry/api';
import {
  InMemorySpanExporter,
  NodeTracerProvider,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createLogger,
  GATEWAY_SECRET_HEADER,
  startTracing,
  tracingEnabled,
  type Tracing,
} from '@agentgraph/runtime';
import { startTestPlatform, type TestPlatform, type TestUser } from '../src/platform.js';
import { subscribe } from '../src/sse.js';

const exporter = new InMemorySpanExporter();
const logs: string[] = [];
let tracing: Tracing;
let p: TestPlatform;
let alice: TestUser;
let room: string;

const QUERY = 'query Span($id: ID!) { room(id: $id) { name createdBy { displayName email } } }';
const FORGED_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const FORGED_PARENT = `00-${FORGED_TRACE}-00f067aa0ba902b7-01`;

beforeAll(async () => {
  tracing = startTracing({ serviceName: 'agentgraph', exporter });
  p = await startTestPlatform(
    {},
    { log: createLogger({ service: 'e2e' }, { level: 'info', write: (line) => logs.push(line) }) },
  );
  alice = await p.tokenFor({ tenant: 'acme', displayName: 'Alice Acme' });
  const r = await p.gql(
    'mutation R($k: ID!) { createRoom(input: { name: "traced" }, idempotencyKey: $k) { room { id } } }',
    { k: randomUUID() },
    alice.token,
  );
  expect(r.errors).toBeUndefined();
  room = r.data.createRoom.room.id as string;
});
afterAll(async () => {
  await p?.close();
  await tracing?.shutdown();
});

const scope = (s: ReadableSpan) => s.instrumentationScope.name;
const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;
const idOf = (s: ReadableSpan) => s.spanContext().spanId;
const SERVER = 1;
const CLIENT = 2;

/** Waits until `pick` finds what it needs among the finished spans (a server span ends when its response closes). */
async function spansUntil<T>(pick: (spans: ReadableSpan[]) => T | undefined): Promise<T> {
  for (let i = 0; i < 200; i++) {
    const found = pick(exporter.getFinishedSpans());
    if (found !== undefined) return found;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`spans never showed up: ${exporter.getFinishedSpans().map((s) => s.name)}`);
}

/** The chain of ancestors of a span inside its trace (nearest first). */
function ancestors(span: ReadableSpan, all: ReadableSpan[]): ReadableSpan[] {
  const byId = new Map(all.map((s) => [s.spanContext().spanId, s]));
  const out: ReadableSpan[] = [];
  for (let id = parentOf(span); id;) {
    const parent = byId.get(id);
    if (!parent) break;
    out.push(parent);
    id = parentOf(parent);
  }
  return out;
}

describe('traces with tracing on (in-memory exporter)', () => {
  it('one cross-subgraph query is one trace: gateway → subgraph fetch → subgraph server → database', async () => {
    exporter.reset();
    logs.length = 0;
    const r = await p.gql(QUERY, { id: room }, alice.token, { traceparent: FORGED_PARENT });
    expect(r.errors).toBeUndefined();
    expect(r.data.room).toEqual({
      name: 'traced',
      createdBy: { displayName: 'Alice Acme', email: alice.email },
    });

    const gateway = await spansUntil((all) =>
      all.find((s) => scope(s) === 'gateway' && s.kind === SERVER && s.name === 'POST /graphql'),
    );
    const traceId = gateway.spanContext().traceId;
    // The gateway is the edge: a client's traceparent is linked, never continued.
    expect(traceId).not.toBe(FORGED_TRACE);
    expect(parentOf(gateway)).toBeUndefined();
    expect(gateway.links.map((l) => l.context.traceId)).toEqual([FORGED_TRACE]);
    expect(gateway.attributes['graphql.operation.name']).toBe('Span');
    expect(gateway.attributes['agentgraph.outcome']).toBe('OK');
    expect(gateway.attributes['http.response.status_code']).toBe(200);

    // Every subgraph the plan asked (coordination for the room, identity for its creator) ran in the same trace.
    const trees = await spansUntil((all) => {
      const inTrace = all.filter((s) => s.spanContext().traceId === traceId);
      const servers = inTrace.filter((s) => s.kind === SERVER && s !== gateway);
      const names = new Set(servers.map(scope));
      return names.has('coordination') && names.has('identity') ? { inTrace, servers } : undefined;
    });
    for (const subgraph of ['coordination', 'identity']) {
      const server = trees.servers.find((s) => scope(s) === subgraph)!;
      expect(server.name).toBe('POST /graphql');
      const up = ancestors(server, trees.inTrace);
      // Its parent is the gateway's fetch to it (a CLIENT span naming it), which descends from the gateway's span.
      expect(up[0]).toMatchObject({ kind: CLIENT, name: `POST ${subgraph}` });
      expect(scope(up[0]!)).toBe('gateway');
      expect(up[0]!.attributes['peer.service']).toBe(subgraph);
      expect(up.at(-1)).toBe(gateway);
      // Apollo Gateway's own spans are in the tree too (it uses the same global provider).
      expect(up.map((s) => s.name)).toContain('gateway.fetch');
      // And the subgraph's database statements descend from its server span.
      const statements = trees.inTrace.filter(
        (s) =>
          scope(s) === '@agentgraph/runtime/db' &&
          s.attributes['db.statement'] !== undefined &&
          ancestors(s, trees.inTrace).includes(server),
      );
      expect(statements.length).toBeGreaterThan(0);
      for (const s of statements) {
        expect(s.kind).toBe(CLIENT);
        expect(s.attributes['db.system']).toBe('postgresql');
        expect(s.attributes['agentgraph.db.driver']).toBe(p.driver);
        // The statement text only: never the values bound to it.
        const text = s.attributes['db.statement'] as string;
        expect(text).not.toContain(room);
        expect(text).not.toContain(alice.tenantId);
        expect(text).not.toContain(alice.email);
      }
    }

    // Log lines written while the request ran carry its trace id (the gateway's access line: its own span's id).
    const lines = logs.map((l) => JSON.parse(l) as Record<string, unknown>);
    const access = lines.find((l) => l['msg'] === 'request' && l['operationName'] === 'Span');
    expect(access).toMatchObject({ trace_id: traceId, span_id: gateway.spanContext().spanId });
    // So do the subgraphs' access lines of the fetches it made (same correlation id), with their server spans' ids.
    const servedIds = new Set(trees.servers.map((s) => s.spanContext().spanId));
    const subgraphLines = lines.filter(
      (l) => l['msg'] === 'request' && l !== access && l['correlationId'] === access!['correlationId'],
    );
    expect(subgraphLines.length).toBeGreaterThanOrEqual(2);
    for (const l of subgraphLines) {
      expect(l['trace_id']).toBe(traceId);
      expect(servedIds.has(l['span_id'] as string)).toBe(true);
    }
  });

  it("a subgraph's call to another subgraph (coordination asks identity) stays in the trace with the gateway secret", async () => {
    exporter.reset();
    const sent = await p.gql(
      'mutation S($i: SendAgentMessageInput!, $k: ID!) { sendAgentMessage(input: $i, idempotencyKey: $k) { message { id } } }',
      { i: { to: { userId: alice.userId }, body: 'traced' }, k: randomUUID() },
      alice.token,
    );
    expect(sent.errors).toBeUndefined();
    // The recipient check: coordination's CLIENT span to identity, identity's server span under it (the check carries
    // the gateway secret), all under the gateway's request span.
    const found = await spansUntil((all) => {
      const call = all.find(
        (s) => scope(s) === 'coordination' && s.kind === CLIENT && s.name === 'POST identity',
      );
      const served =
        call && all.find((s) => scope(s) === 'identity' && s.kind === SERVER && parentOf(s) === idOf(call));
      return call && served ? { all, call, served } : undefined;
    });
    const traceId = found.call.spanContext().traceId;
    expect(found.served.spanContext().traceId).toBe(traceId);
    const up = ancestors(found.served, found.all);
    expect(up.map((s) => `${scope(s)} ${s.name}`)).toEqual(
      expect.arrayContaining([
        'coordination POST identity',
        'coordination POST /graphql',
        'gateway POST coordination',
        'gateway POST /graphql',
      ]),
    );
    expect(up.at(-1)!.attributes['graphql.operation.name']).toBe('S');
  });

  it('a forged traceparent sent straight to a subgraph without the gateway secret starts a new trace', async () => {
    const url = `${p.subgraphs.coordination}/graphql`;
    const ask = (headers: Record<string, string>) =>
      fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', traceparent: FORGED_PARENT, ...headers },
        body: JSON.stringify({ query: '{ __typename }' }),
      });
    exporter.reset();
    const outside = await ask({ 'x-correlation-id': 'forged-outside' });
    expect(outside.status).toBe(200);
    const span = await spansUntil((all) => all.find((s) => scope(s) === 'coordination' && s.kind === SERVER));
    expect(span.spanContext().traceId).not.toBe(FORGED_TRACE);
    expect(parentOf(span)).toBeUndefined();
    expect(span.links.map((l) => l.context.traceId)).toEqual([FORGED_TRACE]);

    // The control: the same request with the gateway secret continues the caller's trace.
    exporter.reset();
    const inside = await ask({ [GATEWAY_SECRET_HEADER]: p.platform.config.gatewaySecret });
    expect(inside.status).toBe(200);
    const joined = await spansUntil((all) =>
      all.find((s) => scope(s) === 'coordination' && s.kind === SERVER),
    );
    expect(joined.spanContext().traceId).toBe(FORGED_TRACE);
    expect(parentOf(joined)).toBe('00f067aa0ba902b7');
  });

  it("a stream's lifetime is a span, from opened to ended, with its end reason", async () => {
    exporter.reset();
    const s = subscribe(
      `${p.gatewayUrl}/graphql/stream`,
      alice.token,
      'subscription S($room: ID!) { roomMessages(roomId: $room, afterSeq: 0) { seq } }',
      { room },
    );
    const posted = await p.gql(
      'mutation P($room: ID!, $k: ID!) { postMessage(roomId: $room, input: { body: "hi" }, idempotencyKey: $k) { message { seq } } }',
      { room, k: randomUUID() },
      alice.token,
    );
    expect(posted.errors).toBeUndefined();
    expect((await s.next()).data).toEqual({ roomMessages: { seq: 1 } });
    // Open: the stream's span has not ended.
    expect(
      exporter.getFinishedSpans().some((x) => scope(x) === 'gateway' && x.name === 'POST /graphql/stream'),
    ).toBe(false);
    s.dispose();
    const stream = await spansUntil((all) =>
      all.find((x) => scope(x) === 'gateway' && x.kind === SERVER && x.name === 'POST /graphql/stream'),
    );
    expect(stream.attributes['agentgraph.stream.end_reason']).toBe('closed');
    expect(stream.attributes['http.response.status_code']).toBe(200);
  });
});

describe('with tracing off', () => {
  it('makes no span of its own, writes no trace id, and answers the same', async () => {
    const on = await p.gql(QUERY, { id: room }, alice.token);
    await tracing.shutdown();
    expect(tracingEnabled()).toBe(false);
    // Another provider registered in the process (not ours): nothing of ours reaches it (Apollo's own spans may).
    const other = new InMemorySpanExporter();
    const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(other)] });
    provider.register();
    try {
      logs.length = 0;
      const off = await p.gql(QUERY, { id: room }, alice.token);
      expect(off.status).toBe(on.status);
      expect(off.data).toEqual(on.data);
      expect(off.errors).toEqual(on.errors);
      // The request's access line is written once the answer is out: wait for it, then look at every line.
      const lines = await (async () => {
        for (let i = 0; i < 200; i++) {
          const found = logs.map((l) => JSON.parse(l) as Record<string, unknown>);
          if (found.some((l) => l['msg'] === 'request')) return found;
          await new Promise((r) => setTimeout(r, 25));
        }
        throw new Error('no access line');
      })();
      for (const line of lines) expect(line['trace_id']).toBeUndefined();
      const ours = other.getFinishedSpans().filter((s) => scope(s) !== '@apollo/gateway');
      expect(ours.map((s) => `${scope(s)} ${s.name}`)).toEqual([]);
    } finally {
      await provider.shutdown();
      trace.disable();
    }
  });
});

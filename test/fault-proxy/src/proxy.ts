/**
 * startFaultProxy: an HTTP proxy on 127.0.0.1 that forwards to a loopback upstream and injects faults: drop the
 * request, drop the answer after the upstream processed it, answer 429/503 with Retry-After, delay, cut an SSE
 * stream. Scripted rules decide first; otherwise seeded random faults (see decide.ts and prng.ts).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import {
  FaultsSchema,
  ProxyOptionsSchema,
  isLoopbackHost,
  parseOrExplain,
  type FaultsInput,
  type ProxyOptionsInput,
} from './config.js';
import { Decider, ruleName, type Plan, type RequestFacts } from './decide.js';
import { requestFingerprint } from './prng.js';
import { StreamCutter } from './sse-cut.js';

export interface FaultProxyOptions extends ProxyOptionsInput {
  /** How a delay waits (default: a real timer). Tests pass a controllable one. */
  sleep?: (ms: number) => Promise<void>;
  /** Called with every decision, before it is carried out. */
  onDecision?: (facts: RequestFacts, plan: Plan) => void;
}

/** Counters of what the proxy did. */
export interface FaultProxyStats {
  /** Requests received (whole body read). */
  requests: number;
  /** Requests sent upstream. */
  forwarded: number;
  /** Client sockets closed without forwarding. */
  droppedRequests: number;
  /** Answers read from the upstream and then withheld (client socket closed). */
  droppedResponses: number;
  /** 429 answers made by the proxy. */
  rateLimited: number;
  /** 503 answers made by the proxy. */
  unavailable: number;
  /** Other statuses answered by the proxy (rules with `respond`). */
  answeredOther: number;
  delayed: number;
  /** SSE answers cut. */
  streamsCut: number;
  /** Upstream connection failures (answered 502). */
  upstreamErrors: number;
  /** Request bodies over maxBodyBytes (answered 413). */
  tooLarge: number;
  /** Times each rule fired, by name. */
  rules: Record<string, number>;
}

export interface FaultProxy {
  /** Base URL of the proxy, e.g. http://127.0.0.1:54321 (same paths as the upstream). */
  url: string;
  stats(): FaultProxyStats;
  /** Replaces the random faults (rules and their counters stay). */
  setFaults(faults: FaultsInput): void;
  /** Stops listening and closes every open connection. */
  close(): Promise<void>;
}

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
  'content-length',
]);

function endToEndHeaders(headers: http.IncomingHttpHeaders): http.OutgoingHttpHeaders {
  const out: http.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined && !HOP_BY_HOP.has(name)) out[name] = value;
  }
  return out;
}

function operationNameOf(req: http.IncomingMessage, url: URL, body: Buffer): string | null {
  const fromQuery = url.searchParams.get('operationName');
  if (fromQuery) return fromQuery;
  if (body.length === 0 || !(req.headers['content-type'] ?? '').includes('json')) return null;
  try {
    const parsed: unknown = JSON.parse(body.toString('utf8'));
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) {
      const name = (parsed as { operationName?: unknown }).operationName;
      return typeof name === 'string' ? name : null;
    }
  } catch {
    // not JSON: no operation name
  }
  return null;
}

const CODE_BY_STATUS: Record<number, string> = {
  400: 'BAD_USER_INPUT',
  401: 'UNAUTHENTICATED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  409: 'IDEMPOTENCY_KEY_IN_PROGRESS',
  413: 'PAYLOAD_TOO_LARGE',
  429: 'RATE_LIMITED',
  503: 'SERVICE_UNAVAILABLE',
};

/** A GraphQL-over-HTTP error answer made by the proxy itself. */
function answer(res: http.ServerResponse, status: number, message: string, retryAfterSeconds?: number): void {
  const code = CODE_BY_STATUS[status] ?? 'INTERNAL_SERVER_ERROR';
  const extensions: Record<string, unknown> = { code, injectedBy: 'fault-proxy' };
  const headers: http.OutgoingHttpHeaders = {
    'content-type': 'application/graphql-response+json; charset=utf-8',
  };
  if (retryAfterSeconds !== undefined) {
    headers['retry-after'] = String(retryAfterSeconds);
    extensions.retryAfterMs = retryAfterSeconds * 1000;
  }
  const body = JSON.stringify({ errors: [{ message, extensions }] });
  headers['content-length'] = Buffer.byteLength(body);
  res.writeHead(status, headers).end(body);
}

function readBody(req: http.IncomingMessage, limit: number): Promise<Buffer | 'too-large'> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) over = true;
      else chunks.push(chunk);
    });
    req.on('end', () => resolve(over ? 'too-large' : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

export async function startFaultProxy(options: FaultProxyOptions): Promise<FaultProxy> {
  const { sleep = (ms: number) => delay(ms), onDecision, ...rest } = options;
  const opts = parseOrExplain(ProxyOptionsSchema, rest, 'options');
  const upstream = new URL(opts.upstream);
  if (upstream.protocol !== 'http:')
    throw new TypeError(`fault proxy: upstream must be http://, got ${upstream}`);
  if (!isLoopbackHost(upstream.hostname)) {
    throw new TypeError(
      `fault proxy: upstream must be on loopback (127.0.0.0/8, ::1, localhost), got ${upstream}`,
    );
  }
  const basePath = upstream.pathname.replace(/\/+$/, '');
  const decider = new Decider(opts.rules, opts.faults, opts.seed);
  const stats: FaultProxyStats = {
    requests: 0,
    forwarded: 0,
    droppedRequests: 0,
    droppedResponses: 0,
    rateLimited: 0,
    unavailable: 0,
    answeredOther: 0,
    delayed: 0,
    streamsCut: 0,
    upstreamErrors: 0,
    tooLarge: 0,
    rules: Object.fromEntries(opts.rules.map((r, i) => [ruleName(r, i), 0])),
  };
  const agent = new http.Agent({ keepAlive: true });

  function forward(req: http.IncomingMessage, res: http.ServerResponse, body: Buffer, plan: Plan): void {
    stats.forwarded++;
    const headers = endToEndHeaders(req.headers);
    headers['content-length'] = body.length;
    const upstreamReq = http.request({
      protocol: upstream.protocol,
      hostname: upstream.hostname,
      port: upstream.port,
      method: req.method,
      path: basePath + (req.url ?? '/'),
      headers,
      agent,
    });
    let upstreamDone = false;
    // The client went away (or we cut it) mid-exchange: stop the upstream exchange too.
    res.on('close', () => {
      if (!upstreamDone) upstreamReq.destroy();
    });
    upstreamReq.on('error', () => {
      if (res.headersSent || res.destroyed) {
        res.destroy();
        return;
      }
      stats.upstreamErrors++;
      answer(res, 502, 'fault proxy: the upstream did not answer');
    });
    upstreamReq.on('response', (up) => {
      up.on('end', () => (upstreamDone = true));
      const isStream = (up.headers['content-type'] ?? '').includes('text/event-stream');
      if (plan.dropResponse) {
        stats.droppedResponses++;
        if (isStream) {
          up.destroy();
          req.socket.destroy();
          return;
        }
        up.on('end', () => req.socket.destroy());
        up.resume();
        return;
      }
      res.writeHead(up.statusCode ?? 502, endToEndHeaders(up.headers));
      if (!isStream || !plan.cut) {
        up.pipe(res);
        return;
      }
      const cutter = new StreamCutter(plan.cut);
      const cut = () => {
        stats.streamsCut++;
        up.destroy();
        // end() sends what was written, then FIN: the client sees the stream stop mid-way (no last chunk).
        res.socket?.end();
      };
      if (cutter.cutAtStart) {
        res.flushHeaders();
        cut();
        return;
      }
      up.on('data', (chunk: Buffer) => {
        const step = cutter.feed(chunk);
        const flowing = res.write(step.send);
        if (step.cut) cut();
        else if (!flowing) {
          up.pause();
          res.once('drain', () => up.resume());
        }
      });
      up.on('end', () => res.end());
    });
    upstreamReq.end(body);
  }

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const body = await readBody(req, opts.maxBodyBytes);
    stats.requests++;
    if (body === 'too-large') {
      stats.tooLarge++;
      answer(res, 413, `fault proxy: request body over ${opts.maxBodyBytes} bytes`);
      return;
    }
    const method = req.method ?? 'GET';
    const url = new URL(req.url ?? '/', 'http://proxy.invalid');
    const idempotencyKey = String(req.headers['idempotency-key'] ?? '');
    const facts: RequestFacts = {
      method,
      path: url.pathname,
      operationName: operationNameOf(req, url, body),
      fingerprint: requestFingerprint(method, req.url ?? '/', idempotencyKey, body),
    };
    const plan = decider.decide(facts);
    if (plan.by !== 'random') stats.rules[plan.by] = (stats.rules[plan.by] ?? 0) + 1;
    onDecision?.(facts, plan);
    if (plan.kind === 'dropRequest') {
      stats.droppedRequests++;
      req.socket.destroy();
      return;
    }
    if (plan.kind === 'respond') {
      const status = plan.status!;
      if (status === 429) stats.rateLimited++;
      else if (status === 503) stats.unavailable++;
      else stats.answeredOther++;
      const retryAfter = status === 429 || status === 503 ? plan.retryAfterSeconds : undefined;
      answer(res, status, `fault proxy: injected ${status}`, retryAfter);
      return;
    }
    if (plan.delayMs > 0) {
      stats.delayed++;
      await sleep(plan.delayMs);
      if (res.destroyed) return;
    }
    forward(req, res, body, plan);
  }

  const server = http.createServer((req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    stats: () => ({ ...stats, rules: { ...stats.rules } }),
    setFaults(faults) {
      decider.faults = parseOrExplain(FaultsSchema, faults, 'faults');
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
        agent.destroy();
      }),
  };
}

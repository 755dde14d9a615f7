/**
 * The fake network of the conformance suite: answers the SDK's requests from the vector's `exchanges`, in order,
 * and records every difference between what the SDK sent and what the vector expects. It never throws a mismatch
 * at the SDK (the SDK would treat it as a network fault and retry); the executor reports `problems` at the end.
 */
import type { FakeClock } from './fake-clock.js';
import { jsonEqual, subsetProblems } from './match.js';

export interface ExpectedRequest {
  method?: 'POST';
  url?: string;
  headers?: Record<string, string | null>;
  body?: Record<string, unknown>;
  variables?: Record<string, unknown>;
}

export interface ScriptedResponse {
  status?: number;
  headers?: Record<string, string>;
  body?: unknown;
  bodyText?: string;
  fault?: 'network' | 'timeout';
  latencyMs?: number;
  abortCaller?: boolean;
}

export interface Exchange {
  request: ExpectedRequest;
  response: ScriptedResponse;
}

export class ScriptedTransport {
  readonly problems: string[] = [];
  requests = 0;
  /** Set by the executor: aborts the caller's signal (for `abortCaller`). */
  abortCaller: () => void = () => {
    this.problems.push('a response has abortCaller but the executor gave no way to abort');
  };

  constructor(
    private readonly exchanges: readonly Exchange[],
    private readonly clock: FakeClock,
  ) {}

  readonly fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const index = this.requests++;
    const exchange = this.exchanges[index];
    if (!exchange) {
      this.problems.push(
        `request #${index + 1} was sent, but the vector scripts only ${this.exchanges.length}`,
      );
      throw new TypeError('conformance: unexpected request');
    }
    this.check(index, input, init, exchange.request);
    const r = exchange.response;
    if (r.abortCaller) this.abortCaller();
    if (r.latencyMs) this.clock.advance(r.latencyMs);
    if (init?.signal?.aborted) throw new DOMException('The operation was aborted.', 'AbortError');
    if (r.fault === 'network') throw new TypeError('fetch failed (scripted network fault)');
    if (r.fault === 'timeout') throw new DOMException('The operation timed out (scripted).', 'TimeoutError');
    const text = r.bodyText ?? (r.body === undefined ? null : JSON.stringify(r.body));
    return new Response(text, {
      status: r.status ?? 200,
      headers: { 'content-type': 'application/graphql-response+json; charset=utf-8', ...r.headers },
    });
  };

  /** Problems plus a check that every scripted exchange was used. */
  finalProblems(): string[] {
    const unused =
      this.requests < this.exchanges.length
        ? [`only ${this.requests} of the ${this.exchanges.length} scripted requests were sent`]
        : [];
    return [...this.problems, ...unused];
  }

  private check(
    index: number,
    input: string | URL | Request,
    init: RequestInit | undefined,
    want: ExpectedRequest,
  ) {
    const at = `request #${index + 1}`;
    const method = init?.method ?? 'GET';
    if (want.method && method !== want.method)
      this.problems.push(`${at}: method ${method}, expected ${want.method}`);
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    if (want.url !== undefined && url !== want.url)
      this.problems.push(`${at}: url ${url}, expected ${want.url}`);
    const headers = new Headers(init?.headers);
    for (const [name, value] of Object.entries(want.headers ?? {})) {
      const got = headers.get(name);
      if (value === null && got !== null) this.problems.push(`${at}: header ${name} must be absent`);
      if (value !== null && got !== value)
        this.problems.push(`${at}: header ${name} is ${got}, expected ${value}`);
    }
    if (want.body === undefined && want.variables === undefined) return;
    let body: unknown;
    try {
      body = JSON.parse(typeof init?.body === 'string' ? init.body : '');
    } catch {
      this.problems.push(`${at}: the body is not JSON`);
      return;
    }
    if (want.body) this.problems.push(...subsetProblems(want.body, body, `${at} body`));
    if (want.variables) {
      const variables = (body as { variables?: unknown }).variables;
      if (!jsonEqual(want.variables, variables)) {
        this.problems.push(
          `${at}: variables ${JSON.stringify(variables)}, expected exactly ${JSON.stringify(want.variables)}`,
        );
      }
    }
  }
}

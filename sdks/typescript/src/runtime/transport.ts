/**
 * One HTTP exchange of GraphQL over HTTP (the GraphQL-over-HTTP spec): POST a JSON body, accept
 * `application/graphql-response+json` (and legacy `application/json`), read the whole answer within the
 * per-attempt timeout. `fetch` is injected (default: the platform's), so the same code runs in Node 20 and in
 * browsers, and tests script the network.
 *
 * Failures without an HTTP answer become NetworkError or TimeoutError; the caller's signal aborting becomes
 * AbortError. Any HTTP answer (whatever the status) is returned for classification (classify.ts).
 */
import { AbortError, NetworkError, TimeoutError } from './errors.js';

export type FetchLike = typeof fetch;

export const GRAPHQL_RESPONSE_JSON = 'application/graphql-response+json';
export const ACCEPT = `${GRAPHQL_RESPONSE_JSON}, application/json;q=0.9`;

export interface HttpRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
  /** The caller's signal: aborting it aborts the exchange with AbortError. */
  signal?: AbortSignal;
  /** Per-attempt limit for the whole exchange (headers and body), in milliseconds (platform timer). */
  timeoutMs: number;
}

export interface HttpResponse {
  status: number;
  headers: Headers;
  /** The body parsed as JSON, or undefined when it is empty or not JSON. */
  body: unknown;
  /** Size of the body in bytes (UTF-8). */
  bytes: number;
}

const encoder = new TextEncoder();

export function utf8Length(text: string): number {
  return encoder.encode(text).byteLength;
}

export async function sendHttp(fetchFn: FetchLike, request: HttpRequest): Promise<HttpResponse> {
  const { signal } = request;
  if (signal?.aborted) throw new AbortError(signal.reason);
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, request.timeoutMs);
  const onAbort = () => controller.abort();
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const response = await fetchFn(request.url, {
      method: 'POST',
      headers: request.headers,
      body: request.body,
      signal: controller.signal,
    });
    const text = await response.text();
    let body: unknown;
    if (text.length > 0) {
      try {
        body = JSON.parse(text);
      } catch {
        body = undefined;
      }
    }
    return { status: response.status, headers: response.headers, body, bytes: utf8Length(text) };
  } catch (err) {
    if (signal?.aborted) throw new AbortError(signal.reason);
    const name = (err as { name?: unknown } | null)?.name;
    if (timedOut || name === 'TimeoutError') {
      throw new TimeoutError(
        `No complete answer within ${request.timeoutMs} ms. The request may or may not have been processed; ` +
          `a retry with the same idempotency key is safe.`,
        err,
      );
    }
    const detail = err instanceof Error ? err.message : String(err);
    throw new NetworkError(`The request failed before an HTTP answer arrived: ${detail}`, err);
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
  }
}

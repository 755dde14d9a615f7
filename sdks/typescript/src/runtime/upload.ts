/**
 * Plugin package upload: `POST <origin>/catalog/packages?plugin=<name>&version=<semver>` with the zip as the body
 * (the gateway forwards it, streamed, to the catalog service; not GraphQL). Same token provider, fetch and headers
 * as the client's GraphQL calls; the URL is the client's `baseUrl` with its trailing `/graphql` replaced.
 *
 * The catalog answers 202 `{releaseId, plugin, version, state: "QUARANTINED", sizeBytes, sha256, sha512}`; the
 * analysis then runs in the background (poll the `release` query until it leaves QUARANTINED). Refusals carry the
 * GraphQL error shape and become the table's typed errors like any call's: 401 UNAUTHENTICATED (after one token
 * refresh and resend), 403 FORBIDDEN, 404 NOT_FOUND (no such plugin), 409 VERSION_CONFLICT (the version has its
 * package: versions are immutable), 413 PAYLOAD_TOO_LARGE (over 5 MB).
 *
 * Not retried otherwise: a second upload of a version that did arrive is refused, so after a network failure or
 * timeout read the release to see whether the package is there before sending it again.
 */
import type { AgentGraphClient } from './client.js';
import { errorFromAnswer, wantsTokenRefresh } from './classify.js';
import {
  AbortError,
  type AgentGraphError,
  InvalidResponseError,
  NetworkError,
  TimeoutError,
} from './errors.js';

/** Per-attempt limit of an upload (a 5 MB body on a slow link takes longer than a GraphQL call). */
export const DEFAULT_UPLOAD_TIMEOUT_MS = 120_000;

export interface UploadPackageOptions {
  /** The plugin's name (it must exist in the caller's tenant). */
  plugin: string;
  /** The release's semantic version; declared on the fly when it was not. */
  version: string;
  /** The package: a zip. */
  body: Blob | Uint8Array;
  signal?: AbortSignal;
  /** Per-attempt limit in milliseconds (default DEFAULT_UPLOAD_TIMEOUT_MS). */
  timeoutMs?: number;
}

export interface UploadPackageResult {
  /** HTTP status of the answer (202). */
  status: number;
  releaseId: string;
  plugin: string;
  version: string;
  /** QUARANTINED: stored, its analysis queued. */
  state: string;
  sizeBytes: number;
  /** Hex digests of the package as the server received it. */
  digests: { sha256: string; sha512: string };
  correlationId?: string;
}

/** `https://api.example.com/graphql` → `https://api.example.com/catalog/packages`. */
export function packageUploadUrl(baseUrl: string): string {
  const url = new URL(baseUrl);
  url.pathname = `${url.pathname.replace(/\/+$/, '').replace(/\/graphql$/, '')}/catalog/packages`;
  url.search = '';
  url.hash = '';
  return url.toString();
}

function sizeOf(body: Blob | Uint8Array): number {
  return body instanceof Uint8Array ? body.byteLength : body.size;
}

async function readJson(response: Response): Promise<unknown> {
  const text = await response.text();
  if (text.length === 0) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function accepted(status: number, body: unknown, correlationId: string | undefined): UploadPackageResult {
  const b = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  const strings = ['releaseId', 'plugin', 'version', 'state', 'sha256', 'sha512'] as const;
  if (strings.some((k) => typeof b[k] !== 'string') || typeof b['sizeBytes'] !== 'number') {
    throw new InvalidResponseError({
      code: 'INVALID_RESPONSE',
      retryable: false,
      status,
      message: `The upload answered ${status} without the release and digests. Check the base URL (it must be the gateway's /graphql).`,
      ...(correlationId !== undefined ? { correlationId } : {}),
    });
  }
  return {
    status,
    releaseId: b['releaseId'] as string,
    plugin: b['plugin'] as string,
    version: b['version'] as string,
    state: b['state'] as string,
    sizeBytes: b['sizeBytes'] as number,
    digests: { sha256: b['sha256'] as string, sha512: b['sha512'] as string },
    ...(correlationId !== undefined ? { correlationId } : {}),
  };
}

/** Uploads a plugin package for `plugin@version`; resolves when the server has stored it (QUARANTINED). */
export async function uploadPackage(
  client: AgentGraphClient,
  options: UploadPackageOptions,
): Promise<UploadPackageResult> {
  const { signal } = options;
  const conn = client.connection;
  const url = new URL(packageUploadUrl(conn.baseUrl));
  url.searchParams.set('plugin', options.plugin);
  url.searchParams.set('version', options.version);
  const timeoutMs = options.timeoutMs ?? DEFAULT_UPLOAD_TIMEOUT_MS;
  const bytes = sizeOf(options.body);
  const startedAt = conn.clock.now();
  const base = { method: 'POST' as const, operation: 'UploadPackage', kind: 'mutation' as const, bytes };

  let attempts = 0;
  let token = await conn.tokenProvider?.getToken();
  for (;;) {
    if (signal?.aborted) throw new AbortError(signal.reason);
    attempts += 1;
    const headers: Record<string, string> = {
      ...conn.headers,
      'content-type':
        options.body instanceof Uint8Array || !options.body.type ? 'application/zip' : options.body.type,
      accept: 'application/json',
    };
    if (token !== undefined) headers['authorization'] = `Bearer ${token}`;
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, timeoutMs);
    const onAbort = () => controller.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    let status: number;
    let answerHeaders: Headers;
    let body: unknown;
    try {
      const response = await conn.fetch(url.toString(), {
        method: 'POST',
        headers,
        body: options.body as BodyInit,
        signal: controller.signal,
      });
      status = response.status;
      answerHeaders = response.headers;
      body = await readJson(response);
    } catch (err) {
      if (signal?.aborted) throw new AbortError(signal.reason);
      const name = (err as { name?: unknown } | null)?.name;
      const failure =
        timedOut || name === 'TimeoutError'
          ? new TimeoutError(
              `The upload got no answer within ${timeoutMs} ms. It may or may not have arrived: read the release ` +
                `before uploading again (a second upload of a stored version is refused).`,
              err,
            )
          : new NetworkError(
              `The upload failed before an HTTP answer arrived: ${err instanceof Error ? err.message : String(err)}`,
              err,
            );
      failure.attempts = attempts;
      conn.logger.log({
        ...base,
        event: 'call',
        attempts,
        latencyMs: conn.clock.now() - startedAt,
        code: failure.code,
      });
      throw failure;
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
    const correlationId = answerHeaders.get('x-correlation-id') ?? undefined;
    const done = {
      ...base,
      event: 'call' as const,
      attempts,
      status,
      latencyMs: conn.clock.now() - startedAt,
    };
    if (status >= 200 && status < 300) {
      const result = accepted(status, body, correlationId);
      conn.logger.log(done);
      return result;
    }
    const error: AgentGraphError = errorFromAnswer(
      client.errors,
      { status, headers: answerHeaders, body },
      conn.clock.now(),
    );
    error.attempts = attempts;
    // A refused token: the request did not run, so one refresh and resend is safe (as in execute()).
    if (attempts === 1 && conn.tokenProvider && wantsTokenRefresh(error)) {
      try {
        token = await conn.tokenProvider.refresh();
        continue;
      } catch {
        // keep the server's UNAUTHENTICATED
      }
    }
    error.giveUpReason = error.code === 'UNAUTHENTICATED' ? 'unauthenticated' : 'not-retryable';
    conn.logger.log({ ...done, code: error.code, giveUpReason: error.giveUpReason });
    throw error;
  }
}

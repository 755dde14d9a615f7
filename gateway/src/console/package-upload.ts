/**
 * `POST /catalog/packages?plugin=<name>&version=<semver>` on the gateway's origin: the console (whose CSP allows
 * only `connect-src 'self'`) uploads plugin packages here, and this forwards them to the catalog service's
 * `POST /packages` (subgraphs/catalog/README.md, "Upload").
 *
 * - The body streams through as it arrives (no buffering, no gateway body limit: the catalog enforces its 5 MB
 *   limit and answers 413 PAYLOAD_TOO_LARGE itself). Only `content-length`, `content-type`, `authorization` and the
 *   request's correlation id go upstream; the catalog checks the token (api:write, PUBLISHER / ADMIN / OWNER).
 * - The answer streams back with its status, `content-type`, `content-length` and `retry-after`.
 * - The catalog unreachable (refused, reset before an answer, silent for `idleTimeoutMs`): 503
 *   SERVICE_UNAVAILABLE in the GraphQL error shape, with `retry-after`.
 * - Other methods on the path: 405 with `allow: POST`. Other paths: not this route's (false).
 */
import { request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { pipeline } from 'node:stream/promises';
import type { Logger } from '@agentgraph/runtime';

export const PACKAGE_UPLOAD_PATH = '/catalog/packages';
/** The catalog's own path for uploads (subgraphs/catalog/src/packages/upload-route.ts). */
const UPSTREAM_PATH = '/packages';
const FORWARDED_REQUEST_HEADERS = ['content-length', 'content-type', 'authorization'] as const;
const FORWARDED_ANSWER_HEADERS = ['content-type', 'content-length', 'retry-after'] as const;

export interface PackageUploadOptions {
  /** The catalog service's origin, e.g. http://127.0.0.1:4104 (any path on it is ignored). */
  catalogUrl: string;
  log: Logger;
  /** No bytes either way for this long ends the exchange (default 60 s). */
  idleTimeoutMs?: number;
}

/** Answers the upload route (true), or leaves other paths alone (false). */
export type PackageUploadRoute = (
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  search: string,
) => Promise<boolean>;

function unavailable(res: ServerResponse, correlationId: string, detail: string): void {
  const body = JSON.stringify({
    errors: [
      {
        message: `The catalog service did not take the upload (${detail}). Try again in a moment.`,
        extensions: { code: 'SERVICE_UNAVAILABLE', correlationId, retryAfterMs: 2000 },
      },
    ],
  });
  res.writeHead(503, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'retry-after': '2',
    connection: 'close',
  });
  res.end(body);
}

export function createPackageUpload(opts: PackageUploadOptions): PackageUploadRoute {
  const origin = new URL(opts.catalogUrl);
  const send = origin.protocol === 'https:' ? httpsRequest : httpRequest;
  const idleTimeoutMs = opts.idleTimeoutMs ?? 60_000;

  return async (req, res, path, search) => {
    if (path !== PACKAGE_UPLOAD_PATH) return false;
    if (req.method !== 'POST') {
      res.writeHead(405, { allow: 'POST', 'content-type': 'application/json; charset=utf-8' });
      res.end(JSON.stringify({ error: 'method_not_allowed', message: 'Upload packages with POST.' }));
      return true;
    }
    // The gateway set the request's correlation id on the answer already (the client's, or a new one).
    const correlationId = String(res.getHeader('x-correlation-id') ?? req.headers['x-correlation-id'] ?? '');
    const headers: Record<string, string> = { 'x-correlation-id': correlationId };
    for (const name of FORWARDED_REQUEST_HEADERS) {
      const value = req.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }

    await new Promise<void>((resolve) => {
      let settled = false;
      const done = () => {
        if (!settled) {
          settled = true;
          resolve();
        }
      };
      const upstream = send(
        {
          protocol: origin.protocol,
          hostname: origin.hostname,
          port: origin.port,
          method: 'POST',
          path: `${UPSTREAM_PATH}${search}`,
          headers,
        },
        (answer) => {
          const out: Record<string, string> = {};
          for (const name of FORWARDED_ANSWER_HEADERS) {
            const value = answer.headers[name];
            if (typeof value === 'string') out[name] = value;
          }
          // The catalog closes the connection after refusing a body it did not read: so does the client's.
          if (answer.headers.connection === 'close') out['connection'] = 'close';
          res.writeHead(answer.statusCode ?? 502, out);
          pipeline(answer, res).then(done, (err: unknown) => {
            opts.log.warn('package upload answer broke off', { error: err });
            res.destroy();
            done();
          });
        },
      );
      upstream.setTimeout(idleTimeoutMs, () =>
        upstream.destroy(new Error(`no progress for ${idleTimeoutMs} ms`)),
      );
      upstream.on('error', (err) => {
        req.unpipe(upstream);
        req.resume(); // what the client still sends is read and dropped
        if (res.headersSent) return; // the answer's own pipeline ends or breaks the response
        opts.log.warn('package upload not forwarded', { error: err });
        unavailable(res, correlationId, err.message);
        done();
      });
      // The client went away mid-upload: the catalog sees the upload break off and keeps nothing.
      req.on('close', () => {
        if (!req.complete) upstream.destroy(new Error('the client aborted the upload'));
      });
      req.pipe(upstream);
    });
    return true;
  };
}

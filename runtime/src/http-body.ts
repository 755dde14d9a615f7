/** Reading a request body with a hard size limit, and writing JSON answers. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { classifyDatabaseError } from './db/errors.js';
import { AppError, httpStatusOf } from './errors.js';
import type { Logger } from './log.js';

export async function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) throw tooLarge(maxBytes);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) {
      req.resume();
      throw tooLarge(maxBytes);
    }
    chunks.push(chunk);
  }
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
}

function tooLarge(maxBytes: number): AppError {
  return new AppError(
    'PAYLOAD_TOO_LARGE',
    `The request body is over the limit of ${maxBytes} bytes. Send less per request (see capabilities.limits).`,
    { maxBodyBytes: maxBytes },
  );
}

/**
 * Whether a POST's Content-Type is application/json (any parameters, e.g. charset). GraphQL over HTTP bodies are JSON;
 * anything else (text/plain, a form, no type at all: what a browser may send cross-site without a preflight) is
 * refused with 415 before the body is read, whatever it holds, so such a request never runs an operation.
 */
export function isJsonContentType(contentType: string | undefined): boolean {
  return (contentType ?? '').split(';')[0]!.trim().toLowerCase() === 'application/json';
}

/** The refusal of a POST that is not application/json (send it with status 415 Unsupported Media Type). */
export function unsupportedMediaType(): AppError {
  return new AppError(
    'BAD_USER_INPUT',
    'GraphQL requests are POSTed as JSON: send Content-Type: application/json with {"query": "...", "variables": {...}}.',
  );
}

export function parseJsonBody(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    throw new AppError(
      'GRAPHQL_PARSE_FAILED',
      'The request body is not valid JSON. Send {"query": "...", "variables": {...}} with Content-Type: application/json.',
    );
  }
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
  contentType = 'application/json; charset=utf-8',
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': contentType,
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

/**
 * Errors in the GraphQL document or its variables, as opposed to the HTTP request around them: the query does not
 * parse, does not validate, or its variables do not coerce. GraphQL over HTTP: a client that accepts only the
 * legacy `application/json` gets these with status 200 (it reads `errors`), one that accepts
 * `application/graphql-response+json` (every SDK) with 400. A body that is not JSON stays 400 for both.
 */
const documentErrors = new WeakSet<AppError>();
export function documentError(err: AppError): AppError {
  documentErrors.add(err);
  return err;
}

/** Whether the client accepts `application/graphql-response+json` (else it gets the legacy `application/json`). */
export function acceptsGraphQLResponseJson(accept: string | null | undefined): boolean {
  return (accept ?? '').toLowerCase().includes('application/graphql-response+json');
}

/** A request-level error answer in the GraphQL-over-HTTP shape, with the status from the error table. */
export function sendRequestError(
  res: ServerResponse,
  err: AppError,
  status: number,
  correlationId: string,
): void {
  const extensions: Record<string, unknown> = { ...err.extensions, correlationId };
  const headers: Record<string, string> = {};
  if (status === 400 && documentErrors.has(err) && !acceptsGraphQLResponseJson(res.req?.headers.accept))
    status = 200;
  const retryAfterMs = extensions['retryAfterMs'];
  if (typeof retryAfterMs === 'number') headers['retry-after'] = String(Math.ceil(retryAfterMs / 1000));
  sendJson(res, status, { errors: [{ message: err.message, extensions }] }, headers, graphqlContentType(res));
}

export const GRAPHQL_RESPONSE_JSON = 'application/graphql-response+json; charset=utf-8';

function graphqlContentType(res: ServerResponse): string {
  return acceptsGraphQLResponseJson(res.req?.headers.accept)
    ? GRAPHQL_RESPONSE_JSON
    : 'application/json; charset=utf-8';
}

/**
 * Answers an error thrown while handling a request: an AppError with its code's status, a failed database call as
 * classifyDatabaseError codes it (db/errors.ts), anything else masked as INTERNAL_SERVER_ERROR naming the correlation
 * id (and logged). After the headers went out, the socket is dropped.
 */
export function sendThrown(
  res: ServerResponse,
  err: unknown,
  correlationId: string,
  log: Logger,
  path: string,
): void {
  // The database unreachable: 503 with Retry-After; a character it cannot store: 400 (db/errors.ts).
  const database = res.headersSent || err instanceof AppError ? null : classifyDatabaseError(err);
  if (res.headersSent) {
    log.warn('response failed after headers were sent', { path, error: err });
    res.destroy();
  } else if (err instanceof AppError) {
    sendRequestError(res, err, httpStatusOf(err.code), correlationId);
  } else if (database) {
    log.warn('database call failed', { path, code: database.code, error: err });
    sendRequestError(res, database, httpStatusOf(database.code), correlationId);
  } else {
    log.error('request failed', { path, error: err });
    sendRequestError(
      res,
      new AppError('INTERNAL_SERVER_ERROR', `Internal server error. Report correlation id ${correlationId}.`),
      500,
      correlationId,
    );
  }
}

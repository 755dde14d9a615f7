/**
 * GET /metrics on the gateway's and every subgraph's own port (docs/operations.md#metrics). Who may scrape:
 *  - with METRICS_TOKEN set: a request with `Authorization: Bearer <METRICS_TOKEN>`, from anywhere, in any mode;
 *  - without it: in development a request from loopback; in production nobody (403 saying to set METRICS_TOKEN).
 * A wrong or missing token is 401 (never a hint of the token), any other method 405.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Config } from '../config.js';
import { sendRequestError } from '../http-body.js';
import { AppError } from '../errors.js';
import type { Metrics } from './registry.js';

export const METRICS_PATH = '/metrics';

const LOOPBACK = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1']);

const digest = (s: string) => createHash('sha256').update(s).digest();

function bearerMatches(header: string | undefined, token: string): boolean {
  if (!header?.startsWith('Bearer ')) return false;
  return timingSafeEqual(digest(header.slice(7).trim()), digest(token));
}

/** null when the request may scrape; else the refusal (status, error). */
function refusal(
  req: IncomingMessage,
  config: Pick<Config, 'mode' | 'metricsToken'>,
): [number, AppError] | null {
  if (config.metricsToken) {
    return bearerMatches(req.headers.authorization, config.metricsToken)
      ? null
      : [
          401,
          new AppError('UNAUTHENTICATED', 'Scraping /metrics needs "Authorization: Bearer <METRICS_TOKEN>".'),
        ];
  }
  if (config.mode === 'development' && LOOPBACK.has(req.socket.remoteAddress ?? '')) return null;
  return [
    403,
    new AppError(
      'FORBIDDEN',
      config.mode === 'production'
        ? '/metrics is closed in production until METRICS_TOKEN is set; scrape with "Authorization: Bearer <METRICS_TOKEN>".'
        : '/metrics answers loopback only unless METRICS_TOKEN is set.',
    ),
  ];
}

/** Answers GET /metrics with the registry's text exposition, or refuses (see the file comment). */
export async function serveMetrics(
  req: IncomingMessage,
  res: ServerResponse,
  metrics: Metrics,
  config: Pick<Config, 'mode' | 'metricsToken'>,
  correlationId: string,
): Promise<void> {
  req.resume();
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { allow: 'GET, HEAD' }).end();
    return;
  }
  const refused = refusal(req, config);
  if (refused) {
    if (refused[0] === 401) res.setHeader('www-authenticate', 'Bearer realm="metrics"');
    sendRequestError(res, refused[1], refused[0], correlationId);
    return;
  }
  const text = await metrics.scrape();
  res.writeHead(200, {
    'content-type': metrics.registry.contentType,
    'cache-control': 'no-store',
    'content-length': Buffer.byteLength(text),
  });
  res.end(req.method === 'HEAD' ? undefined : text);
}

/** What every page handler gets: the subgraph's dependencies, an injectable clock and randomness, the OAuth service. */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  AppError,
  currentCorrelationId,
  httpStatusOf,
  type Config,
  type Database,
  type Logger,
  type SubgraphDeps,
} from '@agentgraph/runtime';
import { oauthOptionsFrom } from '../oauth/options.js';
import { oauthServiceFor, type OAuthService } from '../oauth/service.js';
import { messagePage } from './html.js';
import { sendHtml } from './http.js';
import { readWebSession, type Random, type WebSession } from './sessions.js';

export interface WebOptions {
  /** The clock (tests pass a fake one). */
  now?: () => Date;
  random?: Random;
  /** The OAuth service; by default the one identity's routes share (oauthServiceFor). */
  oauth?: () => OAuthService;
}

export interface WebContext {
  config: Config;
  db: Database;
  log: Logger;
  now(): Date;
  random: Random;
  oauth(): OAuthService;
  session(req: IncomingMessage): Promise<WebSession | null>;
}

export function webContext(deps: SubgraphDeps, o: WebOptions = {}): WebContext {
  const now = o.now ?? (() => new Date());
  return {
    config: deps.config,
    db: deps.db,
    log: deps.log.child({ component: 'web' }),
    now,
    random: o.random ?? randomBytes,
    oauth: o.oauth ?? (() => oauthServiceFor(deps, oauthOptionsFrom(deps.config))),
    session: (req) => readWebSession(deps.db, deps.config, req, now()),
  };
}

/** Retry-After for RATE_LIMITED / SERVICE_UNAVAILABLE answers. */
export function retryHeaders(err: AppError): Record<string, string> {
  const ms = err.extensions['retryAfterMs'];
  return typeof ms === 'number' ? { 'retry-after': String(Math.max(1, Math.ceil(ms / 1000))) } : {};
}

export type PageHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

/**
 * Wraps a page: only the given methods (405 otherwise); an AppError nobody rendered becomes an HTML page with its
 * message and status; anything else is logged and answered with a generic page naming the correlation id.
 */
export function pageRoute(ctx: WebContext, methods: string[], handler: PageHandler): PageHandler {
  return async (req, res) => {
    if (!methods.includes(req.method ?? '')) {
      sendHtml(
        res,
        405,
        messagePage({
          title: 'Not available',
          paragraphs: [`This page answers ${methods.join(' and ')} only.`],
        }),
        { headers: { allow: methods.join(', ') } },
      );
      return;
    }
    try {
      await handler(req, res);
    } catch (err) {
      if (res.headersSent) throw err;
      if (err instanceof AppError) {
        const status = Number(err.extensions['httpStatus']) || httpStatusOf(err.code);
        const title =
          err.extensions['reason'] === 'csrf'
            ? 'The form could not be accepted'
            : err.code === 'RATE_LIMITED'
              ? 'Too many attempts'
              : 'This did not work';
        sendHtml(
          res,
          status,
          messagePage({
            title,
            hasError: true,
            paragraphs: [err.message],
            links: [{ href: req.url ?? '/', text: 'Try again' }],
          }),
          { headers: retryHeaders(err) },
        );
        return;
      }
      ctx.log.error('page failed', { path: (req.url ?? '').split('?')[0], error: err });
      sendHtml(
        res,
        500,
        messagePage({
          title: 'Something went wrong',
          hasError: true,
          paragraphs: [
            `The server could not finish this request. Try again in a moment; if it keeps happening, report the reference ${currentCorrelationId() ?? ''}.`,
          ],
        }),
      );
    }
  };
}

/**
 * The web console's server side, inside the gateway process: the built single-page app (static-site.ts) and its
 * token handler (token-handler.ts), and the package upload it forwards to the catalog service (package-upload.ts).
 * `createConsole` returns one route handler the gateway asks before answering 404.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Config, Logger } from '@agentgraph/runtime';
import { createPackageUpload } from './package-upload.js';
import { createStaticSite } from './static-site.js';
import { createTokenHandler } from './token-handler.js';

export interface ConsoleOptions {
  /** The built app (web/dist). */
  distDir: string;
  /** Identity's issuer URL. */
  issuer: string;
  /** The console's registered redirect URI (identity's OAUTH_CONSOLE_REDIRECT_URIS, first entry). */
  redirectUri: string;
  log: Logger;
  fetch?: typeof fetch;
  /** The catalog service's origin: `POST /catalog/packages` is forwarded to its `/packages` (none: 404). */
  catalogUrl?: string;
}

/** Answers a request when it is the console's (true), else leaves it alone (false). */
export type ConsoleRoutes = (
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  search: string,
) => Promise<boolean>;

/** The redirect URI the console signs in with: the first of identity's registered console redirect URIs. */
export function consoleRedirectUri(config: Pick<Config, 'oauth'>): string {
  const uri = config.oauth.consoleRedirectUris[0];
  if (!uri)
    throw new Error('OAUTH_CONSOLE_REDIRECT_URIS is empty: the console needs its /auth/callback URL there.');
  return uri;
}

export function createConsole(opts: ConsoleOptions): ConsoleRoutes {
  const site = createStaticSite(opts.distDir);
  const tokens = createTokenHandler({
    issuer: opts.issuer,
    redirectUri: opts.redirectUri,
    log: opts.log,
    ...(opts.fetch ? { fetch: opts.fetch } : {}),
  });
  const upload = opts.catalogUrl ? createPackageUpload({ catalogUrl: opts.catalogUrl, log: opts.log }) : null;
  return async (req, res, path, search) =>
    (await tokens.handle(req, res, path, search)) ||
    (upload !== null && (await upload(req, res, path, search))) ||
    site.serve(req, res, path);
}

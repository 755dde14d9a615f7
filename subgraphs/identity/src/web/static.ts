/** GET /static/identity.css — the pages' one stylesheet (read once at start). */
import { readFileSync } from 'node:fs';
import type { RouteHandler } from '@agentgraph/runtime';
import { STYLESHEET_PATH } from './html.js';

const CSS = readFileSync(new URL('./identity.css', import.meta.url));

export { STYLESHEET_PATH };

export function stylesheetRoute(): RouteHandler {
  return (req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-length': 0 });
      res.end();
      return;
    }
    res.writeHead(200, {
      'content-type': 'text/css; charset=utf-8',
      'content-length': CSS.length,
      'cache-control': 'public, max-age=3600',
      'x-content-type-options': 'nosniff',
    });
    res.end(req.method === 'HEAD' ? undefined : CSS);
  };
}

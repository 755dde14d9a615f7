/**
 * identity's server-rendered pages (see README.md here): sign-in, the OAuth login interaction, the device
 * verification page, sign-out, and their stylesheet. Mounted by exact path next to identity's other routes.
 */
import type { RouteHandler, SubgraphDeps } from '@agentgraph/runtime';
import { webContext, type WebOptions } from './context.js';
import { DEVICE_PAGE_PATH, deviceRoute } from './device-page.js';
import { INTERACTION_PAGE_PATH, interactionRoute } from './interaction-page.js';
import { SIGNIN_PATH, signInRoute } from './signin-page.js';
import { SIGNOUT_PATH, signOutRoute } from './signout-page.js';
import { STYLESHEET_PATH, stylesheetRoute } from './static.js';

export type { WebOptions };

export function webRoutes(deps: SubgraphDeps, options: WebOptions = {}): Record<string, RouteHandler> {
  const ctx = webContext(deps, options);
  return {
    [SIGNIN_PATH]: signInRoute(ctx),
    [INTERACTION_PAGE_PATH]: interactionRoute(ctx),
    [DEVICE_PAGE_PATH]: deviceRoute(ctx),
    [SIGNOUT_PATH]: signOutRoute(ctx),
    [STYLESHEET_PATH]: stylesheetRoute(),
  };
}

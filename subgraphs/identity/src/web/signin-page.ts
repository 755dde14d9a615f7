/**
 * GET/POST /signin — sign in to identity's pages (the device verification page needs it). `next` (a path on this
 * origin only) is where the browser goes afterwards; without it, this page shows who is signed in.
 */
import type { RouteHandler } from '@agentgraph/runtime';
import { pageRoute, type WebContext } from './context.js';
import { checkPost } from './csrf.js';
import { html, page } from './html.js';
import { queryOf, readForm, redirect, safeNext, sendHtml } from './http.js';
import { renderSignIn, submitSignIn, type SignInView } from './sign-in-flow.js';

export const SIGNIN_PATH = '/signin';

export function signInRoute(ctx: WebContext): RouteHandler {
  return pageRoute(ctx, ['GET', 'HEAD', 'POST'], async (req, res) => {
    const next = safeNext(queryOf(req).get('next'));
    const view: SignInView = {
      action: next ? `${SIGNIN_PATH}?next=${encodeURIComponent(next)}` : SIGNIN_PATH,
      formPath: SIGNIN_PATH,
      heading: 'Sign in',
      intro: 'Sign in with the e-mail address and password of your agentgraph account.',
    };
    const session = await ctx.session(req);
    if (req.method === 'POST') {
      const form = await readForm(req);
      const secret = checkPost(ctx.config, req, form, SIGNIN_PATH, session, { preSession: true });
      const member = await submitSignIn(ctx, req, res, form, view, secret, session);
      if (member) redirect(res, next ?? SIGNIN_PATH);
      return;
    }
    if (session && next) return redirect(res, next);
    if (session) {
      sendHtml(
        res,
        200,
        page({
          title: 'Signed in',
          session,
          body: html`<h1>You are signed in</h1>
            <p>
              You are signed in as <strong>${session.displayName}</strong> (${session.email}) in the tenant
              <strong>${session.tenantName}</strong> as ${session.role.toLowerCase()}.
            </p>
            <p>
              To connect a desktop, open <a href="/device">the device page</a> and enter the code it shows.
            </p>
            <p><a href="/signout">Sign out</a></p>`,
        }),
      );
      return;
    }
    renderSignIn(ctx, req, res, view, {}, null);
  });
}

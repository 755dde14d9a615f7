/**
 * GET/POST /signout — GET asks (a link must not sign anyone out: that would be a cross-site request), POST with the
 * CSRF token deletes the session row, clears the cookie, and ends the OAuth provider's browser session as well
 * (so the next authorization request asks for the password again).
 */
import type { RouteHandler } from '@agentgraph/runtime';
import { pageRoute, type WebContext } from './context.js';
import { checkOrigin, checkPost, csrfToken, CSRF_FIELD } from './csrf.js';
import { hidden, html, messagePage, page } from './html.js';
import { readForm, sendHtml } from './http.js';
import { endWebSession } from './sessions.js';

export const SIGNOUT_PATH = '/signout';

export function signOutRoute(ctx: WebContext): RouteHandler {
  return pageRoute(ctx, ['GET', 'HEAD', 'POST'], async (req, res) => {
    const session = await ctx.session(req);
    if (req.method === 'POST') {
      const form = await readForm(req);
      if (session) checkPost(ctx.config, req, form, SIGNOUT_PATH, session, { preSession: false });
      else checkOrigin(ctx.config, req, SIGNOUT_PATH);
      await endWebSession(ctx.db, ctx.config, req, res);
      await endProviderSession(ctx, req, res);
      if (session) ctx.log.info('signed out', { userId: session.userId, tenantId: session.tenantId });
      sendHtml(
        res,
        200,
        messagePage({
          title: 'You have signed out',
          paragraphs: ['You have signed out of agentgraph in this browser.'],
          links: [{ href: '/signin', text: 'Sign in again' }],
        }),
      );
      return;
    }
    if (!session) {
      sendHtml(
        res,
        200,
        messagePage({
          title: 'You are not signed in',
          paragraphs: ['Nobody is signed in to agentgraph in this browser.'],
          links: [{ href: '/signin', text: 'Sign in' }],
        }),
      );
      return;
    }
    sendHtml(
      res,
      200,
      page({
        title: 'Sign out',
        session,
        body: html`<h1>Sign out</h1>
          <p>Sign out of agentgraph in this browser? Desktops you have connected stay connected.</p>
          <form method="post" action="${SIGNOUT_PATH}">
            ${hidden(CSRF_FIELD, csrfToken(session.csrfSecret, SIGNOUT_PATH))}
            <div class="actions"><button type="submit">Sign out</button></div>
          </form>`,
      }),
    );
  });
}

/** Ends oidc-provider's own browser session (its `_session` cookie), if there is one. Failure only logs. */
async function endProviderSession(
  ctx: WebContext,
  req: Parameters<RouteHandler>[0],
  res: Parameters<RouteHandler>[1],
): Promise<void> {
  try {
    const oauth = ctx.oauth();
    await oauth.ready;
    const provider = oauth.provider;
    const session = await provider.Session.get(provider.createContext(req, res));
    if (session.accountId) await session.destroy();
  } catch (error) {
    ctx.log.warn('could not end the OAuth browser session', { error });
  }
}

/**
 * GET/POST /interaction?uid=… — oidc-provider's login step of authorization code + PKCE. The provider sends the
 * browser here with its interaction cookie; a browser already signed in to identity (our session, and no
 * prompt=login / max_age asking for a fresh sign-in) goes straight on, others sign in with the form. Then the grant
 * is created for the member (tenant from the session) and the provider finishes the authorization (303 back to
 * it, then to the client's redirect URI). First-party clients only, so there is no consent screen.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { withTenant, type RouteHandler } from '@agentgraph/runtime';
import { CONSOLE_CLIENT_ID } from '../oauth/constants.js';
import { createGrant } from '../oauth/grants.js';
import type { OAuthService } from '../oauth/service.js';
import { pageRoute, type WebContext } from './context.js';
import { checkPost } from './csrf.js';
import { messagePage } from './html.js';
import { queryOf, readForm, sendHtml } from './http.js';
import type { WebSession } from './sessions.js';
import { renderSignIn, submitSignIn, type SignedInMember, type SignInView } from './sign-in-flow.js';
import { membershipsOf } from './sign-in.js';

export const INTERACTION_PAGE_PATH = '/interaction';

/** Browser clients that sign users in here without a consent screen (all first-party). */
const FIRST_PARTY_BROWSER_CLIENTS = new Set([CONSOLE_CLIENT_ID]);

type Interaction = Awaited<ReturnType<OAuthService['provider']['interactionDetails']>>;

function expiredPage(res: ServerResponse): void {
  sendHtml(
    res,
    400,
    messagePage({
      title: 'This sign-in request has expired',
      hasError: true,
      paragraphs: [
        'This sign-in request is no longer valid: it expired, was already used, or was started in another browser. ' +
          'Go back to the application and sign in again from there.',
      ],
    }),
  );
}

/** The provider's interaction for this browser, or null (after answering) when it is missing or not this uid. */
async function interactionOf(
  oauth: OAuthService,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<Interaction | null> {
  const uid = queryOf(req).get('uid');
  let details: Interaction;
  try {
    details = await oauth.provider.interactionDetails(req, res);
  } catch (err) {
    if ((err as { name?: string }).name === 'SessionNotFound') {
      expiredPage(res);
      return null;
    }
    throw err;
  }
  if (!uid || details.uid !== uid) {
    expiredPage(res);
    return null;
  }
  return details;
}

function wantsFreshSignIn(details: Interaction): boolean {
  const reasons = details.prompt.reasons ?? [];
  return reasons.includes('login_prompt') || reasons.includes('max_age');
}

async function finish(
  ctx: WebContext,
  oauth: OAuthService,
  req: IncomingMessage,
  res: ServerResponse,
  details: Interaction,
  member: SignedInMember,
): Promise<void> {
  const role = (await membershipsOf(ctx.db, member.userId)).find((m) => m.tenantId === member.tenantId)?.role;
  if (!role) throw new Error('the member signed in a moment ago has no membership any more');
  const clientId = String(details.params['client_id']);
  const scopes = String(details.params['scope'] ?? '')
    .split(' ')
    .filter(Boolean);
  const grantId = await withTenant(
    ctx.db,
    { tenantId: member.tenantId, principalId: member.userId, role, scopes: [] },
    (tx) => createGrant(oauth, tx, { tenantId: member.tenantId, userId: member.userId, clientId, scopes }),
  );
  ctx.log.info('authorization granted', { userId: member.userId, tenantId: member.tenantId, clientId });
  await oauth.provider.interactionFinished(
    req,
    res,
    { login: { accountId: member.userId }, consent: { grantId } },
    { mergeWithLastSubmission: false },
  );
}

export function interactionRoute(ctx: WebContext): RouteHandler {
  return pageRoute(ctx, ['GET', 'POST'], async (req, res) => {
    const oauth = ctx.oauth();
    await oauth.ready;
    const details = await interactionOf(oauth, req, res);
    if (!details) return;
    const clientId = String(details.params['client_id'] ?? '');
    if (!FIRST_PARTY_BROWSER_CLIENTS.has(clientId)) {
      sendHtml(
        res,
        400,
        messagePage({
          title: 'This application cannot sign you in here',
          hasError: true,
          paragraphs: [
            'Only the agentgraph web console signs in with this page. Go back and use the console.',
          ],
        }),
      );
      return;
    }
    // Chrome applies form-action to the redirects after a post: allow the client's (already validated) redirect URI.
    const redirectUri = String(details.params['redirect_uri'] ?? '');
    const view: SignInView = {
      action: `${INTERACTION_PAGE_PATH}?uid=${encodeURIComponent(details.uid)}`,
      formPath: INTERACTION_PAGE_PATH,
      heading: 'Sign in to the agentgraph console',
      cancel: true,
      formTargets: URL.canParse(redirectUri) ? [new URL(redirectUri).origin] : [],
    };
    const session: WebSession | null = await ctx.session(req);

    if (req.method === 'GET') {
      if (session && !wantsFreshSignIn(details)) {
        return finish(ctx, oauth, req, res, details, { userId: session.userId, tenantId: session.tenantId });
      }
      renderSignIn(ctx, req, res, view, {}, session);
      return;
    }

    const form = await readForm(req);
    const secret = checkPost(ctx.config, req, form, INTERACTION_PAGE_PATH, session, { preSession: true });
    if (form.get('action') === 'cancel') {
      await oauth.provider.interactionFinished(
        req,
        res,
        { error: 'access_denied', error_description: 'the user cancelled the sign-in' },
        { mergeWithLastSubmission: false },
      );
      return;
    }
    const member = await submitSignIn(ctx, req, res, form, view, secret, session);
    if (member) await finish(ctx, oauth, req, res, details, member);
  });
}

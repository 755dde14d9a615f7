/**
 * The sign-in form and its POST, shared by /signin and /interaction (the OAuth login step): e-mail + password, then,
 * for a member of several tenants, a choice of tenant. On success a web session starts (cookie set on the
 * response) and the member is returned; on failure the form is shown again with the error tied to its field.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { AppError, httpStatusOf } from '@agentgraph/runtime';
import { retryHeaders, type WebContext } from './context.js';
import { clearCsrfCookie, csrfToken, CSRF_FIELD, formSecret } from './csrf.js';
import { errorSummary, field, hidden, html, page, type SafeHtml } from './html.js';
import { clientAddress, sendHtml } from './http.js';
import { startWebSession, type WebSession } from './sessions.js';
import {
  authenticate,
  membershipsOf,
  pendingToken,
  verifyPendingToken,
  type SignInMembership,
} from './sign-in.js';

export interface SignInView {
  /** Where the form posts, with its query (e.g. "/interaction?uid=…"). */
  action: string;
  /** The path the CSRF token is bound to ("/signin", "/interaction"). */
  formPath: string;
  heading: string;
  intro?: string | SafeHtml;
  /** Offer "Cancel" (the OAuth login step: the client gets access_denied). */
  cancel?: boolean;
  /** Extra origins the post may end up at (CSP form-action; the OAuth client's redirect URI). */
  formTargets?: string[];
}

export interface SignedInMember {
  userId: string;
  tenantId: string;
}

interface FormState {
  email?: string;
  error?: AppError | null;
}

const FIELD_OF: Record<string, 'email' | 'password'> = { email: 'email', password: 'password' };

/** Shows the e-mail + password form (status 200, or the error's status). */
export function renderSignIn(
  ctx: WebContext,
  req: IncomingMessage,
  res: ServerResponse,
  view: SignInView,
  state: FormState,
  session: WebSession | null,
): void {
  const secret = formSecret(ctx.config, req, res, session, ctx.random);
  const err = state.error ?? null;
  const errorField = err
    ? (FIELD_OF[String(err.extensions['field'])] ?? (err.code === 'UNAUTHENTICATED' ? 'password' : null))
    : null;
  const body = html`<h1>${view.heading}</h1>
    ${view.intro ? html`<p>${view.intro}</p>` : ''} ${errorSummary(err?.message, errorField)}
    <form method="post" action="${view.action}" novalidate>
      ${hidden(CSRF_FIELD, csrfToken(secret, view.formPath))}
      ${field({
        id: 'email',
        name: 'email',
        label: 'E-mail address',
        type: 'email',
        value: state.email ?? '',
        autocomplete: 'username',
        required: true,
        error: errorField === 'email' ? err!.message : null,
        attributes: { spellcheck: 'false', autocapitalize: 'none' },
      })}
      ${field({
        id: 'password',
        name: 'password',
        label: 'Password',
        type: 'password',
        autocomplete: 'current-password',
        required: true,
        error: errorField === 'password' ? err!.message : null,
      })}
      <div class="actions">
        <button type="submit" name="action" value="sign-in">Sign in</button>
        ${view.cancel ? html`<button type="submit" name="action" value="cancel" class="secondary" formnovalidate>Cancel</button>` : ''}
      </div>
    </form>`;
  sendHtml(
    res,
    err ? Number(err.extensions['httpStatus']) || httpStatusOf(err.code) : 200,
    page({ title: view.heading, hasError: !!err, session, body }),
    { formTargets: view.formTargets, headers: err ? retryHeaders(err) : {} },
  );
}

function renderChooseTenant(
  ctx: WebContext,
  res: ServerResponse,
  view: SignInView,
  secret: Buffer,
  pending: string,
  tenants: SignInMembership[],
  error: string | null,
): void {
  const body = html`<h1>Choose a tenant</h1>
${errorSummary(error, error ? 'tenant-0' : null)}
<form method="post" action="${view.action}">
${hidden(CSRF_FIELD, csrfToken(secret, view.formPath))}
${hidden('pending', pending)}
<fieldset${error ? html` aria-describedby="tenant-error"` : ''}>
<legend>You are a member of several tenants. Which one do you want to work in?</legend>
${error ? html`<p class="error" id="tenant-error"><span class="visually-hidden">Error: </span>${error}</p>` : ''}
${tenants.map(
  (t, i) =>
    html`<div class="choice">
      <input
        type="radio"
        id="tenant-${i}"
        name="tenant_id"
        value="${t.tenantId}"
        ${i === 0 && !error ? html` checked` : ''}
      />
      <label for="tenant-${i}">${t.tenantName} <span class="role">(${t.role.toLowerCase()})</span></label>
    </div>`,
)}
</fieldset>
<div class="actions"><button type="submit" name="action" value="sign-in">Continue</button></div>
</form>`;
  sendHtml(res, error ? 400 : 200, page({ title: 'Choose a tenant', hasError: !!error, body }), {
    formTargets: view.formTargets,
  });
}

/**
 * Handles a sign-in POST whose CSRF check passed (`secret` is the secret that verified it). Returns the member
 * signed in (the session cookie is set on `res`), or null after showing the form again (error, or tenant choice).
 */
export async function submitSignIn(
  ctx: WebContext,
  req: IncomingMessage,
  res: ServerResponse,
  form: URLSearchParams,
  view: SignInView,
  secret: Buffer,
  session: WebSession | null,
): Promise<SignedInMember | null> {
  const now = ctx.now();
  const keys = ctx.config.oauth.cookieKeys;
  let member: SignedInMember;
  const pending = form.get('pending');
  if (pending !== null) {
    // Second step: the password was checked; the browser picks one of the user's tenants.
    const userId = verifyPendingToken(keys, pending, secret, now);
    if (!userId) {
      renderSignIn(
        ctx,
        req,
        res,
        view,
        {
          error: new AppError('UNAUTHENTICATED', 'That took too long. Sign in again.'),
        },
        session,
      );
      return null;
    }
    const tenants = await membershipsOf(ctx.db, userId);
    const chosen = tenants.find((t) => t.tenantId === form.get('tenant_id'));
    if (!chosen) {
      renderChooseTenant(ctx, res, view, secret, pending, tenants, 'Choose one of the tenants listed.');
      return null;
    }
    member = { userId, tenantId: chosen.tenantId };
  } else {
    const email = form.get('email') ?? '';
    let who;
    try {
      who = await authenticate(
        ctx.db,
        { email, password: form.get('password') ?? '', address: clientAddress(req) },
        now,
      );
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      renderSignIn(ctx, req, res, view, { email, error: err }, session);
      return null;
    }
    const requested = form.get('tenant_id');
    const chosen =
      who.memberships.find((m) => m.tenantId === requested) ??
      (who.memberships.length === 1 ? who.memberships[0] : undefined);
    if (!chosen) {
      renderChooseTenant(
        ctx,
        res,
        view,
        secret,
        pendingToken(keys, who.userId, secret, now),
        who.memberships,
        null,
      );
      return null;
    }
    member = { userId: who.userId, tenantId: chosen.tenantId };
  }
  await startWebSession(ctx.db, ctx.config, req, res, member, now, ctx.random);
  clearCsrfCookie(ctx.config, res);
  ctx.log.info('signed in', { userId: member.userId, tenantId: member.tenantId });
  return member;
}

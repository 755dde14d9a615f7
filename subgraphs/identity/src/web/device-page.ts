/**
 * GET/POST /device — the RFC 8628 verification page (verification_uri; verification_uri_complete adds
 * ?user_code=…). A signed-in member enters (or confirms the prefilled) code, sees what is asking — application,
 * device name, platform, key thumbprint, access, expiry — and approves or denies. Every step that touches a code is a
 * POST with the CSRF token: a link alone can neither approve nor spend the member's wrong-code allowance (5 in 15
 * minutes per member, 20 per client address; a right code does not reset them). Codes are accepted in any case, with
 * or without the dash.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  AppError,
  badInput,
  httpStatusOf,
  withTenant,
  type Queryable,
  type RouteHandler,
} from '@agentgraph/runtime';
import {
  approveDeviceAuthorization,
  denyDeviceAuthorization,
  findDeviceAuthorization,
  normalizeUserCode,
  withUserCodeGuard,
  type DeviceAuthorizationView,
} from '../oauth/device-approval.js';
import { pageRoute, retryHeaders, type WebContext } from './context.js';
import { checkPost, csrfToken, CSRF_FIELD } from './csrf.js';
import { errorSummary, field, hidden, html, messagePage, page } from './html.js';
import { clientAddress, queryOf, readForm, redirect, sendHtml } from './http.js';
import { authOf, type WebSession } from './sessions.js';
import { SIGNIN_PATH } from './signin-page.js';

export const DEVICE_PAGE_PATH = '/device';

/** RFC 8628 §6.1 base-20 alphabet (no vowels, no look-alikes), 8 characters. */
const USER_CODE = /^[BCDFGHJKLMNPQRSTVWXZ]{8}$/;

/** "bcdf ghjk", "BCDF-GHJK" → "BCDF-GHJK"; throws BAD_USER_INPUT (field user_code) when it cannot be a code. */
export function canonicalUserCode(input: string): string {
  const code = normalizeUserCode(input);
  if (!code) throw badInput('Enter the code shown on your device.', { field: 'user_code' });
  if (!USER_CODE.test(code)) {
    throw badInput(
      'Codes are 8 letters, like BCDF-GHJK (no vowels and no digits). Check the code on your device.',
      { field: 'user_code' },
    );
  }
  return `${code.slice(0, 4)}-${code.slice(4)}`;
}

const SCOPE_TEXT: Record<string, string> = {
  openid: 'Know who you are',
  offline_access: 'Stay connected until you revoke it (refresh tokens)',
  'api:read': 'Read data in your tenant',
  'api:write': 'Make changes in your tenant',
};

const PLATFORM_TEXT: Record<string, string> = { windows: 'Windows', macos: 'macOS', linux: 'Linux' };

function entryForm(res: ServerResponse, session: WebSession, code: string, error: AppError | null): void {
  const body = html`<h1>Connect a device</h1>
    <p>Enter the code your desktop shows to connect it to <strong>${session.tenantName}</strong>.</p>
    ${errorSummary(error?.message, error ? 'user_code' : null)}
    <form method="post" action="${DEVICE_PAGE_PATH}" novalidate>
      ${hidden(CSRF_FIELD, csrfToken(session.csrfSecret, DEVICE_PAGE_PATH))}
      ${field({
        id: 'user_code',
        name: 'user_code',
        label: 'Code shown on your device',
        hint: '8 letters, like BCDF-GHJK. Upper or lower case, with or without the dash.',
        value: code,
        autocomplete: 'off',
        required: true,
        error: error?.message ?? null,
        attributes: { autocapitalize: 'characters', spellcheck: 'false', maxlength: '20' },
      })}
      <div class="actions"><button type="submit" name="action" value="lookup">Continue</button></div>
    </form>`;
  const status = error ? Number(error.extensions['httpStatus']) || httpStatusOf(error.code) : 200;
  sendHtml(res, status, page({ title: 'Connect a device', hasError: !!error, session, body }), {
    headers: error ? retryHeaders(error) : {},
  });
}

function confirmation(
  res: ServerResponse,
  session: WebSession,
  view: DeviceAuthorizationView,
  now: Date,
): void {
  const minutes = Math.max(0, Math.round((view.expiresAt.getTime() - now.getTime()) / 60_000));
  const body = html`<h1>Approve this device?</h1>
    <p class="warning">
      <strong
        >Only approve if you started this on your own device just now and it shows the code
        ${view.userCode}.</strong
      >
      Approving lets this device act for you in <strong>${session.tenantName}</strong>.
    </p>
    <dl class="summary">
      <dt>Code</dt>
      <dd>${view.userCode}</dd>
      <dt>Application</dt>
      <dd>${view.clientName}</dd>
      <dt>Device name</dt>
      <dd>${view.deviceName}</dd>
      <dt>Platform</dt>
      <dd>${PLATFORM_TEXT[view.platform] ?? view.platform}</dd>
      <dt>Device key thumbprint</dt>
      <dd><code>${view.keyThumbprint}</code></dd>
      <dt>Access it asks for</dt>
      <dd>
        <ul>
          ${view.scopes.map((s) => html`<li>${SCOPE_TEXT[s] ?? s} <span class="scope">(${s})</span></li>`)}
        </ul>
      </dd>
      <dt>Request expires</dt>
      <dd>
        <time datetime="${view.expiresAt.toISOString()}"
          >in ${minutes === 1 ? '1 minute' : `${minutes} minutes`}
          (${view.expiresAt.toISOString().slice(11, 16)} UTC)</time
        >
      </dd>
    </dl>
    <form method="post" action="${DEVICE_PAGE_PATH}">
      ${hidden(CSRF_FIELD, csrfToken(session.csrfSecret, DEVICE_PAGE_PATH))}
      ${hidden('user_code', view.userCode)}
      <div class="actions">
        <button type="submit" name="action" value="approve">Approve</button>
        <button type="submit" name="action" value="deny" class="secondary">Deny</button>
      </div>
    </form>`;
  sendHtml(res, 200, page({ title: 'Approve this device?', session, body }));
}

function signInFirst(req: IncomingMessage, res: ServerResponse): void {
  const code = queryOf(req).get('user_code');
  const back = code ? `${DEVICE_PAGE_PATH}?user_code=${encodeURIComponent(code)}` : DEVICE_PAGE_PATH;
  redirect(res, `${SIGNIN_PATH}?next=${encodeURIComponent(back)}`);
}

export function deviceRoute(ctx: WebContext): RouteHandler {
  return pageRoute(ctx, ['GET', 'HEAD', 'POST'], async (req, res) => {
    const session = await ctx.session(req);
    if (!session) return signInFirst(req, res);
    if (req.method !== 'POST') {
      const given = queryOf(req).get('user_code') ?? '';
      let prefill = given.slice(0, 20);
      try {
        if (given) prefill = canonicalUserCode(given);
      } catch {
        // Shown as typed; the POST explains what is wrong with it.
      }
      entryForm(res, session, prefill, null);
      return;
    }

    const form = await readForm(req);
    checkPost(ctx.config, req, form, DEVICE_PAGE_PATH, session, { preSession: false });
    const typed = (form.get('user_code') ?? '').slice(0, 100);
    const action = form.get('action') ?? 'lookup';
    const auth = authOf(session);
    const oauth = ctx.oauth();
    try {
      const code = canonicalUserCode(typed);
      // The guard counts a wrong code against this member and this address (after the transaction rolled back) and
      // refuses a locked-out member or address before any work.
      const caller = { auth, address: clientAddress(req), now: ctx.now() };
      const inTenant = <T>(fn: (tx: Queryable) => Promise<T>) =>
        withUserCodeGuard(oauth, caller, () => withTenant(ctx.db, auth, fn));
      if (action === 'approve') {
        const { deviceId } = await inTenant((tx) => approveDeviceAuthorization(oauth, tx, auth, code));
        ctx.log.info('device approved', { deviceId, userId: session.userId, tenantId: session.tenantId });
        sendHtml(
          res,
          200,
          messagePage({
            title: 'Device connected',
            session,
            paragraphs: [
              'The device is approved and will finish connecting by itself in a few seconds. You can close this page.',
            ],
            links: [{ href: DEVICE_PAGE_PATH, text: 'Connect another device' }],
          }),
        );
      } else if (action === 'deny') {
        await inTenant((tx) => denyDeviceAuthorization(oauth, tx, auth, code));
        ctx.log.info('device request denied', { userId: session.userId, tenantId: session.tenantId });
        sendHtml(
          res,
          200,
          messagePage({
            title: 'Request denied',
            session,
            paragraphs: ['The device was refused and cannot connect with this code.'],
            links: [{ href: DEVICE_PAGE_PATH, text: 'Connect a device' }],
          }),
        );
      } else {
        const view = await inTenant((tx) => findDeviceAuthorization(oauth, tx, auth, code));
        confirmation(res, session, view, ctx.now());
      }
    } catch (err) {
      if (!(err instanceof AppError) || err.code === 'INTERNAL_SERVER_ERROR') throw err;
      entryForm(res, session, typed, err);
    }
  });
}

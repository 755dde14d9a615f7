/**
 * The OAuth login interaction (/interaction) in authorization code + PKCE, over real HTTP against the real provider:
 * sign in on the form, straight through with an existing session, prompt=login, cancel, an expired interaction.
 * (The openid-client end-to-end tests of the whole flow live in test/oauth/.)
 */
import { createHash, randomBytes } from 'node:crypto';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accessibilityProblems, byTag, textOf } from './parse-html.js';
import { type Browser, csrfOf, startWeb, type WebHarness } from './harness.js';

const REDIRECT_URI = 'http://127.0.0.1:9/callback';

let h: WebHarness;
beforeAll(async () => {
  h = await startWeb();
});
afterAll(async () => {
  await h?.close();
});

function pkce() {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

async function authorize(b: Browser, extra: Record<string, string> = {}) {
  const { verifier, challenge } = pkce();
  const state = randomBytes(8).toString('hex');
  const q = new URLSearchParams({
    client_id: 'agentgraph-console',
    response_type: 'code',
    redirect_uri: REDIRECT_URI,
    scope: 'openid offline_access api:read api:write',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state,
    ...extra,
  });
  const res = await b.get(`/oauth/authorize?${q}`);
  expect(res.status).toBe(303);
  expect(res.location).toMatch(/^\/interaction\?uid=[A-Za-z0-9_-]+$/);
  return { verifier, state, interaction: res.location! };
}

/** Follows same-origin redirects until one leaves for the client's redirect URI; returns that URL. */
async function followToClient(b: Browser, location: string): Promise<URL> {
  let next = location;
  for (let hops = 0; hops < 5; hops++) {
    if (next.startsWith(REDIRECT_URI)) return new URL(next);
    const res = await b.get(next);
    expect(res.status).toBe(303);
    next = res.location!;
  }
  throw new Error('too many redirects');
}

async function redeem(code: string, verifier: string) {
  const res = await fetch(`${h.issuer}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT_URI,
      client_id: 'agentgraph-console',
      code_verifier: verifier,
    }).toString(),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as { access_token: string; refresh_token?: string };
}

describe('/interaction (authorization code + PKCE)', () => {
  it('signs in on the form and returns a code for the member’s tenant to the console', async () => {
    const ada = await h.user({ tenant: 'Acme', email: 'ada@acme.test' });
    const b = h.browser();
    // prompt=consent: OpenID Connect drops offline_access (refresh tokens) without it.
    const { verifier, state, interaction } = await authorize(b, { prompt: 'consent' });

    const form = await b.get(interaction);
    expect(form.status).toBe(200);
    const doc = form.doc();
    expect(accessibilityProblems(doc)).toEqual([]);
    expect(byTag(doc, 'form')[0]!.attrs['action']).toBe(interaction);
    expect(byTag(doc, 'button').map((x) => textOf(x))).toEqual(['Sign in', 'Cancel']);
    // Chrome applies form-action to the redirect after the post: the console's origin is allowed, nothing else.
    expect(form.headers.get('content-security-policy')).toContain("form-action 'self' http://127.0.0.1:9;");

    const wrong = await b.post(interaction, {
      csrf: csrfOf(form),
      email: ada.email,
      password: 'not the password',
    });
    expect(wrong.status).toBe(401);
    const ok = await b.post(interaction, { csrf: csrfOf(wrong), email: ada.email, password: ada.password });
    expect(ok.status).toBe(303);
    expect(b.cookie('ag_session')).toBeTruthy();
    const callback = await followToClient(b, ok.location!);
    expect(callback.searchParams.get('state')).toBe(state);
    const code = callback.searchParams.get('code')!;
    expect(code).toBeTruthy();

    const tokens = await redeem(code, verifier);
    expect(tokens.refresh_token).toBeTruthy();
    expect(decodeJwt(tokens.access_token)).toMatchObject({
      sub: ada.userId,
      tid: ada.tenantId,
      role: 'OWNER',
      client_id: 'agentgraph-console',
      aud: 'agentgraph',
    });
    const grants = await h.asOwner<{ tenant_id: string; user_id: string; client_id: string }>(
      'SELECT tenant_id, user_id, client_id FROM identity.oauth_grants WHERE user_id = $1',
      [ada.userId],
    );
    expect(grants).toEqual([
      { tenant_id: ada.tenantId, user_id: ada.userId, client_id: 'agentgraph-console' },
    ]);
  });

  it('goes straight through for a browser already signed in to identity, unless the client asks prompt=login', async () => {
    const bo = await h.user({ tenant: 'Bo', email: 'bo@bo.test' });
    const b = h.browser();
    const home = await b.get('/signin');
    expect(
      (await b.post('/signin', { csrf: csrfOf(home), email: bo.email, password: bo.password })).status,
    ).toBe(303);

    const { verifier, interaction } = await authorize(b);
    const through = await b.get(interaction);
    expect(through.status).toBe(303);
    const callback = await followToClient(b, through.location!);
    expect(
      decodeJwt((await redeem(callback.searchParams.get('code')!, verifier)).access_token),
    ).toMatchObject({
      sub: bo.userId,
      tid: bo.tenantId,
    });

    const again = await authorize(b, { prompt: 'login' });
    const fresh = await b.get(again.interaction);
    expect(fresh.status).toBe(200);
    expect(fresh.text).toContain('name="password"');

    // Signing out of identity ends the provider's browser session too: the next authorization asks again.
    const ask = await b.get('/signout');
    expect((await b.post('/signout', { csrf: csrfOf(ask) })).status).toBe(200);
    const after = await authorize(b);
    const form = await b.get(after.interaction);
    expect(form.status).toBe(200);
    expect(form.text).toContain('name="password"');
  });

  it('Cancel sends the console access_denied', async () => {
    const b = h.browser();
    const { state, interaction } = await authorize(b);
    const form = await b.get(interaction);
    const res = await b.post(interaction, { csrf: csrfOf(form), action: 'cancel' });
    expect(res.status).toBe(303);
    const callback = await followToClient(b, res.location!);
    expect(callback.searchParams.get('error')).toBe('access_denied');
    expect(callback.searchParams.get('state')).toBe(state);
  });

  it('explains an expired or foreign interaction instead of failing', async () => {
    const stranger = h.browser();
    const p = await stranger.get('/interaction?uid=nope');
    expect(p.status).toBe(400);
    expect(accessibilityProblems(p.doc())).toEqual([]);
    expect(p.text).toContain('This sign-in request has expired');

    // Another browser's uid with this browser's interaction cookie.
    const b = h.browser();
    await authorize(b);
    const mismatch = await b.get('/interaction?uid=someone-elses');
    expect(mismatch.status).toBe(400);
  });
});

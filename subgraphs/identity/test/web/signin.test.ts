/**
 * Sign-in, sessions, CSRF and sign-out over real HTTP, on PGlite or PostgreSQL: the page's HTML (parsed) and
 * headers, the session cookie's flags, lockout after 5 failures with the time to wait, tenant choice, and what the
 * database keeps (hashes only).
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordFailure, SIGN_IN_IP_POLICY } from '../../src/attempt-limiter.js';
import { CURRENT_PARAMS } from '../../src/passwords.js';
import { safeNext } from '../../src/web/http.js';
import { accessibilityProblems, byId, byTag, textOf } from './parse-html.js';
import { csrfOf, signIn, startWeb, type Page, type WebHarness } from './harness.js';

let h: WebHarness;
beforeAll(async () => {
  h = await startWeb();
});
afterAll(async () => {
  await h?.close();
});

const T0 = new Date('2031-03-01T09:00:00.000Z');

function expectPageHeaders(p: Page) {
  expect(p.headers.get('content-type')).toBe('text/html; charset=utf-8');
  const csp = p.headers.get('content-security-policy')!;
  expect(csp).toContain("default-src 'none'");
  expect(csp).toContain("style-src 'self'");
  expect(csp).toContain("form-action 'self'");
  expect(csp).toContain("frame-ancestors 'none'");
  expect(csp).not.toContain('unsafe-inline');
  expect(p.headers.get('x-content-type-options')).toBe('nosniff');
  expect(p.headers.get('referrer-policy')).toBe('same-origin');
  expect(p.headers.get('cache-control')).toBe('no-store');
}

function cookieLine(p: Page, name: string): string {
  const line = p.setCookies.find((l) => l.startsWith(`${name}=`));
  if (!line) throw new Error(`no Set-Cookie ${name} in ${JSON.stringify(p.setCookies)}`);
  return line;
}

describe('GET /signin', () => {
  it('is an accessible form: lang, title, one h1, labelled inputs, autocomplete hints, strict headers', async () => {
    const b = h.browser();
    const p = await b.get('/signin');
    expect(p.status).toBe(200);
    expectPageHeaders(p);
    const doc = p.doc();
    expect(accessibilityProblems(doc)).toEqual([]);
    expect(byTag(doc, 'html')[0]!.attrs['lang']).toBe('en');
    expect(textOf(byTag(doc, 'h1')[0]!)).toBe('Sign in');
    expect(byId(doc, 'email')!.attrs).toMatchObject({
      type: 'email',
      autocomplete: 'username',
      name: 'email',
    });
    expect(byId(doc, 'password')!.attrs).toMatchObject({
      type: 'password',
      autocomplete: 'current-password',
    });
    const form = byTag(doc, 'form')[0]!;
    expect(form.attrs).toMatchObject({ method: 'post', action: '/signin' });
    expect(byTag(doc, 'link')[0]!.attrs).toMatchObject({ rel: 'stylesheet', href: '/static/identity.css' });
    // The pre-session CSRF cookie: HttpOnly, SameSite=Lax, whole site, not Secure over http.
    const csrf = cookieLine(p, 'ag_csrf');
    expect(csrf).toMatch(/; Path=\/; SameSite=Lax; HttpOnly$/);
  });

  it('serves its stylesheet as text/css', async () => {
    const res = await fetch(`${h.issuer}/static/identity.css`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/css; charset=utf-8');
    expect(await res.text()).toContain(':focus-visible');
  });
});

describe('signing in', () => {
  it('starts an 8-hour session: HttpOnly, SameSite=Lax, Path=/ cookie; the database keeps only its SHA-256', async () => {
    const ada = await h.user({ tenant: 'Acme', email: 'ada@acme.test' });
    const b = h.browser();
    const p = await signIn(b, 'ADA@acme.test ', ada.password);
    expect(p.status).toBe(303);
    expect(p.location).toBe('/signin');
    const line = cookieLine(p, 'ag_session');
    expect(line).toMatch(
      /^ag_session=[A-Za-z0-9_-]{43}\.[A-Za-z0-9_-]{43}; Path=\/; SameSite=Lax; HttpOnly; Max-Age=28800$/,
    );
    expect(line).not.toContain('Secure');
    expect(cookieLine(p, 'ag_csrf')).toContain('Max-Age=0');

    const id = Buffer.from(b.cookie('ag_session')!.split('.')[0]!, 'base64url');
    const rows = await h.asOwner<{ id_hash: Uint8Array; user_id: string; tenant_id: string }>(
      'SELECT id_hash, user_id, tenant_id FROM identity.web_sessions WHERE user_id = $1',
      [ada.userId],
    );
    expect(rows).toHaveLength(1);
    expect(Buffer.from(rows[0]!.id_hash)).toEqual(createHash('sha256').update(id).digest());
    expect(rows[0]!.tenant_id).toBe(ada.tenantId);

    const home = await b.get('/signin');
    expect(home.status).toBe(200);
    expect(accessibilityProblems(home.doc())).toEqual([]);
    expect(home.text).toContain('You are signed in');
    expect(home.text).toContain('ada@acme.test');
    // Nothing about the password or the cookie reached the logs.
    expect(h.logs.join('\n')).not.toContain(ada.password);
    expect(h.logs.join('\n')).not.toContain(b.cookie('ag_session')!.split('.')[0]!);
  });

  it('goes to a same-origin `next` after signing in, and ignores any other', async () => {
    const bo = await h.user({ tenant: 'Bo Inc', email: 'bo@bo.test' });
    for (const [next, to] of [
      ['/device?user_code=BCDF-GHJK', '/device?user_code=BCDF-GHJK'],
      ['https://evil.test/x', '/signin'],
      ['//evil.test/x', '/signin'],
      ['/\\evil.test', '/signin'],
    ] as const) {
      const b = h.browser();
      const path = `/signin?next=${encodeURIComponent(next)}`;
      const form = await b.get(path);
      const p = await b.post(path, { csrf: csrfOf(form), email: bo.email, password: bo.password });
      expect(p.status).toBe(303);
      expect(p.location).toBe(to);
    }
    expect(safeNext('/device?user_code=x')).toBe('/device?user_code=x');
    for (const bad of ['', 'device', 'http://x', '//x', '/\\x', '/a\nb', null])
      expect(safeNext(bad)).toBeNull();
  });

  it('answers a wrong password and an unknown e-mail alike (401), with the error tied to the password field', async () => {
    await h.user({ tenant: 'Cy Ltd', email: 'cy@cy.test' });
    const answers = [];
    for (const email of ['cy@cy.test', 'nobody@cy.test']) {
      const b = h.browser();
      const p = await signIn(b, email, 'not the password');
      expect(p.status).toBe(401);
      expectPageHeaders(p);
      const doc = p.doc();
      expect(accessibilityProblems(doc)).toEqual([]);
      expect(textOf(byTag(doc, 'title')[0]!)).toMatch(/^Error: /);
      const pw = byId(doc, 'password')!;
      expect(pw.attrs['aria-invalid']).toBe('true');
      expect(textOf(byId(doc, pw.attrs['aria-describedby']!)!)).toContain(
        'e-mail address or password is wrong',
      );
      expect(byId(doc, 'email')!.attrs['value']).toBe(email);
      expect(p.text).not.toContain('not the password');
      expect(b.cookie('ag_session')).toBeUndefined();
      answers.push(textOf(byTag(doc, 'main')[0]!).replace(email, 'EMAIL'));
    }
    expect(answers[0]).toBe(answers[1]);
  });

  it('says which field is empty', async () => {
    const b = h.browser();
    const form = await b.get('/signin');
    const p = await b.post('/signin', { csrf: csrfOf(form), email: '', password: '' });
    expect(p.status).toBe(400);
    const email = byId(p.doc(), 'email')!;
    expect(email.attrs['aria-invalid']).toBe('true');
    expect(textOf(byId(p.doc(), email.attrs['aria-describedby']!)!)).toContain('Enter your e-mail address');
  });

  it('locks an e-mail after 5 failures: the 6th attempt, even with the right password, is refused with the wait', async () => {
    const dee = await h.user({ tenant: 'Dee', email: 'dee@dee.test' });
    h.clock.set(T0);
    try {
      const b = h.browser();
      for (let i = 1; i <= 4; i++) expect((await signIn(b, dee.email, `wrong guess ${i}`)).status).toBe(401);
      h.clock.advance(60_000);
      const fifth = await signIn(b, dee.email, 'wrong guess 5');
      expect(fifth.status).toBe(429);
      expect(fifth.headers.get('retry-after')).toBe('900');
      expect(fifth.text).toContain('Wait 15 minutes');

      h.clock.advance(5 * 60_000);
      const sixth = await signIn(b, dee.email, dee.password);
      expect(sixth.status).toBe(429);
      expect(sixth.headers.get('retry-after')).toBe('600');
      expect(textOf(byTag(sixth.doc(), 'main')[0]!)).toContain(
        'Too many failed attempts. Wait 10 minutes and try again.',
      );
      expect(b.cookie('ag_session')).toBeUndefined();

      h.clock.advance(10 * 60_000);
      expect((await signIn(b, dee.email, dee.password)).status).toBe(303);
    } finally {
      h.clock.fixed = null;
    }
  });

  it('locks a client address after 50 failures across e-mails (password spraying)', async () => {
    const eve = await h.user({ tenant: 'Eve', email: 'eve@eve.test' });
    h.clock.set(T0);
    try {
      for (let i = 0; i < SIGN_IN_IP_POLICY.maxFailures - 1; i++) {
        await recordFailure(h.db, 'signin:ip:127.0.0.1', SIGN_IN_IP_POLICY, T0);
      }
      const b = h.browser();
      expect((await signIn(b, 'someone@else.test', 'wrong password!')).status).toBe(429);
      const p = await signIn(b, eve.email, eve.password);
      expect(p.status).toBe(429);
      expect(p.headers.get('retry-after')).toBe('900');
    } finally {
      h.clock.fixed = null;
      await h.asOwner("DELETE FROM identity.auth_attempts WHERE key = 'signin:ip:127.0.0.1'");
    }
  });

  it('refuses a disabled account after the right password, and its sessions stop working', async () => {
    const fay = await h.user({ tenant: 'Fay', email: 'fay@fay.test' });
    const b = h.browser();
    expect((await signIn(b, fay.email, fay.password)).status).toBe(303);
    await h.asOwner('UPDATE identity.users SET disabled_at = now() WHERE id = $1', [fay.userId]);
    expect((await b.get('/signin')).text).not.toContain('You are signed in');
    const p = await signIn(h.browser(), fay.email, fay.password);
    expect(p.status).toBe(403);
    expect(p.text).toContain('This account is disabled');
  });

  it('upgrades a hash made with weaker scrypt parameters on the next sign-in', async () => {
    const gus = await h.user({ tenant: 'Gus', email: 'gus@gus.test', params: { N: 1024, r: 8, p: 1 } });
    expect((await signIn(h.browser(), gus.email, gus.password)).status).toBe(303);
    const [row] = await h.asOwner<{ password_hash: string }>(
      'SELECT password_hash FROM identity.users WHERE id = $1',
      [gus.userId],
    );
    expect(row!.password_hash.startsWith(`scrypt$${CURRENT_PARAMS.N}$8$1$`)).toBe(true);
  });

  it('lets a member of several tenants choose one (the password is not asked twice)', async () => {
    const hal = await h.user({ tenant: 'Hal One', email: 'hal@hal.test' });
    const two = await h.user({ tenant: 'Hal Two', email: 'hal@hal.test', password: hal.password });
    const b = h.browser();
    const choose = await signIn(b, hal.email, hal.password);
    expect(choose.status).toBe(200);
    const doc = choose.doc();
    expect(accessibilityProblems(doc)).toEqual([]);
    expect(textOf(byTag(doc, 'legend')[0]!)).toContain('Which one');
    const radios = byTag(doc, 'input').filter((i) => i.attrs['type'] === 'radio');
    expect(radios.map((r) => r.attrs['value'])).toEqual([hal.tenantId, two.tenantId]);
    expect(b.cookie('ag_session')).toBeUndefined();
    const pending = /name="pending" value="([^"]+)"/.exec(choose.text)![1]!;

    // Another browser cannot use the pending token (it is bound to this browser's CSRF cookie).
    const other = h.browser();
    const otherForm = await other.get('/signin');
    const stolen = await other.post('/signin', { csrf: csrfOf(otherForm), pending, tenant_id: two.tenantId });
    expect(stolen.status).toBe(401);
    expect(other.cookie('ag_session')).toBeUndefined();

    // Not a tenant of theirs: asked again.
    const wrong = await b.post('/signin', {
      csrf: csrfOf(choose),
      pending,
      tenant_id: '00000000-0000-4000-8000-000000000000',
    });
    expect(wrong.status).toBe(400);
    expect(accessibilityProblems(wrong.doc())).toEqual([]);

    const ok = await b.post('/signin', { csrf: csrfOf(choose), pending, tenant_id: two.tenantId });
    expect(ok.status).toBe(303);
    expect((await b.get('/signin')).text).toContain('Hal Two');
  });

  it('lets the pending choice expire after 5 minutes', async () => {
    const ivy = await h.user({ tenant: 'Ivy One', email: 'ivy@ivy.test' });
    await h.user({ tenant: 'Ivy Two', email: 'ivy@ivy.test', password: ivy.password });
    h.clock.set(T0);
    try {
      const b = h.browser();
      const choose = await signIn(b, ivy.email, ivy.password);
      const pending = /name="pending" value="([^"]+)"/.exec(choose.text)![1]!;
      h.clock.advance(5 * 60_000);
      const late = await b.post('/signin', { csrf: csrfOf(choose), pending, tenant_id: ivy.tenantId });
      expect(late.status).toBe(401);
      expect(late.text).toContain('took too long');
    } finally {
      h.clock.fixed = null;
    }
  });
});

describe('sessions', () => {
  it('end after 8 hours, with a tampered cookie, or when the membership goes', async () => {
    const jo = await h.user({ tenant: 'Jo', email: 'jo@jo.test' });
    h.clock.set(T0);
    try {
      const b = h.browser();
      expect((await signIn(b, jo.email, jo.password)).status).toBe(303);
      h.clock.advance(8 * 3600_000 - 1000);
      expect((await b.get('/signin')).text).toContain('You are signed in');
      h.clock.advance(1000);
      expect((await b.get('/signin')).text).not.toContain('You are signed in');
    } finally {
      h.clock.fixed = null;
    }

    const b = h.browser();
    expect((await signIn(b, jo.email, jo.password)).status).toBe(303);
    const good = b.cookie('ag_session')!;
    const [id, sig] = good.split('.');
    const flipped = (sig![0] === 'A' ? 'B' : 'A') + sig!.slice(1);
    b.cookies.set('ag_session;/', { value: `${id}.${flipped}`, path: '/' });
    expect((await b.get('/signin')).text).not.toContain('You are signed in');
    b.cookies.set('ag_session;/', { value: good, path: '/' });
    expect((await b.get('/signin')).text).toContain('You are signed in');

    await h.asOwner('DELETE FROM identity.memberships WHERE user_id = $1', [jo.userId]);
    expect((await b.get('/signin')).text).not.toContain('You are signed in');
  });

  it('are invisible to the application role except through the session functions; so are password hashes', async () => {
    await expect(h.db.query('SELECT * FROM identity.web_sessions')).rejects.toThrow(/permission denied/);
    await expect(h.db.query('SELECT password_hash FROM identity.users')).rejects.toThrow(/permission denied/);
    await expect(h.db.query("SELECT identity.set_user_password('x@y.z', 'scrypt$1', false)")).rejects.toThrow(
      /permission denied/,
    );
    await expect(h.db.query('SELECT id, email FROM identity.users')).resolves.toBeTruthy();
  });
});

describe('CSRF', () => {
  it('refuses posts without the token, with another form’s token, or from another origin; nothing is written', async () => {
    const kim = await h.user({ tenant: 'Kim', email: 'kim@kim.test' });
    const b = h.browser();
    const form = await b.get('/signin');
    const token = csrfOf(form);
    const attempts: [Record<string, string>, Record<string, string> | undefined][] = [
      [{ email: kim.email, password: kim.password }, undefined],
      [{ csrf: 'x'.repeat(43), email: kim.email, password: kim.password }, undefined],
      [{ csrf: token, email: kim.email, password: kim.password }, { origin: 'https://evil.test' }],
      [{ csrf: token, email: kim.email, password: kim.password }, { origin: 'null' }],
    ];
    for (const [fields, headers] of attempts) {
      const p = await b.post('/signin', fields, headers);
      expect(p.status).toBe(403);
      expect(accessibilityProblems(p.doc())).toEqual([]);
      expect(b.cookie('ag_session')).toBeUndefined();
    }
    // No Origin header at all.
    const res = await fetch(`${h.issuer}/signin`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        cookie: `ag_csrf=${b.cookie('ag_csrf')}`,
      },
      body: new URLSearchParams({ csrf: token, email: kim.email, password: kim.password }).toString(),
    });
    expect(res.status).toBe(403);
    expect(await res.text()).toContain('no Origin header');

    // Signed in, the session's secret binds tokens to each form: the sign-out token does not open /device.
    expect((await b.post('/signin', { csrf: token, email: kim.email, password: kim.password })).status).toBe(
      303,
    );
    const out = await b.get('/signout');
    const p = await b.post('/device', { csrf: csrfOf(out), user_code: 'BCDF-GHJK' });
    expect(p.status).toBe(403);
    const failures = await h.asOwner("SELECT key FROM identity.auth_attempts WHERE key LIKE 'usercode:%'");
    expect(failures).toEqual([]);
  });

  it('refuses form bodies of other content types', async () => {
    const b = h.browser();
    const form = await b.get('/signin');
    const p = await b.request('/signin', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      form: { csrf: csrfOf(form) },
    });
    expect(p.status).toBe(415);
  });
});

describe('signing out', () => {
  it('asks on GET, and on POST deletes the session row and clears the cookie', async () => {
    const lu = await h.user({ tenant: 'Lu', email: 'lu@lu.test' });
    const b = h.browser();
    expect((await signIn(b, lu.email, lu.password)).status).toBe(303);
    const old = b.cookie('ag_session')!;
    const ask = await b.get('/signout');
    expect(ask.status).toBe(200);
    expect(accessibilityProblems(ask.doc())).toEqual([]);
    expect(byTag(ask.doc(), 'form')[0]!.attrs).toMatchObject({ method: 'post', action: '/signout' });
    expect(b.cookie('ag_session')).toBe(old);

    const done = await b.post('/signout', { csrf: csrfOf(ask) });
    expect(done.status).toBe(200);
    expect(cookieLine(done, 'ag_session')).toContain('Max-Age=0');
    expect(b.cookie('ag_session')).toBeUndefined();
    expect(await h.asOwner('SELECT 1 FROM identity.web_sessions WHERE user_id = $1', [lu.userId])).toEqual(
      [],
    );
    // The old cookie is worthless now.
    b.cookies.set('ag_session;/', { value: old, path: '/' });
    expect((await b.get('/signin')).text).not.toContain('You are signed in');
  });
});

describe('https issuer', () => {
  it('marks the cookies Secure', async () => {
    const hs = await startWeb({ TOKEN_ISSUER: 'https://id.example.test' });
    try {
      const mo = await hs.user({ tenant: 'Mo', email: 'mo@mo.test' });
      const b = hs.browser();
      const form = await b.get('/signin');
      expect(cookieLine(form, 'ag_csrf')).toContain('; Secure');
      const p = await b.post('/signin', { csrf: csrfOf(form), email: mo.email, password: mo.password });
      expect(p.status).toBe(303);
      expect(cookieLine(p, 'ag_session')).toMatch(/; HttpOnly; Secure; Max-Age=28800$/);
    } finally {
      await hs.close();
    }
  });
});

/**
 * The RFC 8628 verification page (/device) over real HTTP against the real OAuth provider: a desktop asks for a
 * code, a signed-in member enters it (any case, with or without the dash), sees what is asking, approves or denies,
 * and the desktop's next poll gets tokens or access_denied. Wrong codes are shown on the form; the 6th in 15 minutes
 * is refused with the time to wait, even when right codes came in between.
 */
import { calculateJwkThumbprint, decodeJwt, exportJWK, generateKeyPair } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accessibilityProblems, byId, byTag, textOf } from './parse-html.js';
import { csrfOf, signIn, startWeb, type Browser, type WebHarness } from './harness.js';

let h: WebHarness;
beforeAll(async () => {
  h = await startWeb();
});
afterAll(async () => {
  await h?.close();
});

interface DeviceCodeAnswer {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete: string;
}

async function desktopAsks(name = 'Ada’s laptop') {
  const jwk = await exportJWK((await generateKeyPair('ES256', { extractable: true })).publicKey);
  const res = await fetch(`${h.issuer}/oauth/device_authorization`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      client_id: 'agentgraph-desktop',
      scope: 'openid offline_access api:read api:write',
      device_name: name,
      device_platform: 'linux',
      device_jwk: JSON.stringify(jwk),
    }).toString(),
  });
  expect(res.status).toBe(200);
  return {
    answer: (await res.json()) as DeviceCodeAnswer,
    thumbprint: await calculateJwkThumbprint(jwk, 'sha256'),
  };
}

/** The desktop's next poll, as if it had waited its interval (the polling clock is moved back, not slept on). */
async function desktopPolls(deviceCode: string) {
  await h.asOwner("UPDATE identity.device_polls SET last_poll_at = last_poll_at - interval '1 hour'");
  const res = await fetch(`${h.issuer}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
      device_code: deviceCode,
      client_id: 'agentgraph-desktop',
    }).toString(),
  });
  return (await res.json()) as { access_token?: string; error?: string };
}

async function member(
  tenant: string,
  email: string,
): Promise<{ b: Browser; userId: string; tenantId: string }> {
  const u = await h.user({ tenant, email });
  const b = h.browser();
  expect((await signIn(b, u.email, u.password)).status).toBe(303);
  return { b, userId: u.userId, tenantId: u.tenantId };
}

describe('/device', () => {
  it('sends a browser that is not signed in to /signin, and back here with the code afterwards', async () => {
    const b = h.browser();
    const p = await b.get('/device?user_code=bcdf-ghjk');
    expect(p.status).toBe(303);
    expect(p.location).toBe(`/signin?next=${encodeURIComponent('/device?user_code=bcdf-ghjk')}`);
    const u = await h.user({ tenant: 'Nia', email: 'nia@nia.test' });
    const form = await b.get(p.location!);
    const signedIn = await b.post(p.location!, { csrf: csrfOf(form), email: u.email, password: u.password });
    expect(signedIn.location).toBe('/device?user_code=bcdf-ghjk');
    const device = await b.get(signedIn.location!);
    expect(device.status).toBe(200);
    expect(byId(device.doc(), 'user_code')!.attrs['value']).toBe('BCDF-GHJK');
  });

  it('enrols a device: code typed in lower case without the dash, what is asking shown, approved, tokens issued', async () => {
    const ada = await member('Acme', 'ada@acme.test');
    const { answer, thumbprint } = await desktopAsks();
    expect(answer.verification_uri).toBe(`${h.issuer}/device`);

    // verification_uri_complete: the page is prefilled but does nothing until the member presses Continue.
    const entry = await ada.b.get(answer.verification_uri_complete);
    expect(entry.status).toBe(200);
    const doc = entry.doc();
    expect(accessibilityProblems(doc)).toEqual([]);
    const input = byId(doc, 'user_code')!;
    expect(input.attrs['value']).toBe(answer.user_code);
    expect(textOf(byId(doc, input.attrs['aria-describedby']!)!)).toContain('8 letters');
    expect(await h.asOwner("SELECT 1 FROM identity.auth_attempts WHERE key LIKE 'usercode:%'")).toEqual([]);

    const typed = answer.user_code.toLowerCase().replace('-', '');
    const confirm = await ada.b.post('/device', { csrf: csrfOf(entry), user_code: typed, action: 'lookup' });
    expect(confirm.status).toBe(200);
    const c = confirm.doc();
    expect(accessibilityProblems(c)).toEqual([]);
    expect(textOf(byTag(c, 'h1')[0]!)).toBe('Approve this device?');
    const facts = Object.fromEntries(
      byTag(c, 'dt').map((dt) => {
        const dd = dt.parent!.children[dt.parent!.children.indexOf(dt) + 1]!;
        return [textOf(dt), textOf(dd)];
      }),
    );
    expect(facts).toMatchObject({
      Code: answer.user_code,
      Application: 'AgentGraph desktop host',
      'Device name': 'Ada’s laptop',
      Platform: 'Linux',
      'Device key thumbprint': thumbprint,
    });
    expect(facts['Access it asks for']).toContain('(api:write)');
    expect(facts['Request expires']).toMatch(/^in (9|10) minutes/);
    const buttons = byTag(c, 'button').map((x) => [x.attrs['value'], textOf(x)]);
    expect(buttons).toEqual([
      ['approve', 'Approve'],
      ['deny', 'Deny'],
    ]);

    const done = await ada.b.post('/device', {
      csrf: csrfOf(confirm),
      user_code: answer.user_code,
      action: 'approve',
    });
    expect(done.status).toBe(200);
    expect(textOf(byTag(done.doc(), 'h1')[0]!)).toBe('Device connected');

    const [device] = await h.asOwner<{
      id: string;
      status: string;
      owner_id: string;
      key_thumbprint: string;
    }>('SELECT id, status, owner_id, key_thumbprint FROM identity.devices WHERE tenant_id = $1', [
      ada.tenantId,
    ]);
    expect(device).toMatchObject({ status: 'ENROLLED', owner_id: ada.userId, key_thumbprint: thumbprint });
    const tokens = await desktopPolls(answer.device_code);
    expect(decodeJwt(tokens.access_token!)).toMatchObject({
      sub: ada.userId,
      tid: ada.tenantId,
      did: device!.id,
    });

    // The code is spent: entering it again says so on the form.
    const reuse = await ada.b.post('/device', {
      csrf: csrfOf(confirm),
      user_code: answer.user_code,
      action: 'approve',
    });
    expect(reuse.status).toBe(404);
    expect(reuse.text).toContain('No pending device request has this code');
  });

  it('denies: the desktop gets access_denied and no device is enrolled', async () => {
    const bo = await member('Bo Corp', 'bo@bocorp.test');
    const { answer } = await desktopAsks('Bo’s desktop');
    const entry = await bo.b.get('/device');
    expect(byId(entry.doc(), 'user_code')!.attrs['value']).toBe('');
    const confirm = await bo.b.post('/device', {
      csrf: csrfOf(entry),
      user_code: answer.user_code,
      action: 'lookup',
    });
    const denied = await bo.b.post('/device', {
      csrf: csrfOf(confirm),
      user_code: answer.user_code,
      action: 'deny',
    });
    expect(denied.status).toBe(200);
    expect(textOf(byTag(denied.doc(), 'h1')[0]!)).toBe('Request denied');
    expect((await desktopPolls(answer.device_code)).error).toBe('access_denied');
    expect(await h.asOwner('SELECT 1 FROM identity.devices WHERE tenant_id = $1', [bo.tenantId])).toEqual([]);
  });

  it('shows wrong and malformed codes on the form; the 6th wrong code in 15 minutes is refused with the wait', async () => {
    const cy = await member('Cy Corp', 'cy@cycorp.test');
    const entry = await cy.b.get('/device');
    const csrf = csrfOf(entry);

    const malformed = await cy.b.post('/device', { csrf, user_code: 'AEIO-1234' });
    expect(malformed.status).toBe(400);
    const m = malformed.doc();
    expect(accessibilityProblems(m)).toEqual([]);
    const input = byId(m, 'user_code')!;
    expect(input.attrs['aria-invalid']).toBe('true');
    expect(input.attrs['aria-describedby']).toContain('user_code-error');
    expect(textOf(byId(m, 'user_code-error')!)).toContain('8 letters');
    expect((await cy.b.post('/device', { csrf, user_code: '' })).text).toContain(
      'Enter the code shown on your device',
    );

    for (let i = 0; i < 5; i++) {
      const wrong = await cy.b.post('/device', { csrf, user_code: 'BCDF-GHJK' });
      expect(wrong.status).toBe(404);
      expect(textOf(byId(wrong.doc(), 'user_code-error')!)).toContain(
        'No pending device request has this code',
      );
    }
    // The 6th attempt is refused, even with a real code, with Retry-After.
    const { answer } = await desktopAsks('Cy’s box');
    const sixth = await cy.b.post('/device', { csrf, user_code: answer.user_code });
    expect(sixth.status).toBe(429);
    expect(Number(sixth.headers.get('retry-after'))).toBeGreaterThan(800);
    expect(textOf(byId(sixth.doc(), 'user_code-error')!)).toMatch(/Wait 1[45] minutes/);
  });

  it('a right code between wrong ones resets nothing; the lock ends 15 minutes after the 5th wrong code', async () => {
    h.clock.set(new Date());
    try {
      const fay = await member('Fay Corp', 'fay@faycorp.test');
      const csrf = csrfOf(await fay.b.get('/device'));
      const own = async () => (await desktopAsks('Fay’s own box')).answer.user_code;
      for (let i = 0; i < 4; i++) {
        expect((await fay.b.post('/device', { csrf, user_code: 'BCDF-GHJK' })).status).toBe(404);
      }
      // A code Fay minted herself is found, and does not buy more guesses: the next wrong one is the 5th.
      expect((await fay.b.post('/device', { csrf, user_code: await own() })).text).toContain(
        'Approve this device?',
      );
      expect((await fay.b.post('/device', { csrf, user_code: 'BCDF-GHJK' })).status).toBe(404);
      h.clock.advance(60_000);
      const refused = await fay.b.post('/device', { csrf, user_code: await own() });
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toBe(String(14 * 60));
      h.clock.advance(14 * 60_000);
      expect((await fay.b.post('/device', { csrf, user_code: await own() })).status).toBe(200);
    } finally {
      h.clock.fixed = null;
    }
  });

  it('approves into the tenant of the approving member’s session', async () => {
    const dee = await member('Dee Corp', 'dee@deecorp.test');
    const eve = await member('Eve Corp', 'eve@evecorp.test');
    const { answer } = await desktopAsks('Dee’s laptop');
    const entry = await eve.b.get('/device');
    // Eve can look the code up (codes are not tenant data until approved) and approving enrols it in HER tenant.
    const confirm = await eve.b.post('/device', { csrf: csrfOf(entry), user_code: answer.user_code });
    expect(confirm.text).toContain('Eve Corp');
    await eve.b.post('/device', { csrf: csrfOf(confirm), user_code: answer.user_code, action: 'approve' });
    expect(await h.asOwner('SELECT 1 FROM identity.devices WHERE tenant_id = $1', [dee.tenantId])).toEqual(
      [],
    );
    expect(
      await h.asOwner('SELECT 1 FROM identity.devices WHERE tenant_id = $1', [eve.tenantId]),
    ).toHaveLength(1);
  });
});

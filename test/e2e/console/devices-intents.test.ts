/**
 * The console's Devices and Intents pages in a real browser against `npm start`: a device-flow client (the TS SDK's
 * RFC 8628 helpers, with an ES256 key it holds) shows a user code, the owner types it on the Devices page, sees the
 * device and approves it, and the client's poll gets its tokens; the device switches remote actions on with its own
 * token and streams its intents; the owner creates an intent and the console's live timeline shows every state the
 * device reports (signed intent-report+jwt) up to COMPLETED; a queued intent cancelled from the console; refusals
 * (a bad expiry caught by the form, remote actions off answered by the server) shown with their codes; rename, and
 * revoke with FORBIDDEN for a member who may not. Screenshots and axe-core on every state shown.
 */
import { randomUUID } from 'node:crypto';
import { decodeJwt, exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AgentGraph,
  createSubscriptions,
  discover,
  type DeviceIntentsSubscriptionData,
  pollDeviceToken,
  startDeviceAuthorization,
  subscriptions,
  type SubscriptionItem,
  type TokenSet,
} from '../../../sdks/typescript/src/index.js';
import { expectAccessible, screenshot, signIn, startConsoleBed, type ConsoleBed } from './harness.js';

type DeviceIntent = DeviceIntentsSubscriptionData['deviceIntents'];

interface EnrolledDevice {
  id: string;
  tokens: TokenSet;
  privateKey: CryptoKey;
  sdk: AgentGraph;
  /** The device's intent stream (DeviceIntentsSubscription), from seq 0. */
  intents: AsyncIterator<SubscriptionItem<DeviceIntent>>;
  stop: AbortController;
}

let bed: ConsoleBed;
let page: Page;
let device: EnrolledDevice | undefined;

beforeAll(async () => {
  bed = await startConsoleBed();
  page = (await bed.newPage()).page;
}, 120_000);
afterAll(async () => {
  device?.stop.abort();
  await bed?.close();
});

/** Opens a console page through the navigation, as a person would. */
async function open(name: 'Devices' | 'Intents'): Promise<void> {
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name }).click();
  await expect.poll(() => page.getByRole('heading', { level: 1, name }).count()).toBe(1);
}

/** The states the console's timeline shows, in order. */
function timelineStates(): Promise<string[]> {
  return page.locator('ol.timeline > li strong').allTextContents();
}

/** The device's signed report of a state (compact JWS, typ intent-report+jwt), sent with its own token. */
async function report(d: EnrolledDevice, intent: DeviceIntent, state: string): Promise<void> {
  const issuer = decodeJwt(intent.jws).iss!;
  const jws = await new SignJWT({ intent: intent.id, state })
    .setProtectedHeader({ alg: 'ES256', typ: 'intent-report+jwt' })
    .setIssuer(d.id)
    .setAudience(issuer)
    .setJti(randomUUID())
    .setIssuedAt()
    .sign(d.privateKey);
  const r = await d.sdk.reportIntentState({ report: jws });
  expect(r.reportIntentState.intent.state).toBe(state);
}

async function nextDeviceIntent(d: EnrolledDevice): Promise<DeviceIntent> {
  const item = await d.intents.next();
  if (item.done || item.value.type !== 'event') throw new Error(`device stream: ${JSON.stringify(item)}`);
  return item.value.event;
}

async function fillIntent(action: string, expires = '600'): Promise<void> {
  await expect
    .poll(() =>
      page
        .getByLabel(/^Device/)
        .locator('option', { hasText: 'Build box' })
        .count(),
    )
    .toBe(1);
  await page.getByLabel(/^Action/).fill(action);
  await page.getByLabel(/^Parameters/).fill('{"app": "notes"}');
  await page.getByLabel(/^Expires after/).fill(expires);
}

describe('console: devices and intents', () => {
  it('approves a device-flow client by the code it shows; the client gets its tokens and the device is ENROLLED', async () => {
    const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true });
    const endpoints = await discover(bed.identityUrl);
    const authorization = await startDeviceAuthorization(endpoints, {
      clientId: 'agentgraph-desktop',
      scope: 'openid offline_access api:read api:write',
      extra: {
        device_name: 'Build box',
        device_platform: 'linux',
        device_jwk: JSON.stringify(await exportJWK(publicKey)),
      },
    });
    const polling = pollDeviceToken(endpoints, { clientId: 'agentgraph-desktop', authorization });
    polling.catch(() => undefined);

    await signIn(page, bed, bed.owner);
    await open('Devices');
    const codeInput = page.getByLabel('Code shown on your device');
    // A wrong code: NOT_FOUND with what to do.
    await codeInput.fill('BCDF-GHJK');
    await page.getByRole('button', { name: 'Look up the code' }).click();
    const alert = page.getByRole('alert');
    await expect.poll(() => alert.textContent()).toContain('NOT_FOUND');
    expect(await page.getByText('start the enrolment again on the device').count()).toBe(1);
    await expectAccessible(page);
    await screenshot(page, 'devices-code-not-found');

    // The real code, typed the way people do: lower case, no dash.
    await codeInput.fill(authorization.userCode.toLowerCase().replace('-', ''));
    await page.getByRole('button', { name: 'Look up the code' }).click();
    const request = page.getByRole('region', { name: '“Build box” asks to enrol' });
    await expect.poll(() => request.count()).toBe(1);
    const facts = await request.locator('dl').textContent();
    expect(facts).toContain('linux');
    expect(facts).toContain(authorization.userCode);
    expect(await page.getByRole('alert').count()).toBe(0);
    await expectAccessible(page);
    await screenshot(page, 'devices-code-lookup');

    await page.getByRole('button', { name: 'Approve “Build box”' }).click();
    await expect
      .poll(() => page.getByText('is enrolled and gets its sign-in on its next poll').count())
      .toBe(1);
    const tokens = await polling;
    const did = decodeJwt(tokens.accessToken)['did'];
    expect(typeof did).toBe('string');

    const row = page.getByRole('row', { name: /Build box/ });
    await expect.poll(() => row.count()).toBe(1);
    const cells = await row.locator('td').allTextContents();
    expect(cells).toEqual([
      'linux',
      'Enrolled',
      'Ada Owner (you)',
      'Off',
      expect.any(String),
      'RenameRevoke',
    ]);
    await expectAccessible(page);
    await screenshot(page, 'devices-list');

    // The device's own client. Its reports are compact JWS values, which the privacy gate's `jwt` detector takes
    // for a secret (class SECRET) and refuses under the default policy: the device allows that class, knowingly.
    const sdk = new AgentGraph({
      baseUrl: `${bed.url}/graphql`,
      tokenProvider: { getToken: async () => tokens.accessToken, refresh: async () => tokens.accessToken },
      privacyPolicy: { allow: ['PUBLIC', 'INTERNAL', 'SECRET'] },
    });
    const stop = new AbortController();
    const stream = createSubscriptions(sdk.client, {
      baseUrl: `${bed.url}/graphql`,
      tokenProvider: { getToken: async () => tokens.accessToken, refresh: async () => tokens.accessToken },
    }).subscribe<DeviceIntent, undefined, DeviceIntentsSubscriptionData>(
      subscriptions.DeviceIntentsSubscription,
      {},
      {
        resume: { cursorVariable: 'afterSeq', seqOf: (i) => i.seq, after: 0 },
        select: (d) => d.deviceIntents,
        signal: stop.signal,
      },
    );
    device = { id: did as string, tokens, privateKey, sdk, intents: stream[Symbol.asyncIterator](), stop };
  }, 60_000);

  it('denies an enrolment request: the client is told access_denied and nothing is enrolled', async () => {
    const { publicKey } = await generateKeyPair('ES256', { extractable: true });
    const endpoints = await discover(bed.identityUrl);
    const authorization = await startDeviceAuthorization(endpoints, {
      clientId: 'agentgraph-desktop',
      scope: 'openid offline_access api:read api:write',
      extra: {
        device_name: 'Unknown laptop',
        device_platform: 'windows',
        device_jwk: JSON.stringify(await exportJWK(publicKey)),
      },
    });
    const polling = pollDeviceToken(endpoints, { clientId: 'agentgraph-desktop', authorization }).then(
      () => 'tokens',
      (e: { error?: string }) => e.error,
    );
    await page.getByLabel('Code shown on your device').fill(authorization.userCode);
    await page.getByRole('button', { name: 'Look up the code' }).click();
    await expect
      .poll(() => page.getByRole('region', { name: '“Unknown laptop” asks to enrol' }).count())
      .toBe(1);
    await page.getByRole('button', { name: 'Deny' }).click();
    await expect
      .poll(() => page.getByText('was refused: its next poll is told access is denied').count())
      .toBe(1);
    expect(await polling).toBe('access_denied');
    expect(await page.getByRole('row', { name: /Unknown laptop/ }).count()).toBe(0);
    await expectAccessible(page);
    await screenshot(page, 'devices-denied');
  }, 60_000);

  it('creates an intent; the live timeline shows each state the device reports, up to COMPLETED', async () => {
    const d = device!;
    // The desktop's local user switches remote actions on (only the device's own token may).
    const on = await d.sdk.setRemoteActionsEnabled({ enabled: true });
    expect(on.setRemoteActionsEnabled.device).toMatchObject({ id: d.id, remoteActionsEnabled: true });

    await open('Intents');
    await fillIntent('open-app');
    expect(
      await page
        .getByLabel(/^Device/)
        .locator('option:checked')
        .textContent(),
    ).toContain('remote actions on');
    await expectAccessible(page);
    await screenshot(page, 'intents-create-form');
    await page.getByRole('button', { name: 'Create intent' }).click();

    await page.waitForURL((u) => u.searchParams.has('intent'));
    const intentId = new URL(page.url()).searchParams.get('intent')!;
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Intent: open-app');
    await expect.poll(timelineStates).toEqual(['QUEUED']);
    await expect.poll(() => page.locator('.stream-status').textContent()).toContain('Live');

    const received = await nextDeviceIntent(d);
    expect(received).toMatchObject({ id: intentId, action: 'open-app', state: 'QUEUED', seq: 1 });
    expect(JSON.parse(received.params)).toEqual({ app: 'notes' });

    const states = ['QUEUED'];
    for (const state of ['DELIVERED', 'LOCALLY_APPROVED', 'EXECUTING', 'COMPLETED']) {
      await report(d, received, state);
      states.push(state);
      await expect.poll(timelineStates).toEqual(states);
      await expect.poll(() => page.locator('.intent-current').textContent()).toBe(state);
    }
    await expect.poll(() => page.locator('.stream-status').textContent()).toContain('final state');
    // The details follow the timeline: EXECUTING set the deadline for an outcome.
    await expect.poll(() => page.getByText('set when the device starts executing').count()).toBe(0);
    const last = page.locator('ol.timeline > li').last();
    expect(await last.textContent()).toContain('device “Build box”');
    expect(await page.getByRole('button', { name: 'Cancel this intent' }).count()).toBe(0);
    await expectAccessible(page);
    await screenshot(page, 'intents-timeline-completed');

    // A fresh load replays the whole history from the stream.
    await page.reload();
    await expect.poll(timelineStates, { timeout: 15_000 }).toEqual(states);

    // The device's list links to it.
    await page.getByRole('link', { name: 'Intents of “Build box”' }).click();
    await expect.poll(() => page.getByRole('link', { name: 'open-app (#1)' }).count()).toBe(1);
    expect(await page.getByRole('row', { name: /open-app/ }).textContent()).toContain('COMPLETED');
    await expectAccessible(page);
    await screenshot(page, 'intents-device-list');
  }, 60_000);

  it('cancels a queued intent from the console: the timeline shows CANCELLED', async () => {
    await open('Intents');
    await fillIntent('restart-agent');
    await page.getByRole('button', { name: 'Create intent' }).click();
    await expect
      .poll(() => page.getByRole('heading', { level: 1 }).textContent())
      .toBe('Intent: restart-agent');
    await expect.poll(timelineStates).toEqual(['QUEUED']);
    await expect.poll(() => page.locator('.stream-status').textContent()).toContain('Live');

    // Leaving the timeline aborts its stream; coming back subscribes again and replays the history.
    const aborted: string[] = [];
    page.on('requestfailed', (r) => {
      if (new URL(r.url()).pathname === '/graphql/stream') aborted.push(r.failure()?.errorText ?? '');
    });
    await page.getByRole('link', { name: 'All intents' }).click();
    await expect.poll(() => page.getByRole('heading', { level: 1, name: 'Intents' }).count()).toBe(1);
    await expect.poll(() => aborted).toEqual([expect.stringContaining('ABORTED')]);
    await page.goBack();
    await expect.poll(timelineStates).toEqual(['QUEUED']);

    await page.getByRole('button', { name: 'Cancel this intent' }).click();
    await expect.poll(timelineStates).toEqual(['QUEUED', 'CANCELLED']);
    expect(await page.locator('ol.timeline > li').last().textContent()).toContain('you (Ada Owner)');
    await expect.poll(() => page.getByRole('button', { name: 'Cancel this intent' }).count()).toBe(0);
    await expectAccessible(page);
    await screenshot(page, 'intents-cancelled');
    // The device's stream carried it too (seq 2).
    expect(await nextDeviceIntent(device!)).toMatchObject({ action: 'restart-agent', seq: 2 });
  }, 60_000);

  it('shows refusals: an expiry out of range caught before sending, remote actions off with the server code', async () => {
    await device!.sdk.setRemoteActionsEnabled({ enabled: false });
    await page.goto(`${bed.url}/intents`);
    await expect
      .poll(() => page.getByRole('heading', { level: 1, name: 'Intents' }).count(), { timeout: 15_000 })
      .toBe(1);
    await fillIntent('open-app', '5');
    await page.getByRole('button', { name: 'Create intent' }).click();
    const expiry = page.getByLabel(/^Expires after/);
    await expect.poll(() => expiry.getAttribute('aria-invalid')).toBe('true');
    expect(await page.getByText('The expiry must be between 10 and 3600 seconds').count()).toBe(1);
    expect(await expiry.evaluate((el) => el === document.activeElement)).toBe(true);
    expect(page.url()).not.toContain('intent=');

    await expiry.fill('600');
    expect(
      await page
        .getByLabel(/^Device/)
        .locator('option:checked')
        .textContent(),
    ).toContain('remote actions off');
    await page.getByRole('button', { name: 'Create intent' }).click();
    const alert = page.getByRole('alert');
    await expect.poll(() => alert.count()).toBe(1);
    const text = await alert.textContent();
    expect(text).toContain('FORBIDDEN');
    expect(text).toContain('REMOTE_ACTIONS_DISABLED');
    expect(text).toContain('Refused: remote actions are off on this device');
    expect(text).toContain("Ask the device's local user to switch remote actions on");
    await expectAccessible(page);
    await screenshot(page, 'intents-refused');
  }, 60_000);

  it('renames and revokes a device; a member who may not revoke it sees FORBIDDEN', async () => {
    // Uma (PUBLISHER) neither owns the device nor administers the tenant.
    const other = await bed.newPage();
    await signIn(other.page, bed, bed.uploader, '/devices');
    await other.page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Devices' }).click();
    await other.page.getByRole('button', { name: 'Revoke Build box' }).click();
    await other.page.getByRole('button', { name: 'Revoke “Build box”' }).click();
    const refused = other.page.getByRole('alert');
    await expect.poll(() => refused.count()).toBe(1);
    expect(await refused.textContent()).toContain('FORBIDDEN');
    await expectAccessible(other.page);
    await screenshot(other.page, 'devices-revoke-forbidden');
    await other.context.close();

    await open('Devices');
    await page.getByRole('button', { name: 'Rename Build box' }).click();
    await page.getByLabel(/^New name for/).fill('Build server');
    await page.getByRole('button', { name: 'Save name' }).click();
    await expect.poll(() => page.getByRole('row', { name: /Build server/ }).count()).toBe(1);

    await page.getByRole('button', { name: 'Revoke Build server' }).click();
    await expectAccessible(page);
    await screenshot(page, 'devices-revoke-confirm');
    await page.getByRole('button', { name: 'Revoke “Build server”' }).click();
    await expect
      .poll(() =>
        page
          .getByRole('row', { name: /Build server/ })
          .locator('td')
          .nth(1)
          .textContent(),
      )
      .toContain('Revoked');
    // The revoked device's token is refused from now on.
    await expect
      .poll(
        () =>
          device!.sdk.viewer().then(
            () => 'accepted',
            (e: { code?: string }) => e.code,
          ),
        { timeout: 5_000 },
      )
      .toBe('UNAUTHENTICATED');
    await expectAccessible(page);
    await screenshot(page, 'devices-revoked');
  }, 60_000);
});

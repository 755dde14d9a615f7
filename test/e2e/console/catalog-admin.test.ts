/**
 * The console's Catalog, Members and Emergency stop pages in a real browser against the real `npm start`:
 * a publisher creates a plugin, declares a release and uploads its package through the console (the gateway
 * forwards it to the catalog), the analysis finishes and the release waits for review; the uploader's own approval
 * is refused by the server (FORBIDDEN shown); the owner approves it from the review queue and promotes it to beta.
 * The owner changes a member's role and back; engages the emergency stop (intents are refused) and lifts it.
 * Every state shown is screenshotted and checked with axe.
 */
import { randomUUID } from 'node:crypto';
import {
  AgentGraph,
  discover,
  pollDeviceToken,
  startDeviceAuthorization,
  uploadPackage,
} from '../../../sdks/typescript/src/index.js';
import { exportJWK, generateKeyPair } from 'jose';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { goodPackage, manifest, zip } from '../../../subgraphs/catalog/test/packages.js';
import {
  errorCodeOf,
  expectAccessible,
  screenshot,
  signIn,
  startConsoleBed,
  type ConsoleBed,
} from './harness.js';

let bed: ConsoleBed;
let ada: Page;
let uma: Page;

beforeAll(async () => {
  bed = await startConsoleBed();
}, 180_000);
afterAll(async () => {
  await bed?.close();
});

const visible = (page: Page, text: string | RegExp) => () => page.getByText(text).first().isVisible();

describe('console catalog, members and emergency stop', () => {
  it('uploads a package, shows the analysis, refuses the uploader as reviewer, approves and promotes', async () => {
    // Both sign in through identity's pages (tests below reuse these sessions).
    uma = (await bed.newPage()).page;
    await signIn(uma, bed, bed.uploader, '/catalog');
    ada = (await bed.newPage()).page;
    await signIn(ada, bed, bed.owner, '/catalog');

    // Uma (PUBLISHER): the catalog, empty.
    await expect.poll(() => uma.getByRole('heading', { name: 'Catalog', level: 1 }).count()).toBe(1);
    await expect.poll(visible(uma, 'No plugins yet.')).toBe(true);
    await expectAccessible(uma);
    await screenshot(uma, 'catalog-list');

    // Create a plugin; the console opens it.
    await uma.getByRole('textbox', { name: /^Name/ }).fill('web-search');
    await uma.getByLabel('Display name').fill('Web Search');
    await uma.getByLabel('Description').fill('Searches the web for the agent.');
    await uma.getByRole('button', { name: 'Create plugin' }).click();
    await expect.poll(() => uma.getByRole('heading', { name: 'Web Search', level: 1 }).count()).toBe(1);

    // Declare 1.0.0, then upload its package; the upload is held at the network until the progress is captured.
    const declare = uma.getByRole('region', { name: 'Declare a release' });
    await declare.getByLabel('Version').fill('1.0.0');
    await declare.getByRole('button', { name: 'Declare release' }).click();
    await expect.poll(visible(uma, 'Declared web-search 1.0.0: it awaits its package.')).toBe(true);
    const upload = uma.getByRole('region', { name: 'Upload the package for web-search 1.0.0' });
    const pkg = await goodPackage('web-search', '1.0.0');
    await upload.getByLabel('Package file').setInputFiles({
      name: 'web-search-1.0.0.zip',
      mimeType: 'application/zip',
      buffer: pkg,
    });
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const seenUploads: string[] = [];
    await uma.route('**/catalog/packages?**', async (route) => {
      seenUploads.push(route.request().url());
      await held;
      await route.continue();
    });
    await upload.getByRole('button', { name: 'Upload package' }).click();
    await expect.poll(visible(uma, /Uploading web-search-1\.0\.0\.zip/)).toBe(true);
    expect(await uma.getByRole('button', { name: 'Upload package' }).isDisabled()).toBe(true);
    await expectAccessible(uma);
    await screenshot(uma, 'catalog-upload-progress');
    release();

    // The release view follows the analysis until the release is in review.
    await expect.poll(() => uma.getByRole('heading', { name: 'web-search 1.0.0', level: 1 }).count()).toBe(1);
    expect(seenUploads).toEqual([`${bed.url}/catalog/packages?plugin=web-search&version=1.0.0`]);
    const releaseId = new URL(uma.url()).searchParams.get('release')!;
    expect(releaseId).toBeTruthy();
    await expect.poll(visible(uma, 'In review'), { timeout: 60_000 }).toBe(true);
    await expect.poll(visible(uma, 'No findings.')).toBe(true);
    expect(await uma.getByText('PASS', { exact: true }).isVisible()).toBe(true);
    expect(await uma.getByText('Package uploaded').isVisible()).toBe(true);
    await expectAccessible(uma);
    await screenshot(uma, 'catalog-analysis-report');

    // Uma in the review queue: her own upload; the server refuses her approval, and the console says why.
    await uma.getByRole('link', { name: 'Review queue' }).click();
    await expect.poll(() => uma.getByRole('heading', { name: 'Review queue', level: 1 }).count()).toBe(1);
    await expect.poll(visible(uma, 'You uploaded this; another reviewer must decide.')).toBe(true);
    await uma.getByRole('button', { name: 'Approve web-search 1.0.0' }).click();
    const refusal = uma.getByRole('alert');
    await expect.poll(() => refusal.textContent()).toContain('FORBIDDEN');
    expect(await refusal.textContent()).toContain('Could not approve web-search 1.0.0');
    await expectAccessible(uma);
    await screenshot(uma, 'catalog-review-refused');
    // The refusal is the server's, not the page's: Uma's own token is refused through the API too.
    const umaApi = await bed.sdkFor(bed.uploader);
    expect(await errorCodeOf(umaApi.approveRelease({ releaseId }))).toBe('FORBIDDEN');
    expect((await umaApi.release({ id: releaseId })).release?.state).toBe('IN_REVIEW');

    // Ada (OWNER) approves from the review queue.
    await ada.getByRole('link', { name: 'Open the review queue' }).click();
    await expect.poll(() => ada.getByRole('heading', { name: 'Review queue', level: 1 }).count()).toBe(1);
    await expect.poll(() => ada.getByRole('button', { name: 'Approve web-search 1.0.0' }).count()).toBe(1);
    expect(await ada.getByText('You uploaded this').count()).toBe(0);
    await expectAccessible(ada);
    await screenshot(ada, 'catalog-review-queue');
    await ada.getByRole('button', { name: 'Approve web-search 1.0.0' }).click();
    await expect.poll(visible(ada, 'Approved web-search 1.0.0: published in the alpha channel.')).toBe(true);

    // The release, in alpha; promoted to beta.
    await ada.getByRole('link', { name: 'Open web-search 1.0.0' }).click();
    await expect.poll(() => ada.getByRole('button', { name: 'Promote to beta' }).count()).toBe(1);
    expect(await ada.getByText('Published in the alpha channel.', { exact: false }).isVisible()).toBe(true);
    await ada.getByRole('button', { name: 'Promote to beta' }).click();
    await expect.poll(visible(ada, 'Promoted web-search 1.0.0 to the beta channel.')).toBe(true);
    await expect.poll(() => ada.getByRole('button', { name: 'Promote to stable' }).count()).toBe(1);
    await expectAccessible(ada);
    await screenshot(ada, 'catalog-channels');
    const adaApi = await bed.sdkFor(bed.owner);
    expect((await adaApi.release({ id: releaseId })).release).toMatchObject({
      state: 'APPROVED',
      channel: 'BETA',
      targetPath: 'beta/web-search/web-search-1.0.0.zip',
    });
  }, 180_000);

  it('shows the findings of a package that fails analysis', async () => {
    await uma.getByRole('link', { name: 'Catalog' }).click();
    await uma.getByRole('link', { name: 'web-search' }).click();
    await expect.poll(() => uma.getByRole('heading', { name: 'Web Search', level: 1 }).count()).toBe(1);
    // The plugin's releases, from the API (not only those this tab has seen): 1.0.0 approved, in beta.
    const releases = uma.getByRole('region', { name: 'Releases' });
    await expect
      .poll(() => releases.getByRole('row', { name: /web-search 1\.0\.0 Approved beta/ }).count())
      .toBe(1);
    const upload = uma.getByRole('region', { name: 'Upload a package' });
    await upload.getByRole('textbox', { name: /^Version/ }).fill('1.0.1');
    await upload.getByLabel('Package file').setInputFiles({
      name: 'web-search-1.0.1.zip',
      mimeType: 'application/zip',
      buffer: await zip([
        manifest('web-search', '1.0.1'),
        { name: 'index.js', data: "const cp = require('child_process'); new Function('return 1');" },
      ]),
    });
    await upload.getByRole('button', { name: 'Upload package' }).click();
    await expect.poll(() => uma.getByRole('heading', { name: 'web-search 1.0.1', level: 1 }).count()).toBe(1);
    await expect.poll(visible(uma, 'Analysis failed'), { timeout: 60_000 }).toBe(true);
    const findings = uma.getByRole('table');
    await expect.poll(() => findings.getByRole('rowheader', { name: 'forbidden-import' }).count()).toBe(1);
    expect(await findings.getByRole('rowheader', { name: 'eval' }).count()).toBe(1);
    expect(await findings.getByRole('cell', { name: 'index.js' }).count()).toBeGreaterThan(0);
    expect(await uma.getByRole('button', { name: 'Approve' }).count()).toBe(0);
    await expectAccessible(uma);
    await screenshot(uma, 'catalog-analysis-failed');
  }, 120_000);

  it("refuses an admin's approval of their own upload (separation of duties)", async () => {
    // Ada uploads 1.1.0 herself, with the SDK's uploadPackage through the gateway.
    const client = await bed.sdkFor(bed.owner);
    const uploaded = await uploadPackage(client.client, {
      plugin: 'web-search',
      version: '1.1.0',
      body: await goodPackage('web-search', '1.1.0'),
    });
    expect(uploaded).toMatchObject({
      status: 202,
      state: 'QUARANTINED',
      plugin: 'web-search',
      version: '1.1.0',
    });
    expect(uploaded.digests.sha256).toMatch(/^[0-9a-f]{64}$/);
    await expect
      .poll(async () => (await client.release({ id: uploaded.releaseId })).release?.state, {
        timeout: 60_000,
      })
      .toBe('IN_REVIEW');

    await ada.getByRole('link', { name: 'Review queue' }).click();
    await expect.poll(() => ada.getByRole('button', { name: 'Approve web-search 1.1.0' }).count()).toBe(1);
    await ada.getByRole('button', { name: 'Approve web-search 1.1.0' }).click();
    const refusal = ada.getByRole('alert');
    await expect.poll(() => refusal.textContent()).toContain('FORBIDDEN');
    expect(await refusal.textContent()).toContain('You uploaded this package, so you cannot approve it');
    await expectAccessible(ada);
    await screenshot(ada, 'catalog-review-own-upload');
  }, 120_000);

  it("forwards uploads past the gateway's body limit: the catalog's own 5 MB limit answers", async () => {
    const token = await bed.tokenFor(bed.uploader);
    const res = await fetch(`${bed.url}/catalog/packages?plugin=web-search&version=9.9.9`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/zip' },
      body: new Uint8Array(7 * 1024 * 1024), // over the gateway's MAX_BODY_BYTES (6 MB) as well
    });
    expect(res.status).toBe(413);
    const body = (await res.json()) as { errors: { message: string; extensions: { code: string } }[] };
    expect(body.errors[0]!.extensions.code).toBe('PAYLOAD_TOO_LARGE');
    expect(body.errors[0]!.message).toContain('The package is over the limit of 5242880 bytes');
  }, 60_000);

  it("changes a member's role and back; the server refuses a publisher", async () => {
    await ada.goto(`${bed.url}/members`);
    await expect
      .poll(() => ada.getByRole('heading', { name: 'Members', level: 1 }).count(), { timeout: 15_000 })
      .toBe(1);
    await expect.poll(visible(ada, 'uma@acme.test')).toBe(true);
    await expectAccessible(ada);
    await screenshot(ada, 'members-list');

    const change = async (role: string) => {
      await ada.getByRole('button', { name: 'Change role of Uma Uploader' }).click();
      await ada.getByLabel('New role for Uma Uploader').selectOption(role);
      await ada.getByRole('button', { name: 'Save role' }).click();
      await expect.poll(visible(ada, `Uma Uploader is now ${role}.`)).toBe(true);
    };
    await change('VIEWER');
    await expectAccessible(ada);
    await screenshot(ada, 'members-role-changed');
    const adaApi = await bed.sdkFor(bed.owner);
    const roleOfUma = async () =>
      (await adaApi.members({ first: 50 })).tenant.members.edges.find(
        (e) => e.node.user.email === 'uma@acme.test',
      )?.node.role;
    expect(await roleOfUma()).toBe('VIEWER');
    await change('PUBLISHER');
    expect(await roleOfUma()).toBe('PUBLISHER');

    // Uma (PUBLISHER) may see the members but not change them: the server's FORBIDDEN is shown.
    // The demotion revoked Uma's tokens issued until then (to the second): wait until a fresh token of hers passes.
    await expect
      .poll(async () => errorCodeOf((await bed.sdkFor(bed.uploader)).viewer()), {
        timeout: 10_000,
      })
      .toBe('no error');
    await uma.goto(`${bed.url}/members`);
    await expect
      .poll(() => uma.getByRole('button', { name: 'Change role of Ada Owner' }).count(), {
        timeout: 15_000,
      })
      .toBe(1);
    await uma.getByRole('button', { name: 'Change role of Ada Owner' }).click();
    await uma.getByLabel('New role for Ada Owner').selectOption('VIEWER');
    await uma.getByRole('button', { name: 'Save role' }).click();
    await expect.poll(() => uma.getByRole('alert').textContent()).toContain('FORBIDDEN');
    await expectAccessible(uma);
    await screenshot(uma, 'members-refused');
  }, 120_000);

  it('engages the emergency stop with a reason (intents refused) and lifts it', async () => {
    const adaApi = await bed.sdkFor(bed.owner);
    // A desktop enrolled by the device grant, with remote actions on: the target of the intents below.
    const endpoints = await discover(bed.identityUrl);
    const key = await generateKeyPair('ES256', { extractable: true });
    const authorization = await startDeviceAuthorization(endpoints, {
      clientId: 'agentgraph-desktop',
      scope: 'openid offline_access api:read api:write',
      extra: {
        device_name: 'Front desk',
        device_platform: 'linux',
        device_jwk: JSON.stringify(await exportJWK(key.publicKey)),
      },
    });
    const approved = await adaApi.approveDeviceAuthorization({ userCode: authorization.userCode });
    const deviceId = approved.approveDeviceAuthorization.device.id;
    const tokens = await pollDeviceToken(endpoints, { clientId: 'agentgraph-desktop', authorization });
    const device = new AgentGraph({
      baseUrl: `${bed.url}/graphql`,
      tokenProvider: { getToken: async () => tokens.accessToken, refresh: async () => tokens.accessToken },
    });
    await device.setRemoteActionsEnabled({ enabled: true });
    const intent = () =>
      adaApi.createIntent(
        { input: { deviceId, action: 'open-app', expiresInSeconds: 600 } },
        { idempotencyKey: randomUUID() },
      );

    await ada.goto(`${bed.url}/emergency`);
    await expect
      .poll(() => ada.getByRole('heading', { name: /Status: not engaged/ }).count(), {
        timeout: 15_000,
      })
      .toBe(1);
    await expectAccessible(ada);
    await screenshot(ada, 'emergency-not-engaged');

    await ada.getByLabel('Reason').fill('runaway agent on the front desk');
    await ada.getByRole('button', { name: 'Engage emergency stop…' }).click();
    const confirm = ada.getByRole('group', { name: /Engage the emergency stop for Acme now\?/ });
    await expect.poll(() => confirm.count()).toBe(1);
    expect(await confirm.textContent()).toContain('Every open stream of the tenant closes within a second');
    await expectAccessible(ada);
    await screenshot(ada, 'emergency-confirm');
    await confirm.getByRole('button', { name: 'Yes, engage the stop' }).click();
    await expect.poll(() => ada.getByRole('heading', { name: /Status: ENGAGED/ }).count()).toBe(1);
    expect(await ada.getByText('runaway agent on the front desk').isVisible()).toBe(true);
    await expectAccessible(ada);
    await screenshot(ada, 'emergency-engaged');
    expect(await errorCodeOf(intent())).toBe('EMERGENCY_STOP');

    await ada.getByRole('button', { name: 'Lift emergency stop' }).click();
    await expect.poll(() => ada.getByRole('heading', { name: /Status: not engaged/ }).count()).toBe(1);
    await expectAccessible(ada);
    await screenshot(ada, 'emergency-lifted');
    expect((await adaApi.emergencyStop()).emergencyStop.engaged).toBe(false);
    expect((await intent()).createIntent.intent.id).toBeTruthy();
  }, 120_000);
});

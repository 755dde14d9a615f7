/**
 * The console's Rooms and Memory pages in a real browser against `npm start`. Rooms: the owner creates a room and
 * posts (the message shows once although the live stream delivers it too), a message posted by another client
 * through the API appears live without a reload (and is announced once), a PUBLISHER may not post (FORBIDDEN), a
 * member made OPERATOR posts and the live message carries her name, and a refused post keeps its text. Memory: a workspace, two records written in the console, search ranks the right
 * one first with its scores, an edit that meets a newer version (VERSION_CONFLICT) keeps the draft and saves on
 * the reloaded version, a record deleted, secrets refused by the SDK's privacy gate and by the server's filter with
 * the field named and never the value, and the workspace deleted with its record count. axe-core and a screenshot
 * on every state shown.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  errorCodeOf,
  expectAccessible,
  screenshot,
  signIn,
  startConsoleBed,
  type ConsoleBed,
} from './harness.js';

let bed: ConsoleBed;
let page: Page;

beforeAll(async () => {
  bed = await startConsoleBed();
  ({ page } = await bed.newPage());
}, 180_000);

afterAll(async () => {
  await bed?.close();
});

const heading = (name: string) => page.getByRole('heading', { level: 1, name, exact: true });

/** expect.poll with room for a page's round trips (vitest's default is 1 s). */
const poll = <T>(fn: () => T | Promise<T>) => expect.poll(fn, { timeout: 10_000 });

describe('console rooms', () => {
  let roomId = '';

  it('creates a room, posts a message shown once, and shows another client’s message live', async () => {
    await signIn(page, bed, bed.owner, '/rooms');
    await poll(() => heading('Rooms').count()).toBe(1);
    await poll(() => page.getByText('No rooms yet.').count()).toBe(1);
    await page.getByLabel('Room name').fill('deployments');
    await page.getByRole('button', { name: 'Create room' }).click();
    await poll(() => heading('deployments').count()).toBe(1);
    roomId = new URL(page.url()).searchParams.get('room') ?? '';
    expect(roomId).toMatch(/^[0-9a-f-]{36}$/);
    await poll(() => page.getByText('Live: new messages appear as they are posted.').count()).toBe(1);
    await poll(() => page.getByText('No messages yet.').count()).toBe(1);

    await page.getByLabel('Message', { exact: true }).fill('hello from the console');
    await page.getByRole('button', { name: 'Post message' }).click();
    const log = page.getByRole('list', { name: 'Message log, oldest first' });
    const own = log.getByRole('listitem').filter({ hasText: 'hello from the console' });
    await poll(() => own.count()).toBe(1);
    // The stream may show the message before the mutation's answer arrives; then the box empties.
    await poll(() => page.getByLabel('Message', { exact: true }).inputValue()).toBe('');

    // A PUBLISHER may read rooms but not post; the owner's other client posts through the API.
    const uploader = await bed.sdkFor(bed.uploader);
    expect(await errorCodeOf(uploader.postMessage({ roomId, input: { body: 'may I?' } }))).toBe('FORBIDDEN');
    const other = await bed.sdkFor(bed.owner);
    const posted = await other.postMessage({ roomId, input: { body: 'deploy finished (from the API)' } });
    expect(posted.postMessage.message.seq).toBe(2);

    const live = log.getByRole('listitem').filter({ hasText: 'deploy finished (from the API)' });
    await poll(() => live.count()).toBe(1);
    // The stream delivers in seq order, so the console's own message (seq 1) came through it before seq 2: still
    // shown once.
    expect(await own.count()).toBe(1);
    expect(await log.getByRole('listitem').allTextContents()).toEqual([
      expect.stringContaining('#1hello from the console'),
      expect.stringContaining('#2deploy finished (from the API)'),
    ]);
    expect(await own.textContent()).toContain('Ada Owner');
    // Announced once, politely, for the live message only (not for the one this page posted).
    const region = page.locator('.rooms-sr-only[aria-live="polite"]');
    await poll(() => region.textContent()).toBe('New message from Ada Owner');

    // Streamed messages name their author by id only: a member the log has not shown yet gets their name from the
    // member list. Uma becomes an OPERATOR (her new token carries the role) and posts.
    await other.changeMemberRole({ userId: bed.uploader.userId, role: 'OPERATOR' });
    // Tokens issued in the second of the change are refused with the old ones: take fresh ones until one works
    // (one idempotency key, so the message is posted once).
    const key = crypto.randomUUID();
    await poll(async () =>
      errorCodeOf(
        (await bed.sdkFor(bed.uploader)).postMessage(
          { roomId, input: { body: 'review please' } },
          { idempotencyKey: key },
        ),
      ),
    ).toBe('no error');
    const umas = log.getByRole('listitem').filter({ hasText: 'review please' });
    await poll(() => umas.count()).toBe(1);
    await poll(() => umas.textContent()).toContain('Uma Uploader');
    await poll(() => region.textContent()).toBe('New message from Uma Uploader');
    await expectAccessible(page);
    await screenshot(page, 'rooms-room-live');
  });

  it('keeps the text of a refused post and shows the code; lists the room', async () => {
    const box = page.getByLabel('Message', { exact: true });
    await box.fill('the key is AKIAIOSFODNN7EXAMPLE');
    await page.getByRole('button', { name: 'Post message' }).click();
    const alert = page.getByRole('alert').filter({ hasText: 'The message was not posted' });
    await poll(() => alert.count()).toBe(1);
    expect(await alert.textContent()).toContain('PRIVACY_REFUSED');
    expect(await alert.textContent()).toContain('input.body (api-key)');
    expect(await alert.textContent()).not.toContain('AKIAIOSFODNN7EXAMPLE');
    expect(await box.inputValue()).toBe('the key is AKIAIOSFODNN7EXAMPLE');
    await expectAccessible(page);
    await screenshot(page, 'rooms-post-refused');

    await page.getByRole('link', { name: '← All rooms' }).click();
    await poll(() => heading('Rooms').count()).toBe(1);
    await poll(() => page.getByRole('link', { name: 'deployments' }).count()).toBe(1);
    await expectAccessible(page);
    await screenshot(page, 'rooms-list');
  });
});

describe('console memory', () => {
  let workspaceId = '';
  let deployId = '';

  async function newRecord(content: string, kind: string, tags: string, metadata: string): Promise<string> {
    await page.getByRole('link', { name: 'New record' }).click();
    await poll(() => heading('New memory record').count()).toBe(1);
    await poll(() => new URL(page.url()).searchParams.get('record')).toMatch(/^[0-9a-f-]{36}$/);
    await page.getByLabel('Content').fill(content);
    await page.getByLabel('Kind').fill(kind);
    await page.getByLabel('Tags').fill(tags);
    await page.getByLabel('Metadata (JSON)').fill(metadata);
    await page.getByRole('button', { name: 'Create record' }).click();
    await poll(() => page.getByText('Saved: version 1.').count()).toBe(1);
    const id = new URL(page.url()).searchParams.get('record')!;
    expect(new URL(page.url()).searchParams.has('new')).toBe(false);
    await page.getByRole('link', { name: '← Back to the workspace' }).click();
    await poll(() => heading('Workspace Project notes').count()).toBe(1);
    return id;
  }

  it('creates a workspace and two records; search ranks the right one first, with scores', async () => {
    await page.getByRole('link', { name: 'Memory', exact: true }).click();
    await poll(() => heading('Memory').count()).toBe(1);
    await page.getByLabel('Workspace name').fill('Project notes');
    await page.getByRole('button', { name: 'Create workspace' }).click();
    await poll(() => heading('Workspace Project notes').count()).toBe(1);
    workspaceId = new URL(page.url()).searchParams.get('workspace')!;

    deployId = await newRecord(
      'Deploy pipeline: the pipeline runs blue-green releases on Kubernetes.',
      'fact',
      'deploy, k8s',
      '{"source": "console"}',
    );
    await newRecord('Lunch menu: pasta on Fridays; the order pipeline closes at noon.', 'note', 'food', '{}');

    const rows = page.getByRole('table').getByRole('row');
    await poll(() => rows.count()).toBe(3); // header + 2
    const api = await bed.sdkFor(bed.owner);
    const stored = await api.memoryRecord({ id: deployId });
    expect(stored.memoryRecord).toMatchObject({
      version: 1,
      kind: 'fact',
      tags: ['deploy', 'k8s'],
      workspace: { id: workspaceId },
    });
    expect(JSON.parse(stored.memoryRecord!.metadata)).toEqual({ source: 'console' });
    // The filters: by tag.
    await page.getByLabel('Tag').fill('food');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await poll(() => rows.count()).toBe(2);
    expect(await rows.nth(1).textContent()).toContain('Lunch menu');
    await expectAccessible(page);
    await screenshot(page, 'memory-records-filtered');
    await page.getByRole('button', { name: 'Clear filters' }).click();
    await poll(() => rows.count()).toBe(3);
    await expectAccessible(page);
    await screenshot(page, 'memory-records');

    // Full-text search sees a record once its indexing job ran (about a second): search until both are found.
    await page.getByLabel('Search text').fill('pipeline');
    const results = page
      .getByRole('list', { name: 'Results for “pipeline”, best first' })
      .getByRole('listitem');
    await expect
      .poll(
        async () => {
          await page.getByRole('button', { name: 'Search', exact: true }).click();
          await page.getByText('Loading results…').waitFor({ state: 'detached' });
          return results.count();
        },
        { timeout: 20_000, interval: 500 },
      )
      .toBe(2);
    const texts = await results.allTextContents();
    expect(texts[0]).toContain('Deploy pipeline');
    expect(texts[1]).toContain('Lunch menu');
    const scores = texts.map((t) => Number(/score (\d\.\d{3})/.exec(t)?.[1]));
    expect(scores[0]).toBeGreaterThan(scores[1]!);
    expect(scores[1]).toBeGreaterThan(0);
    await expectAccessible(page);
    await screenshot(page, 'memory-search-results');
  });

  it('an edit that meets a newer version shows the conflict, keeps the draft, and saves on their version', async () => {
    const results = page.getByRole('list', { name: /best first/ });
    await results.getByRole('link', { name: /Deploy pipeline/ }).click();
    await poll(() => heading('Memory record').count()).toBe(1);
    await poll(() => page.getByLabel('Content').inputValue()).toContain('blue-green');

    // Someone else writes version 2 meanwhile.
    const api = await bed.sdkFor(bed.owner);
    const theirs = await api.putMemory({
      id: deployId,
      input: {
        workspaceId,
        kind: 'fact',
        content: 'Deploy pipeline: canary releases now.',
        tags: ['deploy'],
      },
      expectedVersion: 1,
    });
    expect(theirs.putMemory.record.version).toBe(2);

    const mine =
      'Deploy pipeline: the pipeline runs blue-green releases on Kubernetes. Edited in the console.';
    await page.getByLabel('Content').fill(mine);
    await page.getByRole('button', { name: 'Save changes' }).click();
    const conflict = page.getByRole('region', { name: 'Someone else changed this record' });
    await poll(() => conflict.count()).toBe(1);
    expect(await conflict.textContent()).toContain('It is now at version 2; you edited version 1.');
    const alert = page.getByRole('alert').filter({ hasText: 'Not saved: version conflict' });
    expect(await alert.textContent()).toContain('VERSION_CONFLICT');
    expect(await page.getByLabel('Content').inputValue()).toBe(mine);
    await expectAccessible(page);
    await screenshot(page, 'memory-conflict');

    await page.getByRole('button', { name: 'Load their version 2' }).click();
    const theirPanel = page.getByRole('region', { name: 'Their version 2' });
    await poll(() => theirPanel.count()).toBe(1);
    expect(await theirPanel.textContent()).toContain('canary releases now');
    expect(await page.getByLabel('Content').inputValue()).toBe(mine);
    await expectAccessible(page);
    await screenshot(page, 'memory-conflict-their-version');

    await page.getByRole('button', { name: 'Save changes' }).click();
    await poll(() => page.getByText('Saved: version 3.').count()).toBe(1);
    const stored = await api.memoryRecord({ id: deployId });
    expect(stored.memoryRecord).toMatchObject({ version: 3, content: mine, tags: ['deploy', 'k8s'] });
  });

  it('deletes a record', async () => {
    await page.getByRole('button', { name: 'Delete record' }).click();
    await page.getByRole('button', { name: 'Yes, delete the record' }).click();
    await poll(() => heading('Workspace Project notes').count()).toBe(1);
    const rows = page.getByRole('table').getByRole('row');
    await poll(() => rows.count()).toBe(2);
    expect(await rows.nth(1).textContent()).toContain('Lunch menu');
    const api = await bed.sdkFor(bed.owner);
    expect((await api.memoryRecord({ id: deployId })).memoryRecord).toBeNull();
  });

  it('refuses secrets (SDK gate, server filter) naming the field, never the value; a REDACT workspace redacts', async () => {
    await page.getByRole('link', { name: 'New record' }).click();
    await poll(() => heading('New memory record').count()).toBe(1);
    const content = page.getByLabel('Content');
    await poll(() => content.count()).toBe(1);

    // A key the SDK's privacy gate knows: nothing is sent.
    await content.fill('the CI key is AKIAIOSFODNN7EXAMPLE');
    await page.getByRole('button', { name: 'Create record' }).click();
    const alert = page.getByRole('alert').filter({ hasText: 'The record was not saved' });
    await poll(() => alert.count()).toBe(1);
    expect(await alert.textContent()).toContain('PRIVACY_REFUSED');
    expect(await alert.textContent()).toContain('input.content (api-key)');
    const fieldProblem = page.locator('#record-content-problem');
    expect(await fieldProblem.textContent()).toContain('(api-key) in input.content');
    expect(await content.getAttribute('aria-invalid')).toBe('true');
    for (const text of [await alert.textContent(), await fieldProblem.textContent()])
      expect(text).not.toContain('AKIAIOSFODNN7EXAMPLE');
    await expectAccessible(page);
    await screenshot(page, 'memory-secret-refused-sdk');

    // An SSN written with spaces only the server's filter knows (the SDK gate's ssn rule needs dashes; the two share
    // every secret rule since issue 18): the workspace (REJECT) refuses it.
    await content.fill('ssn 078 05 1120 on file');
    await page.getByRole('button', { name: 'Create record' }).click();
    await poll(async () => (await alert.textContent()) ?? '').toContain('BAD_USER_INPUT');
    expect(await alert.textContent()).toContain('input.content');
    expect(await fieldProblem.textContent()).toContain('(us-ssn) in input.content');
    for (const text of [await alert.textContent(), await fieldProblem.textContent()])
      expect(text).not.toContain('078 05 1120');
    await expectAccessible(page);
    await screenshot(page, 'memory-secret-refused-server');
    const id = new URL(page.url()).searchParams.get('record')!;
    const api = await bed.sdkFor(bed.owner);
    expect((await api.memoryRecord({ id })).memoryRecord).toBeNull();

    // A REDACT workspace keeps the write with the secret replaced; the console says where and by which detector.
    const redacting = await api.createWorkspace({
      input: { name: 'Redacting notes', secretPolicy: 'REDACT' },
    });
    const redactId = redacting.createWorkspace.workspace.id;
    await page.goto(`${bed.url}/memory?workspace=${redactId}&record=new`);
    await poll(() => heading('New memory record').count()).toBe(1);
    await poll(() => page.getByLabel('Content').count()).toBe(1);
    await page.getByLabel('Content').fill('ssn 078 05 1120 on file');
    await page.getByRole('button', { name: 'Create record' }).click();
    const saved = page.getByRole('status').filter({ hasText: 'Saved: version 1.' });
    await poll(() => saved.count()).toBe(1);
    expect(await saved.textContent()).toContain('redacted what looked like secrets in content (us-ssn)');
    expect(await page.getByLabel('Content').inputValue()).toBe('ssn [REDACTED:us-ssn] on file');
    await expectAccessible(page);
    await screenshot(page, 'memory-secret-redacted');
  });

  it('lists workspaces and deletes one after confirming, with the count of records that went', async () => {
    await page.getByRole('link', { name: 'Memory', exact: true }).click();
    await poll(() => heading('Memory').count()).toBe(1);
    await poll(() => page.getByRole('link', { name: 'Project notes' }).count()).toBe(1);
    expect(await page.getByRole('row', { name: /Redacting notes/ }).textContent()).toContain('REDACT');
    await expectAccessible(page);
    await screenshot(page, 'memory-workspaces');

    await page.getByRole('button', { name: 'Delete workspace Project notes' }).click();
    const confirm = page.getByRole('region', { name: 'Delete workspace “Project notes”?' });
    await poll(() => confirm.count()).toBe(1);
    await expectAccessible(page);
    await screenshot(page, 'memory-workspace-delete-confirm');
    await confirm.getByRole('button', { name: 'Delete workspace and its records' }).click();
    await poll(() => page.getByText('Deleted workspace “Project notes” and its 1 record.').count()).toBe(1);
    await poll(() => page.getByRole('link', { name: 'Project notes' }).count()).toBe(0);
    const api = await bed.sdkFor(bed.owner);
    expect((await api.workspace({ id: workspaceId })).workspace).toBeNull();
  });
});

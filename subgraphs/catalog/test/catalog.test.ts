/**
 * The catalog subgraph over real HTTP on a real database: plugins (unique names, listing by name), releases
 * (semver, one per version, newest first), idempotency, cursor scoping, roles and tenant isolation.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { catalogSubgraph } from '../src/index.js';
import {
  codeOf,
  dataOf,
  newPrincipal,
  startSubgraph,
  type Harness,
  type Principal,
} from '../../../test/src/subgraph-harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startSubgraph(catalogSubgraph);
});
afterAll(async () => {
  await h?.close();
});

const CREATE_PLUGIN = `mutation ($input: CreatePluginInput!, $key: ID!) {
  createPlugin(input: $input, idempotencyKey: $key) {
    plugin { id name displayName description publisher { id } createdAt }
  }
}`;

const DECLARE = `mutation ($pluginId: ID!, $version: String!, $key: ID!) {
  declareRelease(pluginId: $pluginId, input: { version: $version }, idempotencyKey: $key) {
    release { id version state createdBy { id } createdAt plugin { id name } }
  }
}`;

const PLUGINS = `query ($first: Int, $after: String) {
  plugins(first: $first, after: $after) {
    edges { cursor node { id name } }
    pageInfo { hasNextPage hasPreviousPage endCursor }
  }
}`;

const RELEASES = `query ($id: ID!, $first: Int, $after: String) {
  plugin(id: $id) { releases(first: $first, after: $after) {
    edges { cursor node { id version state } }
    pageInfo { hasNextPage endCursor }
  } }
}`;

function createPlugin(
  p: Principal,
  input: { name: string; displayName?: string; description?: string | null },
  key = randomUUID(),
) {
  return h.gql(p, CREATE_PLUGIN, { input: { displayName: 'A plugin', ...input }, key });
}

async function pluginId(p: Principal, name: string): Promise<string> {
  return dataOf(await createPlugin(p, { name })).createPlugin.plugin.id as string;
}

function declare(p: Principal, id: string, version: string, key = randomUUID()) {
  return h.gql(p, DECLARE, { pluginId: id, version, key });
}

describe('plugins', () => {
  it('creates a plugin published by the caller and reads it back', async () => {
    const p = newPrincipal('PUBLISHER');
    const r = dataOf(
      await createPlugin(p, {
        name: 'web-search',
        displayName: '  Web search  ',
        description: 'Searches the web',
      }),
    );
    const plugin = r.createPlugin.plugin;
    expect(plugin).toMatchObject({
      name: 'web-search',
      displayName: 'Web search',
      description: 'Searches the web',
      publisher: { id: p.userId },
    });
    const read = dataOf(
      await h.gql(p, `query ($id: ID!) { plugin(id: $id) { id name description } }`, { id: plugin.id }),
    );
    expect(read.plugin).toEqual({ id: plugin.id, name: 'web-search', description: 'Searches the web' });
    const noDescription = dataOf(await createPlugin(p, { name: 'quiet', description: null }));
    expect(noDescription.createPlugin.plugin.description).toBe('');
  });

  it('refuses a name taken in the tenant, but not one taken in another tenant', async () => {
    const a = newPrincipal();
    await pluginId(a, 'shared-name');
    const dup = await createPlugin(a, { name: 'shared-name' });
    expect(codeOf(dup)).toBe('BAD_USER_INPUT');
    expect(dup.body.errors?.[0]?.message).toMatch(/already taken/);
    expect(dup.body.errors?.[0]?.message).not.toContain('shared-name');
    expect(dup.body.errors?.[0]?.extensions?.['field']).toBe('input.name');
    expect(codeOf(await createPlugin(newPrincipal(), { name: 'shared-name' }))).toBeUndefined();
  });

  it('lets exactly one of two concurrent creates of one name succeed', async () => {
    const p = newPrincipal();
    const results = await Promise.all([
      createPlugin(p, { name: 'racer' }),
      createPlugin(p, { name: 'racer' }),
    ]);
    expect(results.map((r) => String(codeOf(r) ?? 'ok')).sort()).toEqual(['BAD_USER_INPUT', 'ok']);
  });

  it('validates name, display name and description without echoing them', async () => {
    const p = newPrincipal();
    const cases: [Record<string, unknown>, string][] = [
      [{ name: 'Upper-Case' }, 'input.name'],
      [{ name: '1starts-with-digit' }, 'input.name'],
      [{ name: 'x' }, 'input.name'],
      [{ name: 'a'.repeat(64) }, 'input.name'],
      [{ name: 'has_underscore' }, 'input.name'],
      [{ name: 'ok-name', displayName: '   ' }, 'input.displayName'],
      [{ name: 'ok-name', displayName: 'd'.repeat(101) }, 'input.displayName'],
      [{ name: 'ok-name', description: 'x'.repeat(2001) }, 'input.description'],
    ];
    for (const [input, field] of cases) {
      const r = await createPlugin(p, input as { name: string });
      expect(codeOf(r), field).toBe('BAD_USER_INPUT');
      expect(r.body.errors?.[0]?.extensions?.['field']).toBe(field);
      const message = r.body.errors?.[0]?.message ?? '';
      for (const value of Object.values(input))
        if (String(value).trim().length > 3) expect(message).not.toContain(value);
    }
    expect(codeOf(await createPlugin(p, { name: 'a'.repeat(63) }))).toBeUndefined();
    expect(codeOf(await createPlugin(p, { name: 'ab' }))).toBeUndefined();
  });

  it('replays createPlugin for the same key and arguments, and refuses the key for other arguments', async () => {
    const p = newPrincipal();
    const key = randomUUID();
    const first = await createPlugin(p, { name: 'once' }, key);
    const replay = await createPlugin(p, { name: 'once' }, key);
    expect(replay.body.extensions?.['idempotentReplay']).toBe(true);
    expect(replay.body.data).toEqual(first.body.data);
    expect(codeOf(await createPlugin(p, { name: 'twice' }, key))).toBe('IDEMPOTENCY_KEY_REUSED');
    const list = dataOf(await h.gql(p, PLUGINS, { first: 10 })).plugins;
    expect(list.edges.map((e: any) => e.node.name)).toEqual(['once']);
  });

  it('lists by name across pages with no duplicates or gaps while plugins are added between pages', async () => {
    const p = newPrincipal();
    const names = ['delta', 'alpha', 'echo', 'charlie', 'bravo', 'golf', 'foxtrot', 'hotel', 'a-b', 'ab'];
    for (const n of names) await pluginId(p, n);
    const seen: string[] = [];
    let after: string | null = null;
    // Added after pages 1, 2 and 3: behind the cursor, ahead of it, behind it again.
    const added = ['aa', 'zz', 'charlie-2'];
    for (let page = 0; ; page++) {
      const conn: any = dataOf(await h.gql(p, PLUGINS, { first: 3, after })).plugins;
      expect(conn.pageInfo.hasPreviousPage).toBe(after !== null);
      seen.push(...conn.edges.map((e: any) => e.node.name));
      if (!conn.pageInfo.hasNextPage) break;
      after = conn.pageInfo.endCursor;
      if (added[page]) await pluginId(p, added[page]!);
    }
    // Byte order ("C" collation, the same on every server): '-' < digits < letters. Every original name once, in
    // order; a name added ahead of the cursor shows up in place, one added behind it does not.
    expect(seen).toEqual([
      'a-b',
      'ab',
      'alpha',
      'bravo',
      'charlie',
      'delta',
      'echo',
      'foxtrot',
      'golf',
      'hotel',
      'zz',
    ]);
  });

  it('caps the page size and rejects foreign or altered cursors', async () => {
    const p = newPrincipal();
    await pluginId(p, 'one');
    await pluginId(p, 'two');
    expect(codeOf(await h.gql(p, PLUGINS, { first: 101 }))).toBe('BAD_USER_INPUT');
    expect(codeOf(await h.gql(p, `{ plugins(first: 101) { edges { cursor } } }`))).toBe('BAD_USER_INPUT');
    const cursor = dataOf(await h.gql(p, PLUGINS, { first: 1 })).plugins.pageInfo.endCursor as string;
    expect(codeOf(await h.gql(newPrincipal(), PLUGINS, { first: 1, after: cursor }))).toBe('BAD_USER_INPUT');
    const altered = cursor.slice(0, -2) + (cursor.endsWith('AA') ? 'BB' : 'AA');
    expect(codeOf(await h.gql(p, PLUGINS, { first: 1, after: altered }))).toBe('BAD_USER_INPUT');
  });
});

describe('releases', () => {
  it('declares releases awaiting upload and lists them newest first across pages', async () => {
    const p = newPrincipal();
    const id = await pluginId(p, 'releaser');
    const versions = [
      '0.1.0',
      '0.2.0',
      '1.0.0-alpha',
      '1.0.0-alpha.1',
      '1.0.0-0.3.7',
      '1.0.0',
      '1.0.1',
      '10.20.30',
    ];
    for (const v of versions) {
      const r = dataOf(await declare(p, id, v)).declareRelease.release;
      expect(r).toMatchObject({
        version: v,
        state: 'AWAITING_UPLOAD',
        createdBy: { id: p.userId },
        plugin: { id, name: 'releaser' },
      });
    }
    const seen: string[] = [];
    let after: string | null = null;
    let extra = 0;
    for (;;) {
      const conn: any = dataOf(await h.gql(p, RELEASES, { id, first: 3, after })).plugin.releases;
      seen.push(...conn.edges.map((e: any) => e.node.version));
      await declare(p, id, `2.0.${extra++}`); // newer than every cursor handed out
      if (!conn.pageInfo.hasNextPage) break;
      after = conn.pageInfo.endCursor;
    }
    expect(seen).toEqual([...versions].reverse());
  });

  it('refuses a version the plugin already has, and accepts it on another plugin', async () => {
    const p = newPrincipal();
    const one = await pluginId(p, 'one');
    const two = await pluginId(p, 'two');
    expect(codeOf(await declare(p, one, '1.2.3'))).toBeUndefined();
    const dup = await declare(p, one, '1.2.3');
    expect(codeOf(dup)).toBe('BAD_USER_INPUT');
    expect(dup.body.errors?.[0]?.extensions?.['field']).toBe('input.version');
    expect(dup.body.errors?.[0]?.message).not.toContain('1.2.3');
    expect(codeOf(await declare(p, two, '1.2.3'))).toBeUndefined();
  });

  it('accepts only MAJOR.MINOR.PATCH with an optional prerelease', async () => {
    const p = newPrincipal();
    const id = await pluginId(p, 'strict');
    for (const bad of [
      '1',
      '1.2',
      'v1.2.3',
      '01.2.3',
      '1.02.3',
      '1.2.3-',
      '1.2.3-01',
      '1.2.3+build',
      '1.2.3-a..b',
      ' 1.2.3',
      `1.2.3-${'x'.repeat(60)}`,
    ]) {
      const r = await declare(p, id, bad);
      expect(codeOf(r), bad).toBe('BAD_USER_INPUT');
      expect(r.body.errors?.[0]?.extensions?.['field']).toBe('input.version');
    }
    for (const good of ['0.0.0', '1.2.3-rc.1', '1.2.3-x-y.0', '1.2.3-0a']) {
      expect(codeOf(await declare(p, id, good)), good).toBeUndefined();
    }
  });

  it('answers NOT_FOUND for a plugin that is not in the caller tenant, BAD_USER_INPUT for a malformed id', async () => {
    const a = newPrincipal();
    const id = await pluginId(a, 'mine');
    expect(codeOf(await declare(newPrincipal(), id, '1.0.0'))).toBe('NOT_FOUND');
    expect(codeOf(await declare(a, randomUUID(), '1.0.0'))).toBe('NOT_FOUND');
    const malformed = await declare(a, 'not-a-uuid', '1.0.0');
    expect(codeOf(malformed)).toBe('BAD_USER_INPUT');
    expect(malformed.body.errors?.[0]?.extensions?.['field']).toBe('pluginId');
  });

  it('replays declareRelease without a second release', async () => {
    const p = newPrincipal();
    const id = await pluginId(p, 'replayed');
    const key = randomUUID();
    const first = await declare(p, id, '1.0.0', key);
    const replay = await declare(p, id, '1.0.0', key);
    expect(replay.body.extensions?.['idempotentReplay']).toBe(true);
    expect(replay.body.data).toEqual(first.body.data);
    const list = dataOf(await h.gql(p, RELEASES, { id, first: 10 })).plugin.releases;
    expect(list.edges).toHaveLength(1);
  });

  it('binds release cursors to their plugin', async () => {
    const p = newPrincipal();
    const one = await pluginId(p, 'one');
    const two = await pluginId(p, 'two');
    for (const v of ['1.0.0', '1.0.1']) {
      await declare(p, one, v);
      await declare(p, two, v);
    }
    const cursor = dataOf(await h.gql(p, RELEASES, { id: one, first: 1 })).plugin.releases.pageInfo.endCursor;
    expect(codeOf(await h.gql(p, RELEASES, { id: two, first: 1, after: cursor }))).toBe('BAD_USER_INPUT');
    expect(codeOf(await h.gql(p, RELEASES, { id: one, first: 101 }))).toBe('BAD_USER_INPUT');
  });
});

describe('roles and tenants', () => {
  const ENTITIES = `query ($reps: [_Any!]!) {
    _entities(representations: $reps) {
      ... on Plugin { id name publisher { id } }
      ... on Release { id version plugin { id } }
    }
  }`;

  it('lets a VIEWER read but not write, and asks for a token when there is none', async () => {
    const tenant = randomUUID();
    const owner = newPrincipal('ADMIN', tenant);
    const viewer = newPrincipal('VIEWER', tenant);
    const id = await pluginId(owner, 'guarded');
    expect(codeOf(await createPlugin(viewer, { name: 'nope' }))).toBe('FORBIDDEN');
    expect(codeOf(await declare(viewer, id, '1.0.0'))).toBe('FORBIDDEN');
    expect(dataOf(await h.gql(viewer, PLUGINS, { first: 10 })).plugins.edges).toHaveLength(1);
    expect(codeOf(await h.gql(null, PLUGINS, { first: 10 }))).toBe('UNAUTHENTICATED');
    expect(codeOf(await createPlugin(null as unknown as Principal, { name: 'anon' }))).toBe(
      'UNAUTHENTICATED',
    );
  });

  it('lets PUBLISHER, ADMIN and OWNER publish, not OPERATOR (runtime/src/roles.ts: they are incomparable)', async () => {
    const tenant = randomUUID();
    const publisher = newPrincipal('PUBLISHER', tenant);
    const id = await pluginId(publisher, 'published');
    expect(codeOf(await declare(publisher, id, '1.0.0'))).toBeUndefined();
    for (const [i, role] of (['ADMIN', 'OWNER'] as const).entries()) {
      const p = newPrincipal(role, tenant);
      const own = await pluginId(p, `by-${role.toLowerCase()}`);
      expect(codeOf(await declare(p, own, '1.0.0'))).toBeUndefined();
      expect(codeOf(await declare(p, id, `1.1.${i}`))).toBeUndefined();
    }
    const operator = newPrincipal('OPERATOR', tenant);
    const created = await createPlugin(operator, { name: 'by-operator' });
    expect(codeOf(created)).toBe('FORBIDDEN');
    expect(created.body.errors?.[0]?.message).toContain('PUBLISHER, ADMIN or OWNER');
    expect(codeOf(await declare(operator, id, '2.0.0'))).toBe('FORBIDDEN');
    // Nothing was written: the name is free and the plugin has only the releases above.
    const names = dataOf(await h.gql(publisher, PLUGINS, { first: 10 })).plugins.edges.map(
      (e: { node: { name: string } }) => e.node.name,
    );
    expect(names).not.toContain('by-operator');
    const versions = dataOf(await h.gql(publisher, RELEASES, { id, first: 10 })).plugin.releases.edges.map(
      (e: { node: { version: string } }) => e.node.version,
    );
    expect(versions).not.toContain('2.0.0');
  });

  it("keeps tenant A's plugins and releases out of tenant B's reads, lists and entity references", async () => {
    const a = newPrincipal();
    const b = newPrincipal();
    const id = await pluginId(a, 'private');
    const release = dataOf(await declare(a, id, '1.0.0')).declareRelease.release.id as string;

    const reps = [
      { __typename: 'Plugin', id },
      { __typename: 'Release', id: release },
    ];
    expect(dataOf(await h.gql(a, ENTITIES, { reps }))._entities).toEqual([
      { id, name: 'private', publisher: { id: a.userId } },
      { id: release, version: '1.0.0', plugin: { id } },
    ]);
    expect(
      dataOf(await h.gql(b, ENTITIES, { reps: [...reps, { __typename: 'Plugin', id: 'nope' }] }))._entities,
    ).toEqual([null, null, null]);
    expect(dataOf(await h.gql(b, `query ($id: ID!) { plugin(id: $id) { id } }`, { id })).plugin).toBeNull();
    expect(dataOf(await h.gql(b, PLUGINS, { first: 100 })).plugins.edges).toEqual([]);
  });
});

/**
 * Row-Level Security alone protects one tenant from another (docs/architecture.md#data-and-tenancy: a database-level test): as each service's
 * role (the connections the subgraphs get), with tenant A set by withTenant, the subgraphs' own store functions and
 * SQL aimed at tenant B's ids read nothing, update and delete nothing, and cannot insert rows for B; with no tenant
 * set, nothing is visible at all. No resolver runs here: only the database stands between the tenants.
 */
import { randomUUID } from 'node:crypto';
import { bootstrapTenant } from '@agentgraph/identity';
import {
  loadConfig,
  openDatabase,
  runIdempotent,
  withTenant,
  type AuthContext,
  type Database,
  type DatabaseHandle,
  type Queryable,
  type Service,
} from '@agentgraph/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SUBGRAPH_MODULES } from '../../gateway/src/platform.js';
import * as catalog from '../../subgraphs/catalog/src/store.js';
import * as coordination from '../../subgraphs/coordination/src/store.js';
import * as identity from '../../subgraphs/identity/src/store.js';
import * as memory from '../../subgraphs/memory/src/store.js';
import { provisionTestDatabase, type TestDatabase } from '../src/database.js';

const SCHEMAS = ['runtime', 'identity', 'memory', 'coordination', 'catalog'];
const RLS_REFUSAL = /row-level security/i;

let testDb: TestDatabase;
let handle: DatabaseHandle;
/** Each subgraph's connections, as its own role. */
let dbs: Record<Exclude<Service, 'gateway'>, Database>;
let appRole: string;

/** The service whose role holds a schema's grants (the runtime's tables: any subgraph role, through the app role). */
const serviceOf = (table: string): Exclude<Service, 'gateway'> => {
  const schema = table.split('.')[0]!;
  return schema === 'runtime' ? 'memory' : (schema as Exclude<Service, 'gateway'>);
};

interface Tenant {
  auth: AuthContext;
  userId: string;
  workspaceId: string;
  recordId: string;
  roomId: string;
  messageId: string;
  pluginId: string;
  releaseId: string;
  deviceId: string;
  grantId: string;
  idempotencyKey: string;
}

let a: Tenant;
let b: Tenant;

/** A tenant with one row in every table a subgraph writes, created through the subgraphs' own store functions. */
async function seedTenant(name: string): Promise<Tenant> {
  const boot = await bootstrapTenant(handle.owner, {
    tenantName: name,
    email: `owner-${randomUUID().slice(0, 8)}@${name.toLowerCase()}.test`,
    displayName: `Owner of ${name}`,
  });
  const auth: AuthContext = {
    tenantId: boot.tenantId,
    principalId: boot.userId,
    role: 'OWNER',
    scopes: ['api:read', 'api:write'],
  };
  const recordId = randomUUID();
  const grantId = `grant-${randomUUID()}`;
  const ws = await withTenant(dbs.memory, auth, async (tx) => {
    const ws = await memory.createWorkspace(tx, auth, `${name} notes`);
    await memory.putRecord(tx, auth, {
      id: recordId,
      workspaceId: ws.id,
      kind: 'note',
      content: `${name} secret`,
      tags: [],
      expectedVersion: null,
    });
    return ws;
  });
  const { room, message } = await withTenant(dbs.coordination, auth, async (tx) => {
    const room = await coordination.insertRoom(tx, auth.tenantId, auth.principalId, `${name} room`);
    const message = await coordination.appendMessage(tx, auth.tenantId, room.id, auth.principalId, 'secret');
    return { room, message };
  });
  const { plugin, release } = await withTenant(dbs.catalog, auth, async (tx) => {
    const plugin = await catalog.createPlugin(tx, auth, {
      name: `${name.toLowerCase()}-plugin`,
      displayName: name,
      description: '',
    });
    const release = await catalog.declareRelease(tx, auth, plugin.id, '1.0.0');
    return { plugin, release };
  });
  const seeded = await withTenant(dbs.identity, auth, async (tx) => {
    const device = await identity.insertDevice(tx, auth.tenantId, auth.principalId, {
      name: `${name} laptop`,
      platform: 'linux',
    });
    await tx.query(
      `INSERT INTO identity.oauth_grants (grant_id, tenant_id, user_id, device_id, client_id)
       VALUES ($1, $2, $3, $4, 'agentgraph-desktop')`,
      [grantId, auth.tenantId, auth.principalId, device.id],
    );
    return {
      workspaceId: ws.id,
      roomId: room.id,
      messageId: message!.id,
      pluginId: plugin.id,
      releaseId: release.id,
      deviceId: device.id,
    };
  });
  const idempotencyKey = `key-${randomUUID()}`;
  await runIdempotent(
    dbs.memory,
    auth,
    { key: idempotencyKey, operation: 'Mutation.test', args: {} },
    3600,
    async () => ({
      tenant: name,
    }),
  );
  return { auth, userId: boot.userId, recordId, grantId, idempotencyKey, ...seeded };
}

/**
 * Every table with a tenant_id column that its service's role may SELECT, from the catalog (new tables join in).
 */
async function tenantTables(): Promise<string[]> {
  const { rows } = await handle.owner.query<{ name: string; oid: number }>(
    `SELECT n.nspname || '.' || c.relname AS name, c.oid::int AS oid
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = ANY($1::text[]) AND c.relkind IN ('r', 'p')
        AND EXISTS (SELECT 1 FROM pg_attribute x WHERE x.attrelid = c.oid AND x.attname = 'tenant_id' AND NOT x.attisdropped)
      ORDER BY 1`,
    [SCHEMAS],
  );
  const readable: string[] = [];
  for (const r of rows) {
    const role = `${appRole}_${serviceOf(r.name)}`;
    const can = await handle.owner.query<{ ok: boolean }>(
      `SELECT has_table_privilege($1, $2::int::oid, 'SELECT') AS ok`,
      [role, r.oid],
    );
    if (can.rows[0]!.ok) readable.push(r.name);
  }
  return readable;
}

/** In tenant A's transaction, as the role of the service that owns `table` (or the named service). */
const asA = <T>(service: Exclude<Service, 'gateway'>, fn: (tx: Queryable) => Promise<T>) =>
  withTenant(dbs[service], a.auth, fn);
const count = async (tx: Queryable, sql: string, params: unknown[] = []) =>
  (await tx.query<{ n: number }>(`SELECT count(*)::int AS n FROM (${sql}) q`, params)).rows[0]!.n;

beforeAll(async () => {
  testDb = await provisionTestDatabase();
  const config = loadConfig({ ...testDb.env, LOG_LEVEL: 'error' });
  appRole = config.appRole;
  ({ handle } = await openDatabase(
    config,
    SUBGRAPH_MODULES.map((m) => m.migrations),
  ));
  dbs = {
    identity: await handle.app('identity'),
    memory: await handle.app('memory'),
    coordination: await handle.app('coordination'),
    catalog: await handle.app('catalog'),
  };
  a = await seedTenant('Acme');
  b = await seedTenant('Globex');
});
afterAll(async () => {
  await handle?.close();
  await testDb?.drop();
});

describe("as each service's role, with tenant A set", () => {
  it("runs as each service's role, not the owner", async () => {
    for (const [service, db] of Object.entries(dbs)) {
      const { rows } = await db.query<{ who: string }>('SELECT current_user AS who');
      expect(rows[0]!.who).toBe(`${appRole}_${service}`);
    }
  });

  it("reads none of tenant B's rows through the subgraphs' own store functions", async () => {
    await asA('memory', async (tx) => {
      expect(await memory.findWorkspace(tx, b.workspaceId)).toBeNull();
      expect((await memory.findRecords(tx, [b.recordId])).size).toBe(0);
      expect((await memory.listWorkspaces(tx, 100, null)).map((w) => w.node.id)).toEqual([a.workspaceId]);
    });
    await asA('coordination', async (tx) => {
      expect((await coordination.roomsById(tx, [b.roomId])).size).toBe(0);
      expect(await coordination.lastSeqOf(tx, b.roomId)).toBeNull();
      expect(await coordination.messageById(tx, b.messageId)).toBeNull();
      expect(await coordination.messagesAfter(tx, b.roomId, 0, 100)).toEqual([]);
      expect((await coordination.roomsPage(tx, null, 100)).map((r) => r.id)).toEqual([a.roomId]);
    });
    await asA('catalog', async (tx) => {
      expect(await catalog.findPlugin(tx, b.pluginId)).toBeNull();
      expect((await catalog.findReleases(tx, [b.releaseId])).size).toBe(0);
      expect((await catalog.listPlugins(tx, 100, null)).map((p) => p.node.id)).toEqual([a.pluginId]);
    });
    await asA('identity', async (tx) => {
      // Store functions that take a tenant id are handed B's: RLS still answers for A only)
      expect(await identity.findTenant(tx, b.auth.tenantId)).toBeNull();
      expect((await identity.findUsers(tx, [b.userId])).size).toBe(0);
      expect((await identity.findDevices(tx, [b.deviceId])).size).toBe(0);
      expect(await identity.roleOf(tx, b.userId)).toBeNull();
      expect(await identity.listMembers(tx, b.auth.tenantId, 100, null)).toEqual([]);
      expect(await identity.listDevices(tx, b.auth.tenantId, 100, null)).toEqual([]);
    });
  });

  it("reads none of tenant B's rows with SQL that names them, in any tenant table", async () => {
    const tables = await tenantTables();
    for (const t of [
      'identity.memberships',
      'identity.devices',
      'identity.oauth_grants',
      'runtime.idempotency_keys',
    ])
      expect(tables).toContain(t);
    for (const table of tables) {
      await asA(serviceOf(table), async (tx) =>
        expect(
          { table, rows: await count(tx, `SELECT 1 FROM ${table} WHERE tenant_id = $1`, [b.auth.tenantId]) },
          `${table} shows tenant B's rows to tenant A`,
        ).toEqual({ table, rows: 0 }),
      );
    }
    await asA('identity', async (tx) =>
      expect(await count(tx, 'SELECT 1 FROM identity.oauth_grants WHERE grant_id = $1', [b.grantId])).toBe(0),
    );
    await asA('memory', async (tx) =>
      expect(
        await count(tx, 'SELECT 1 FROM runtime.idempotency_keys WHERE key = $1', [b.idempotencyKey]),
      ).toBe(0),
    );
    // The same SQL does see A's own rows (the queries are not simply wrong).
    for (const table of ['memory.records', 'coordination.messages', 'catalog.releases', 'identity.devices'])
      await asA(serviceOf(table), async (tx) =>
        expect(await count(tx, `SELECT 1 FROM ${table} WHERE tenant_id = $1`, [a.auth.tenantId])).toBe(1),
      );
  });

  it("updates and deletes none of tenant B's rows", async () => {
    const touched = async (sql: string, params: unknown[]) =>
      asA(
        serviceOf(/(?:UPDATE|FROM) (\w+\.\w+)/.exec(sql)![1]!),
        async (tx) => (await tx.query(sql, params)).rowCount,
      );
    {
      expect(await touched("UPDATE memory.records SET content = 'pwned' WHERE id = $1", [b.recordId])).toBe(
        0,
      );
      expect(await touched('UPDATE coordination.rooms SET last_seq = 99 WHERE id = $1', [b.roomId])).toBe(0);
      expect(await touched("UPDATE identity.devices SET name = 'pwned' WHERE id = $1", [b.deviceId])).toBe(0);
      expect(
        await touched("UPDATE identity.devices SET status = 'REVOKED' WHERE tenant_id = $1", [
          b.auth.tenantId,
        ]),
      ).toBe(0);
      expect(await touched('DELETE FROM identity.oauth_grants WHERE grant_id = $1', [b.grantId])).toBe(0);
      expect(
        await touched('DELETE FROM runtime.idempotency_keys WHERE tenant_id = $1', [b.auth.tenantId]),
      ).toBe(0);
      // Through the store: appending to B's room finds no room to number the message in.
      expect(
        await asA('coordination', (tx) =>
          coordination.appendMessage(tx, a.auth.tenantId, b.roomId, a.userId, 'hi'),
        ),
      ).toBeNull();
      expect(await asA('identity', (tx) => identity.updateDisplayName(tx, b.userId, 'pwned'))).toBeNull();
    }
    // Tenant B's rows are as they were.
    await withTenant(dbs.memory, b.auth, async (tx) => {
      expect((await memory.findRecords(tx, [b.recordId])).get(b.recordId)?.content).toBe('Globex secret');
      expect(
        await count(tx, 'SELECT 1 FROM runtime.idempotency_keys WHERE key = $1', [b.idempotencyKey]),
      ).toBe(1);
    });
    await withTenant(dbs.coordination, b.auth, async (tx) =>
      expect(await coordination.lastSeqOf(tx, b.roomId)).toBe(1),
    );
    await withTenant(dbs.identity, b.auth, async (tx) => {
      const device = (await identity.findDevices(tx, [b.deviceId])).get(b.deviceId);
      expect({ name: device?.name, status: device?.status }).toEqual({
        name: 'Globex laptop',
        status: 'PENDING',
      });
      expect(await count(tx, 'SELECT 1 FROM identity.oauth_grants WHERE grant_id = $1', [b.grantId])).toBe(1);
    });
  });

  it('cannot insert rows for tenant B (the policies WITH CHECK refuse them)', async () => {
    // A store function handed B's tenant (a resolver bug) inside A's transaction: each attempt in its own.
    const forgedB: AuthContext = { ...b.auth };
    const attempts: Array<[string, (tx: Queryable) => Promise<unknown>]> = [
      ['memory.workspaces', (tx) => memory.createWorkspace(tx, forgedB, 'planted')],
      [
        'memory.records',
        (tx) =>
          tx.query(
            `INSERT INTO memory.records (tenant_id, id, workspace_id, kind, content, version, author)
             VALUES ($1, $2, $3, 'note', 'planted', 1, 'x')`,
            [b.auth.tenantId, randomUUID(), b.workspaceId],
          ),
      ],
      ['coordination.rooms', (tx) => coordination.insertRoom(tx, b.auth.tenantId, a.userId, 'planted')],
      [
        'coordination.messages',
        (tx) =>
          tx.query(
            `INSERT INTO coordination.messages (tenant_id, room_id, seq, body, author) VALUES ($1, $2, 2, 'planted', 'x')`,
            [b.auth.tenantId, b.roomId],
          ),
      ],
      [
        'catalog.plugins',
        (tx) => catalog.createPlugin(tx, forgedB, { name: 'planted', displayName: 'P', description: '' }),
      ],
      [
        'catalog.releases',
        (tx) =>
          tx.query(
            `INSERT INTO catalog.releases (tenant_id, plugin_id, version, created_by) VALUES ($1, $2, '9.9.9', 'x')`,
            [b.auth.tenantId, b.pluginId],
          ),
      ],
      [
        'identity.devices',
        (tx) => identity.insertDevice(tx, b.auth.tenantId, b.userId, { name: 'planted', platform: 'linux' }),
      ],
      [
        'identity.oauth_grants',
        (tx) =>
          tx.query(
            `INSERT INTO identity.oauth_grants (grant_id, tenant_id, user_id, client_id) VALUES ($1, $2, $3, 'x')`,
            [`grant-${randomUUID()}`, b.auth.tenantId, b.userId],
          ),
      ],
      [
        'runtime.idempotency_keys',
        (tx) =>
          tx.query(
            `INSERT INTO runtime.idempotency_keys (tenant_id, principal_id, key, operation, fingerprint, response, expires_at)
             VALUES ($1, $2, 'planted-key', 'Mutation.x', 'f', '{}', now() + interval '1 hour')`,
            [b.auth.tenantId, b.userId],
          ),
      ],
    ];
    for (const [table, attempt] of attempts) {
      await expect(asA(serviceOf(table), attempt), table).rejects.toThrow(RLS_REFUSAL);
    }
    // Nothing was planted.
    await withTenant(dbs.memory, b.auth, async (tx) =>
      expect(await count(tx, "SELECT 1 FROM memory.workspaces WHERE name = 'planted'")).toBe(0),
    );
    await withTenant(dbs.identity, b.auth, async (tx) => {
      expect(await count(tx, "SELECT 1 FROM identity.devices WHERE name = 'planted'")).toBe(0);
      expect(await count(tx, 'SELECT 1 FROM identity.oauth_grants')).toBe(1);
    });
  });
});

describe("as each service's role, with no tenant set", () => {
  it('sees no row of any tenant table, in or out of a transaction', async () => {
    const tables = await tenantTables();
    for (const table of tables) {
      const db = dbs[serviceOf(table)];
      expect({ table, rows: await count(db, `SELECT 1 FROM ${table}`) }).toEqual({ table, rows: 0 });
      expect({ table, rows: await db.transaction((tx) => count(tx, `SELECT 1 FROM ${table}`)) }).toEqual({
        table,
        rows: 0,
      });
    }
    // Tenants and users are confined too (by id, and by membership or being the caller).
    expect(await count(dbs.identity, 'SELECT 1 FROM identity.tenants')).toBe(0);
    expect(await count(dbs.identity, 'SELECT 1 FROM identity.users')).toBe(0);
    expect(await identity.findTenant(dbs.identity, a.auth.tenantId)).toBeNull();
    expect(await memory.findWorkspace(dbs.memory, a.workspaceId)).toBeNull();
  });

  it('cannot write either', async () => {
    const db = dbs.memory;
    await expect(db.transaction((tx) => memory.createWorkspace(tx, a.auth, 'no tenant'))).rejects.toThrow(
      RLS_REFUSAL,
    );
    expect((await db.transaction((tx) => tx.query("UPDATE memory.records SET content = 'x'"))).rowCount).toBe(
      0,
    );
  });
});

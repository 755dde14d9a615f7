/**
 * The catalog subgraph's SQL. Every function takes a transaction opened by withTenant (or idempotentMutation), so
 * Row-Level Security limits it to the caller's tenant; nothing here filters by tenant by hand.
 */
import {
  badInput,
  notFound,
  type AuthContext,
  type Queryable,
  cursorTime,
  type KeysetAfter as After,
  type Keyed,
} from '@agentgraph/runtime';
import {
  toPlugin,
  toRelease,
  type PluginModel,
  type PluginRow,
  type ReleaseModel,
  type ReleaseRow,
} from './models.js';

const PLUGIN = 'p.id, p.name, p.display_name, p.description, p.publisher, p.created_at';
export const RELEASE =
  'r.id, r.plugin_id, r.version, r.state, r.created_by, r.created_at, r.state_reason, r.size_bytes, r.sha256, r.sha512, r.uploaded_by, r.uploaded_at, r.channel';
export const PLUGIN_AS =
  'p.id AS p_id, p.name AS p_name, p.display_name AS p_display_name, p.description AS p_description, p.publisher AS p_publisher, p.created_at AS p_created_at';

export type Prefixed = {
  p_id: string;
  p_name: string;
  p_display_name: string;
  p_description: string;
  p_publisher: string;
  p_created_at: Date;
};

export const pluginOf = (row: Prefixed): PluginModel =>
  toPlugin({
    id: row.p_id,
    name: row.p_name,
    display_name: row.p_display_name,
    description: row.p_description,
    publisher: row.p_publisher,
    created_at: row.p_created_at,
  });

export interface NewPlugin {
  name: string;
  displayName: string;
  description: string;
}

/** Creates the plugin; a name already used in the tenant is BAD_USER_INPUT (race-safe: the unique key decides). */
export async function createPlugin(tx: Queryable, auth: AuthContext, p: NewPlugin): Promise<PluginModel> {
  const r = await tx.query<PluginRow>(
    `INSERT INTO catalog.plugins AS p (tenant_id, name, display_name, description, publisher)
     VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (tenant_id, name) DO NOTHING
     RETURNING ${PLUGIN}`,
    [auth.tenantId, p.name, p.displayName, p.description, auth.principalId],
  );
  if (!r.rows[0]) {
    throw badInput('The plugin name (input.name) is already taken in your tenant. Choose another name.', {
      field: 'input.name',
    });
  }
  return toPlugin(r.rows[0]);
}

/** Plugins by id (lowercase uuids); batched per request for entity references. */
export async function findPlugins(tx: Queryable, ids: readonly string[]): Promise<Map<string, PluginModel>> {
  const r = await tx.query<PluginRow>(
    `SELECT ${PLUGIN} FROM catalog.plugins p WHERE p.id = ANY($1::uuid[])`,
    [ids],
  );
  return new Map(r.rows.map((row) => [row.id, toPlugin(row)]));
}

export async function findPlugin(tx: Queryable, id: string): Promise<PluginModel | null> {
  return (await findPlugins(tx, [id])).get(id) ?? null;
}

export async function listPlugins(
  tx: Queryable,
  limit: number,
  after: After | null,
): Promise<Keyed<PluginModel>[]> {
  const r = await tx.query<PluginRow>(
    `SELECT ${PLUGIN} FROM catalog.plugins p
      ${after ? 'WHERE (p.name, p.id) > ($2::text COLLATE "C", $3::uuid)' : ''}
      ORDER BY p.name, p.id LIMIT $1`,
    after ? [limit, after.value, after.id] : [limit],
  );
  return r.rows.map((row) => ({ node: toPlugin(row), key: { value: row.name, id: row.id } }));
}

/** Declares a release; the plugin must exist in the tenant, and a version it already has is BAD_USER_INPUT. */
export async function declareRelease(
  tx: Queryable,
  auth: AuthContext,
  pluginId: string,
  version: string,
): Promise<ReleaseModel> {
  const plugin = await findPlugin(tx, pluginId);
  if (!plugin) throw notFound('The plugin (pluginId)');
  const r = await tx.query<ReleaseRow>(
    `INSERT INTO catalog.releases AS r (tenant_id, plugin_id, version, created_by)
     VALUES ($1, $2, $3, $4)
     ON CONFLICT (tenant_id, plugin_id, version) DO NOTHING
     RETURNING ${RELEASE}`,
    [auth.tenantId, plugin.id, version, auth.principalId],
  );
  if (!r.rows[0]) {
    throw badInput(
      'This plugin already has a release with that version (input.version). Versions are immutable: declare a new one.',
      { field: 'input.version' },
    );
  }
  return toRelease(r.rows[0], plugin);
}

/** Releases by id with their plugin, in one query; batched per request for entity references. */
export async function findReleases(
  tx: Queryable,
  ids: readonly string[],
): Promise<Map<string, ReleaseModel>> {
  const r = await tx.query<ReleaseRow & Prefixed>(
    `SELECT ${RELEASE}, ${PLUGIN_AS}
       FROM catalog.releases r
       JOIN catalog.plugins p ON p.tenant_id = r.tenant_id AND p.id = r.plugin_id
      WHERE r.id = ANY($1::uuid[])`,
    [ids],
  );
  return new Map(r.rows.map((row) => [row.id, toRelease(row, pluginOf(row))]));
}

export async function listReleases(
  tx: Queryable,
  plugin: PluginModel,
  limit: number,
  after: After | null,
): Promise<Keyed<ReleaseModel>[]> {
  const r = await tx.query<ReleaseRow & { sort_time: string }>(
    `SELECT ${RELEASE}, ${cursorTime('r.created_at')} AS sort_time FROM catalog.releases r
      WHERE r.plugin_id = $1
      ${after ? 'AND (r.created_at, r.id) < ($3::timestamptz, $4::uuid)' : ''}
      ORDER BY r.created_at DESC, r.id DESC LIMIT $2`,
    after ? [plugin.id, limit, after.value, after.id] : [plugin.id, limit],
  );
  return r.rows.map((row) => ({ node: toRelease(row, plugin), key: { value: row.sort_time, id: row.id } }));
}

/**
 * What resolvers pass around for Plugin and Release (codegen mappers, see ../codegen.json). Plain JSON (dates as
 * ISO strings) because mutation payloads are stored as the idempotent response and replayed verbatim.
 */
import type { ReleaseState } from './generated/resolvers.js';

export interface PluginModel {
  id: string;
  name: string;
  displayName: string;
  description: string;
  publisherId: string;
  createdAt: string;
}

export interface ReleaseModel {
  id: string;
  /** Loaded with the release (one query), so Release.plugin needs no second round trip. */
  plugin: PluginModel;
  version: string;
  state: ReleaseState;
  createdById: string;
  createdAt: string;
}

export interface PluginRow {
  id: string;
  name: string;
  display_name: string;
  description: string;
  publisher: string;
  created_at: Date | string;
}

export interface ReleaseRow {
  id: string;
  plugin_id: string;
  version: string;
  state: ReleaseState;
  created_by: string;
  created_at: Date | string;
}

export function iso(value: Date | string): string {
  return (value instanceof Date ? value : new Date(value)).toISOString();
}

export function toPlugin(row: PluginRow): PluginModel {
  return {
    id: row.id,
    name: row.name,
    displayName: row.display_name,
    description: row.description,
    publisherId: row.publisher,
    createdAt: iso(row.created_at),
  };
}

export function toRelease(row: ReleaseRow, plugin: PluginModel): ReleaseModel {
  return {
    id: row.id,
    plugin,
    version: row.version,
    state: row.state,
    createdById: row.created_by,
    createdAt: iso(row.created_at),
  };
}

/**
 * A tenant's TUF repository (https://theupdateframework.github.io/specification/latest/), built and signed with
 * @tufjs/models and stored in the database: root, targets, snapshot and timestamp with separate keys, and one
 * delegated targets role per channel (alpha, beta, stable) under the top-level targets, each trusted only for its
 * own paths `<channel>/<plugin>/<file>`. Consistent snapshots: every version of every role is kept
 * (`N.<role>.json`), the newest timestamp is `timestamp.json`, and targets are fetched by hash prefix.
 *
 * Every function takes a tenant transaction and, before changing anything, locks the repository row, so publishes
 * of one tenant serialise while other tenants proceed. Time comes from the caller (fake clocks in tests).
 */
import { type KeyVault, type Queryable } from '@agentgraph/runtime';
import { Metadata, MetadataKind } from '@tufjs/models';
import {
  CHANNELS,
  TOP_ROLES,
  TUF_ROLES,
  activeTufKeys,
  insertTufKey,
  newTufKey,
  revokeKeys,
  signerOf,
  tufKeyJson,
  type Channel,
  type TufKey,
  type TufRole,
} from './keys.js';

export interface TufSettings {
  /** Signatures needed per role (and keys generated per role). */
  thresholds: Record<TufRole, number>;
  /** Lifetimes in seconds. */
  expiry: { root: number; targets: number; channel: number; snapshot: number; timestamp: number };
  /** Re-sign timestamp and snapshot when they expire within this many seconds. */
  refreshBeforeSeconds: number;
}

const DAY = 24 * 3600;
export const DEFAULT_TUF_SETTINGS: TufSettings = {
  thresholds: { root: 1, targets: 1, snapshot: 1, timestamp: 1, alpha: 1, beta: 1, stable: 1 },
  expiry: { root: 365 * DAY, targets: 365 * DAY, channel: 365 * DAY, snapshot: 7 * DAY, timestamp: DAY },
  refreshBeforeSeconds: DAY / 2,
};

const SPEC_VERSION = '1.0.31';

export type Versions = Record<TufRole, number>;

export interface RepoState {
  tenantId: string;
  versions: Versions;
  thresholds: Record<TufRole, number>;
  keys: Map<TufRole, TufKey[]>;
}

/** The path of a release's package in a channel, e.g. `alpha/web-search/web-search-1.4.0.zip`. */
export function targetPath(channel: Channel, plugin: string, version: string): string {
  return `${channel}/${plugin}/${plugin}-${version}.zip`;
}

function expires(now: Date, seconds: number): string {
  return new Date(now.getTime() + seconds * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function keysOf(state: RepoState, role: TufRole): TufKey[] {
  const keys = state.keys.get(role) ?? [];
  if (keys.length === 0) throw new Error(`no active key for TUF role ${role}`);
  return keys;
}

function signWith(kind: MetadataKind, signed: Record<string, unknown>, signers: TufKey[]): string {
  // fromJSON validates the shape; sign() signs the canonical JSON of `signed` (the TUF rule).
  const md = Metadata.fromJSON(kind as MetadataKind.Root, { signed, signatures: [] } as never);
  for (const k of signers) md.sign(signerOf(k), true);
  return JSON.stringify(md.toJSON());
}

async function store(tx: Queryable, state: RepoState, role: TufRole, version: number, body: string) {
  await tx.query(
    `INSERT INTO catalog.tuf_metadata (tenant_id, role, version, body) VALUES ($1, $2, $3, $4)`,
    [state.tenantId, role, version, body],
  );
}

function rootSigned(state: RepoState, version: number, now: Date, settings: TufSettings) {
  const keys: Record<string, unknown> = {};
  const roles: Record<string, unknown> = {};
  for (const role of TOP_ROLES) {
    const list = keysOf(state, role);
    for (const k of list) keys[k.keyId] = tufKeyJson(k);
    roles[role] = { keyids: list.map((k) => k.keyId), threshold: state.thresholds[role] };
  }
  return {
    _type: 'root',
    spec_version: SPEC_VERSION,
    version,
    expires: expires(now, settings.expiry.root),
    consistent_snapshot: true,
    keys,
    roles,
  };
}

async function signRoot(
  tx: Queryable,
  state: RepoState,
  now: Date,
  settings: TufSettings,
  previousRootKeys: TufKey[] = [],
) {
  const version = state.versions.root + 1;
  const signers = [...keysOf(state, 'root'), ...previousRootKeys];
  await store(
    tx,
    state,
    'root',
    version,
    signWith(MetadataKind.Root, rootSigned(state, version, now, settings), signers),
  );
  state.versions.root = version;
}

async function signTargets(tx: Queryable, state: RepoState, now: Date, settings: TufSettings) {
  const version = state.versions.targets + 1;
  const keys: Record<string, unknown> = {};
  const roles = CHANNELS.map((channel) => {
    const list = keysOf(state, channel);
    for (const k of list) keys[k.keyId] = tufKeyJson(k);
    return {
      name: channel,
      keyids: list.map((k) => k.keyId),
      threshold: state.thresholds[channel],
      terminating: true,
      paths: [`${channel}/*/*`],
    };
  });
  const signed = {
    _type: 'targets',
    spec_version: SPEC_VERSION,
    version,
    expires: expires(now, settings.expiry.targets),
    targets: {},
    delegations: { keys, roles },
  };
  await store(
    tx,
    state,
    'targets',
    version,
    signWith(MetadataKind.Targets, signed, keysOf(state, 'targets')),
  );
  state.versions.targets = version;
}

async function signChannel(
  tx: Queryable,
  state: RepoState,
  channel: Channel,
  now: Date,
  settings: TufSettings,
) {
  const version = state.versions[channel] + 1;
  const rows = await tx.query<{ path: string; length: string | number; sha256: string; sha512: string }>(
    `SELECT path, length, sha256, sha512 FROM catalog.tuf_targets WHERE channel = $1 ORDER BY path`,
    [channel],
  );
  const targets: Record<string, unknown> = {};
  for (const t of rows.rows) {
    targets[t.path] = { length: Number(t.length), hashes: { sha256: t.sha256, sha512: t.sha512 } };
  }
  const signed = {
    _type: 'targets',
    spec_version: SPEC_VERSION,
    version,
    expires: expires(now, settings.expiry.channel),
    targets,
  };
  await store(tx, state, channel, version, signWith(MetadataKind.Targets, signed, keysOf(state, channel)));
  state.versions[channel] = version;
}

async function signSnapshot(tx: Queryable, state: RepoState, now: Date, settings: TufSettings) {
  const version = state.versions.snapshot + 1;
  const meta: Record<string, unknown> = { 'targets.json': { version: state.versions.targets } };
  for (const c of CHANNELS) meta[`${c}.json`] = { version: state.versions[c] };
  const signed = {
    _type: 'snapshot',
    spec_version: SPEC_VERSION,
    version,
    expires: expires(now, settings.expiry.snapshot),
    meta,
  };
  await store(
    tx,
    state,
    'snapshot',
    version,
    signWith(MetadataKind.Snapshot, signed, keysOf(state, 'snapshot')),
  );
  state.versions.snapshot = version;
  await tx.query(`UPDATE catalog.tuf_repositories SET snapshot_expires_at = $1`, [
    expires(now, settings.expiry.snapshot),
  ]);
}

async function signTimestamp(tx: Queryable, state: RepoState, now: Date, settings: TufSettings) {
  const version = state.versions.timestamp + 1;
  const signed = {
    _type: 'timestamp',
    spec_version: SPEC_VERSION,
    version,
    expires: expires(now, settings.expiry.timestamp),
    meta: { 'snapshot.json': { version: state.versions.snapshot } },
  };
  await store(
    tx,
    state,
    'timestamp',
    version,
    signWith(MetadataKind.Timestamp, signed, keysOf(state, 'timestamp')),
  );
  state.versions.timestamp = version;
  await tx.query(`UPDATE catalog.tuf_repositories SET timestamp_expires_at = $1, versions = $2`, [
    expires(now, settings.expiry.timestamp),
    JSON.stringify(state.versions),
  ]);
}

/**
 * The tenant's repository, locked for this transaction; created (keys generated, every role signed at version 1)
 * when it does not exist yet.
 */
export async function openRepository(
  tx: Queryable,
  tenantId: string,
  now: Date,
  settings: TufSettings,
  vault: KeyVault,
): Promise<RepoState> {
  const existing = await tx.query<{ versions: Versions; thresholds: Record<TufRole, number> }>(
    `SELECT versions, thresholds FROM catalog.tuf_repositories WHERE tenant_id = $1 FOR UPDATE`,
    [tenantId],
  );
  if (existing.rows[0]) {
    const row = existing.rows[0];
    return {
      tenantId,
      versions: { ...row.versions },
      thresholds: row.thresholds,
      keys: await activeTufKeys(tx, vault),
    };
  }
  const inserted = await tx.query(
    `INSERT INTO catalog.tuf_repositories (tenant_id, versions, thresholds, timestamp_expires_at, snapshot_expires_at)
     VALUES ($1, $2, $3, $4, $4) ON CONFLICT (tenant_id) DO NOTHING RETURNING tenant_id`,
    [tenantId, JSON.stringify({}), JSON.stringify(settings.thresholds), now.toISOString()],
  );
  if (!inserted.rows[0]) return openRepository(tx, tenantId, now, settings, vault); // created concurrently: lock theirs
  for (const role of TUF_ROLES) {
    for (let i = 0; i < settings.thresholds[role]; i++)
      await insertTufKey(tx, tenantId, newTufKey(role), vault);
  }
  const state: RepoState = {
    tenantId,
    versions: { root: 0, targets: 0, snapshot: 0, timestamp: 0, alpha: 0, beta: 0, stable: 0 },
    thresholds: { ...settings.thresholds },
    keys: await activeTufKeys(tx, vault),
  };
  await signRoot(tx, state, now, settings);
  await signTargets(tx, state, now, settings);
  for (const c of CHANNELS) await signChannel(tx, state, c, now, settings);
  await signSnapshot(tx, state, now, settings);
  await signTimestamp(tx, state, now, settings);
  return state;
}

/** Re-signs the given channels (their targets changed in catalog.tuf_targets), then snapshot and timestamp. */
export async function publishChannels(
  tx: Queryable,
  state: RepoState,
  channels: readonly Channel[],
  now: Date,
  settings: TufSettings,
): Promise<void> {
  for (const c of new Set(channels)) await signChannel(tx, state, c, now, settings);
  await signSnapshot(tx, state, now, settings);
  await signTimestamp(tx, state, now, settings);
}

/** The scheduled refresh: a new timestamp (and a new snapshot when it is about to expire). */
export async function refreshTimestamp(
  tx: Queryable,
  state: RepoState,
  now: Date,
  settings: TufSettings,
  opts: { snapshot: boolean },
): Promise<void> {
  if (opts.snapshot) await signSnapshot(tx, state, now, settings);
  await signTimestamp(tx, state, now, settings);
}

/**
 * Key rotation of any role: its keys are revoked and new ones generated. A top-level role's keys live in root, so
 * a new root version lists them, signed by the root keys (for a root rotation by the old and the new root keys,
 * so clients that trust the old root accept the new one). A channel's keys live in the top-level targets'
 * delegations, so targets is re-signed. The role itself is re-signed with its new keys, then snapshot and timestamp.
 */
export async function rotateRole(
  tx: Queryable,
  state: RepoState,
  role: TufRole,
  now: Date,
  settings: TufSettings,
  vault: KeyVault,
): Promise<void> {
  const previousRoot = role === 'root' ? keysOf(state, 'root') : [];
  await revokeKeys(tx, role, now);
  for (let i = 0; i < state.thresholds[role]; i++)
    await insertTufKey(tx, state.tenantId, newTufKey(role), vault);
  state.keys = await activeTufKeys(tx, vault);
  if ((TOP_ROLES as readonly string[]).includes(role)) await signRoot(tx, state, now, settings, previousRoot);
  if (role === 'targets' || (CHANNELS as readonly string[]).includes(role))
    await signTargets(tx, state, now, settings);
  if ((CHANNELS as readonly string[]).includes(role))
    await signChannel(tx, state, role as Channel, now, settings);
  await signSnapshot(tx, state, now, settings);
  await signTimestamp(tx, state, now, settings);
}

/** The stored bytes of a metadata file, or null. `name` is `timestamp.json` or `N.<role>.json`. */
export async function readMetadata(tx: Queryable, name: string): Promise<string | null> {
  if (name === 'timestamp.json') {
    const r = await tx.query<{ body: string }>(
      `SELECT body FROM catalog.tuf_metadata WHERE role = 'timestamp' ORDER BY version DESC LIMIT 1`,
    );
    return r.rows[0]?.body ?? null;
  }
  const m = /^([1-9]\d{0,9})\.(root|targets|snapshot|alpha|beta|stable)\.json$/.exec(name);
  if (!m) return null;
  const r = await tx.query<{ body: string }>(
    `SELECT body FROM catalog.tuf_metadata WHERE role = $1 AND version = $2`,
    [m[2], Number(m[1])],
  );
  return r.rows[0]?.body ?? null;
}

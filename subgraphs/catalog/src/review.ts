/**
 * Review decisions and publishing, each inside the mutation's transaction (so the decision, its audit row, the
 * repository's new signed metadata and the idempotency key commit together or not at all):
 * - approve (IN_REVIEW → APPROVED, published in alpha) and reject (IN_REVIEW → REJECTED): ADMIN or OWNER, never the
 *   member who uploaded the package (separation of duties, whatever their role);
 * - appeal (REJECTED → IN_REVIEW): the uploader only;
 * - promote (alpha → beta → stable) and revoke (APPROVED → REVOKED, target removed): ADMIN or OWNER;
 * - rotate a TUF role's keys: OWNER.
 */
import {
  AppError,
  badInput,
  notFound,
  type AuthContext,
  type KeyVault,
  type Queryable,
} from '@agentgraph/runtime';
import type { ChannelName, ReleaseModel } from './models.js';
import { lockRelease, recordEvent, setReleaseState, type LockedRelease } from './pipeline-store.js';
import { CHANNELS, type TufRole } from './tuf/keys.js';
import {
  openRepository,
  publishChannels,
  rotateRole,
  targetPath,
  type TufSettings,
} from './tuf/repository.js';

export interface ReviewDeps {
  now: () => Date;
  tuf: TufSettings;
  /** Seals and opens the tenant's stored TUF keys (the server's key-encryption keys). */
  vault: KeyVault;
}

function strip(r: LockedRelease): ReleaseModel {
  const { uploadedBy: _u, storageKey: _s, ...model } = r;
  return model;
}

async function load(tx: Queryable, id: string, expected: ReleaseModel['state'], verb: string) {
  const release = await lockRelease(tx, id);
  if (!release) throw notFound('The release (releaseId)');
  if (release.state !== expected) {
    throw badInput(
      `The release is ${release.state}; only ${expected} releases can be ${verb}. Re-read it and decide again.`,
      { field: 'releaseId', state: release.state },
    );
  }
  return release;
}

function separationOfDuties(auth: AuthContext, release: LockedRelease, verb: string) {
  if (release.uploadedBy === auth.principalId) {
    throw new AppError(
      'FORBIDDEN',
      `You uploaded this package, so you cannot ${verb} it (separation of duties, whatever your role). Ask another admin or owner to review it.`,
    );
  }
}

export async function approve(tx: Queryable, auth: AuthContext, id: string, deps: ReviewDeps) {
  const release = await load(tx, id, 'IN_REVIEW', 'approved');
  separationOfDuties(auth, release, 'approve');
  const now = deps.now();
  const repo = await openRepository(tx, auth.tenantId, now, deps.tuf, deps.vault);
  const channel: ChannelName = 'alpha';
  const pkg = release.package!;
  await tx.query(
    `INSERT INTO catalog.tuf_targets (tenant_id, release_id, channel, path, length, sha256, sha512, storage_key)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [
      auth.tenantId,
      release.id,
      channel,
      targetPath(channel, release.plugin.name, release.version),
      pkg.sizeBytes,
      pkg.sha256,
      pkg.sha512,
      release.storageKey,
    ],
  );
  await publishChannels(tx, repo, [channel], now, deps.tuf);
  await setReleaseState(tx, release.id, 'APPROVED', now, { channel });
  await recordEvent(tx, auth.tenantId, release.id, 'APPROVED', auth.principalId, now, { channel });
  return { ...strip(release), state: 'APPROVED' as const, stateReason: null, channel };
}

export async function reject(tx: Queryable, auth: AuthContext, id: string, reason: string, deps: ReviewDeps) {
  const release = await load(tx, id, 'IN_REVIEW', 'rejected');
  separationOfDuties(auth, release, 'reject');
  const now = deps.now();
  await setReleaseState(tx, release.id, 'REJECTED', now, { reason });
  await recordEvent(tx, auth.tenantId, release.id, 'REJECTED', auth.principalId, now, { reason });
  return { ...strip(release), state: 'REJECTED' as const, stateReason: reason };
}

export async function appeal(tx: Queryable, auth: AuthContext, id: string, reason: string, deps: ReviewDeps) {
  const release = await load(tx, id, 'REJECTED', 'appealed');
  if (release.uploadedBy !== auth.principalId) {
    throw new AppError('FORBIDDEN', 'Only the member who uploaded the package can appeal its rejection.');
  }
  const now = deps.now();
  await setReleaseState(tx, release.id, 'IN_REVIEW', now);
  await recordEvent(tx, auth.tenantId, release.id, 'APPEALED', auth.principalId, now, { reason });
  return { ...strip(release), state: 'IN_REVIEW' as const, stateReason: null };
}

export async function promote(tx: Queryable, auth: AuthContext, id: string, deps: ReviewDeps) {
  const release = await load(tx, id, 'APPROVED', 'promoted');
  const from = release.channel!;
  const next = CHANNELS[CHANNELS.indexOf(from) + 1];
  if (!next) throw badInput('The release is already in the stable channel; there is no channel after it.');
  const now = deps.now();
  const repo = await openRepository(tx, auth.tenantId, now, deps.tuf, deps.vault);
  await tx.query(`UPDATE catalog.tuf_targets SET channel = $2, path = $3 WHERE release_id = $1`, [
    release.id,
    next,
    targetPath(next, release.plugin.name, release.version),
  ]);
  await publishChannels(tx, repo, [from, next], now, deps.tuf);
  await setReleaseState(tx, release.id, 'APPROVED', now, { channel: next });
  await recordEvent(tx, auth.tenantId, release.id, 'PROMOTED', auth.principalId, now, { channel: next });
  return { ...strip(release), channel: next };
}

export async function revoke(tx: Queryable, auth: AuthContext, id: string, reason: string, deps: ReviewDeps) {
  const release = await load(tx, id, 'APPROVED', 'revoked');
  const from = release.channel!;
  const now = deps.now();
  const repo = await openRepository(tx, auth.tenantId, now, deps.tuf, deps.vault);
  await tx.query(`DELETE FROM catalog.tuf_targets WHERE release_id = $1`, [release.id]);
  await publishChannels(tx, repo, [from], now, deps.tuf);
  await setReleaseState(tx, release.id, 'REVOKED', now, { reason });
  await recordEvent(tx, auth.tenantId, release.id, 'REVOKED', auth.principalId, now, {
    reason,
    channel: from,
  });
  return { ...strip(release), state: 'REVOKED' as const, stateReason: reason, channel: null };
}

export async function rotate(tx: Queryable, auth: AuthContext, role: TufRole, deps: ReviewDeps) {
  if (auth.role !== 'OWNER') {
    throw new AppError(
      'FORBIDDEN',
      `Your role (${auth.role}) cannot rotate signing keys; only an OWNER can.`,
    );
  }
  const now = deps.now();
  const repo = await openRepository(tx, auth.tenantId, now, deps.tuf, deps.vault);
  await rotateRole(tx, repo, role, now, deps.tuf, deps.vault);
  return { role, rootVersion: repo.versions.root };
}

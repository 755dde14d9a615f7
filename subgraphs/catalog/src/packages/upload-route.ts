/**
 * POST /packages?plugin=<name>&version=<semver> (Authorization: Bearer, api:write, PUBLISHER / ADMIN / OWNER): the
 * request body is the package (a zip), streamed to quarantine storage while SHA-256 and SHA-512 are computed; more
 * than the limit (5 MB) is 413 and nothing is kept. The plugin must exist in the caller's tenant; the release is
 * declared if it was not, and must still await its upload (else 409). Answers 202 with the release id and digests;
 * the release is QUARANTINED and its analysis queued.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Transform, type TransformCallback } from 'node:stream';
import {
  AppError,
  assertOperationScope,
  requirePersonToken,
  notFound,
  sendJson,
  withTenant,
  type Database,
  type Logger,
  type TokenVerifier,
} from '@agentgraph/runtime';
import { z } from 'zod';
import { PLUGIN_NAME, SEMVER, requirePublisher } from '../input.js';
import { findPluginByName, recordEvent, recordUpload, releaseForUpload } from '../pipeline-store.js';
import type { PackageStore } from './package-store.js';

export const UPLOAD_PATH = '/packages';
export const MAX_PACKAGE_BYTES = 5 * 1024 * 1024;

const Query = z.object({
  plugin: z.string().regex(PLUGIN_NAME, 'must be a plugin name'),
  version: z.string().max(64).regex(SEMVER, 'must be a semantic version MAJOR.MINOR.PATCH[-prerelease]'),
});

class TooLarge extends Error {}

/** Counts and hashes what passes; fails with TooLarge past the limit. */
class Digesting extends Transform {
  readonly sha256 = createHash('sha256');
  readonly sha512 = createHash('sha512');
  size = 0;
  constructor(private readonly max: number) {
    super();
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback) {
    this.size += chunk.length;
    if (this.size > this.max) return done(new TooLarge());
    this.sha256.update(chunk);
    this.sha512.update(chunk);
    done(null, chunk);
  }
}

function tooLarge(max: number): AppError {
  return new AppError(
    'PAYLOAD_TOO_LARGE',
    `The package is over the limit of ${max} bytes. Make it smaller (leave out assets the plugin does not need).`,
    { maxBytes: max },
  );
}

/** Reads and discards the rest of a refused body (up to a bound), so the client reads the answer, not a reset. */
async function discard(req: IncomingMessage, bound: number): Promise<void> {
  let seen = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    seen += chunk.length;
    if (seen > bound) {
      req.destroy();
      return;
    }
  }
}

export interface UploadRouteOptions {
  db: Database;
  log: Logger;
  store: PackageStore;
  verifyToken: TokenVerifier;
  now: () => Date;
  maxBytes: number;
  /** Called after an upload committed (the analysis queue starts). */
  uploaded: () => void;
}

export function uploadRoute(opts: UploadRouteOptions) {
  const { db, log, store, verifyToken, now, maxBytes } = opts;
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (req.method !== 'POST') {
      res.writeHead(405, { allow: 'POST' }).end();
      return;
    }
    const auth = requirePublisher(await verifyToken(req.headers.authorization));
    assertOperationScope(auth, 'mutation');
    requirePersonToken(auth, 'upload packages');
    const url = new URL(req.url ?? '/', 'http://catalog');
    const query = Query.safeParse(Object.fromEntries(url.searchParams));
    if (!query.success) {
      const issue = query.error.issues[0]!;
      throw new AppError(
        'BAD_USER_INPUT',
        `Invalid query parameter ${issue.path.join('.') || '(plugin, version)'}: ${issue.message}. Send ?plugin=<name>&version=<semver>.`,
        { field: issue.path.join('.') },
      );
    }
    const { plugin: pluginName, version } = query.data;
    const declared = Number(req.headers['content-length']);
    const release = await withTenant(db, auth, async (tx) => {
      const plugin = await findPluginByName(tx, pluginName);
      if (!plugin) throw notFound(`The plugin "${pluginName}"`);
      return releaseForUpload(tx, auth, plugin, version);
    });
    const refuse = async (err: AppError, reason: string) => {
      await withTenant(db, auth, (tx) =>
        recordEvent(tx, auth.tenantId, release.id, 'UPLOAD_REJECTED', auth.principalId, now(), { reason }),
      );
      throw err;
    };
    if (release.state !== 'AWAITING_UPLOAD') {
      throw new AppError(
        'VERSION_CONFLICT',
        `${pluginName}@${version} already has its package (the release is ${release.state}). Versions are immutable: upload a new version.`,
      );
    }
    if (Number.isFinite(declared) && declared > maxBytes) {
      res.setHeader('connection', 'close');
      await discard(req, 4 * maxBytes);
      await refuse(tooLarge(maxBytes), `package of ${declared} bytes is over the limit of ${maxBytes}`);
    }
    const key = `${auth.tenantId}/${randomUUID()}.zip`;
    const digest = new Digesting(maxBytes);
    try {
      await store.put(key, req.pipe(digest));
    } catch (err) {
      req.unpipe(digest);
      if (err instanceof TooLarge) {
        res.setHeader('connection', 'close');
        await discard(req, 4 * maxBytes);
        await refuse(tooLarge(maxBytes), `package over the limit of ${maxBytes} bytes (upload stopped)`);
      }
      throw err;
    }
    const pkg = {
      storageKey: key,
      sizeBytes: digest.size,
      sha256: digest.sha256.digest('hex'),
      sha512: digest.sha512.digest('hex'),
    };
    const recorded = await withTenant(db, auth, (tx) => recordUpload(tx, auth, release.id, pkg, now()));
    if (!recorded) {
      await store.delete(key);
      throw new AppError(
        'VERSION_CONFLICT',
        `Another upload of ${pluginName}@${version} finished first. Versions are immutable: upload a new version.`,
      );
    }
    log.info('package uploaded', { releaseId: release.id, sizeBytes: pkg.sizeBytes });
    opts.uploaded();
    sendJson(res, 202, {
      releaseId: release.id,
      plugin: pluginName,
      version,
      state: recorded.state,
      sizeBytes: pkg.sizeBytes,
      sha256: pkg.sha256,
      sha512: pkg.sha512,
    });
  };
}

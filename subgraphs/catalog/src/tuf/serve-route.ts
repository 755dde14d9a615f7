/**
 * GET /tuf/<tenant id>/metadata/<file> and GET /tuf/<tenant id>/targets/<channel>/<plugin>/<sha256>.<file>: a
 * tenant's TUF repository, read-only and without a token (what TUF protects is in the signatures, not in access).
 * Metadata: `timestamp.json` (newest) and `N.<role>.json`; targets by hash prefix (consistent snapshots) while
 * they are listed in a channel; anything else is 404. Tenant isolation holds here too: each request reads in the
 * named tenant's transaction (RLS).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import { sendJson, type Database } from '@agentgraph/runtime';
import type { PackageStore } from '../packages/package-store.js';
import { readMetadata } from './repository.js';

export const TUF_PREFIX = '/tuf/';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const TARGET = /^(alpha|beta|stable)\/([a-z][a-z0-9-]{1,62})\/([0-9a-f]{64})\.([A-Za-z0-9.+-]{1,200})$/;

function notFound(res: ServerResponse) {
  sendJson(res, 404, { error: 'not_found' });
}

export function tufRoute(opts: { db: Database; store: PackageStore }) {
  const { db, store } = opts;
  return async (req: IncomingMessage, res: ServerResponse, path: string): Promise<void> => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    const rest = path.slice(TUF_PREFIX.length);
    const slash = rest.indexOf('/');
    const tenantId = rest.slice(0, slash);
    if (slash < 0 || !UUID.test(tenantId)) return notFound(res);
    const inTenant = <T>(fn: Parameters<Database['transaction']>[0]) =>
      db.transaction(fn, { 'app.tenant_id': tenantId, 'app.principal_id': 'tuf-reader' }) as Promise<T>;
    const kind = rest.slice(slash + 1);
    if (kind.startsWith('metadata/')) {
      const body = await inTenant<string | null>((tx) => readMetadata(tx, kind.slice('metadata/'.length)));
      if (body === null) return notFound(res);
      res.writeHead(200, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
        'cache-control': kind.endsWith('/timestamp.json')
          ? 'no-cache'
          : 'public, max-age=31536000, immutable',
      });
      res.end(req.method === 'HEAD' ? undefined : body);
      return;
    }
    if (kind.startsWith('targets/')) {
      const m = TARGET.exec(kind.slice('targets/'.length));
      if (!m) return notFound(res);
      const [, channel, plugin, sha256, file] = m;
      const target = await inTenant<{ storage_key: string; length: string } | undefined>(async (tx) => {
        const r = await tx.query<{ storage_key: string; length: string }>(
          `SELECT storage_key, length::text AS length FROM catalog.tuf_targets WHERE path = $1 AND sha256 = $2`,
          [`${channel}/${plugin}/${file}`, sha256],
        );
        return r.rows[0];
      });
      const data = target && (await store.get(target.storage_key));
      if (!target || !data) return notFound(res);
      res.writeHead(200, {
        'content-type': 'application/zip',
        'content-length': target.length,
        'cache-control': 'public, max-age=31536000, immutable',
      });
      if (req.method === 'HEAD') {
        data.destroy();
        res.end();
        return;
      }
      await pipeline(data, res);
      return;
    }
    notFound(res);
  };
}

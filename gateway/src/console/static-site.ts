/**
 * Serves the built console (web/dist) from memory: every file read once at start, with its gzip and brotli forms
 * and a strong ETag. Hashed files under /assets/ are immutable for a year; index.html is revalidated on every load
 * and answers every client-side route (a path without a file extension), so a reload on /devices works.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname, join, relative, sep } from 'node:path';
import { brotliCompressSync, constants as zlib, gzipSync } from 'node:zlib';
import { SECURITY_HEADERS } from './security-headers.js';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.webmanifest': 'application/manifest+json',
  '.txt': 'text/plain; charset=utf-8',
  '.woff2': 'font/woff2',
};
const COMPRESSIBLE = new Set(['.html', '.js', '.css', '.svg', '.json', '.webmanifest', '.txt']);

interface StaticFile {
  type: string;
  etag: string;
  immutable: boolean;
  identity: Buffer;
  gzip?: Buffer;
  br?: Buffer;
}

export interface StaticSite {
  /** Answers GET/HEAD for a console file or client-side route; false when the path is not the console's. */
  serve(req: IncomingMessage, res: ServerResponse, path: string): boolean;
  /** Files served (URL path → size in bytes, uncompressed). */
  readonly files: ReadonlyMap<string, number>;
}

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = join(dir, name);
    return statSync(full).isDirectory() ? walk(full) : [full];
  });
}

function load(dir: string): Map<string, StaticFile> {
  const files = new Map<string, StaticFile>();
  for (const full of walk(dir)) {
    const parts = relative(dir, full).split(sep);
    if (parts.some((part) => part.startsWith('.'))) continue; // the build stamp, editor files
    const urlPath = `/${parts.join('/')}`;
    const ext = extname(full);
    const body = readFileSync(full);
    const file: StaticFile = {
      type: TYPES[ext] ?? 'application/octet-stream',
      etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`,
      immutable: urlPath.startsWith('/assets/'),
      identity: body,
    };
    if (COMPRESSIBLE.has(ext) && body.length > 512) {
      file.gzip = gzipSync(body, { level: 9 });
      file.br = brotliCompressSync(body, {
        params: { [zlib.BROTLI_PARAM_QUALITY]: 11, [zlib.BROTLI_PARAM_SIZE_HINT]: body.length },
      });
    }
    files.set(urlPath, file);
  }
  return files;
}

/** Whether a path is a client-side route of the app (no file extension, not an API path). */
function isAppRoute(path: string): boolean {
  return !extname(path) && !path.startsWith('/assets/') && !path.split('/').some((s) => s.startsWith('.'));
}

export function createStaticSite(distDir: string): StaticSite {
  const files = load(distDir);
  const index = files.get('/index.html');
  if (!index) throw new Error(`${distDir} has no index.html: build the console first (npm run build:web).`);

  return {
    files: new Map([...files].map(([p, f]) => [p, f.identity.length])),
    serve(req, res, path) {
      if (req.method !== 'GET' && req.method !== 'HEAD') return false;
      let file = files.get(path);
      if (!file && isAppRoute(path)) file = index;
      if (!file) return false;
      const accept = String(req.headers['accept-encoding'] ?? '');
      const [body, encoding] =
        file.br && /\bbr\b/.test(accept)
          ? [file.br, 'br']
          : file.gzip && /\bgzip\b/.test(accept)
            ? [file.gzip, 'gzip']
            : [file.identity, undefined];
      const headers: Record<string, string | number> = {
        ...SECURITY_HEADERS,
        'content-type': file.type,
        etag: file.etag,
        'cache-control': file.immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
        vary: 'accept-encoding',
      };
      if (req.headers['if-none-match'] === file.etag) {
        res.writeHead(304, headers);
        res.end();
        return true;
      }
      if (encoding) headers['content-encoding'] = encoding;
      headers['content-length'] = body.length;
      res.writeHead(200, headers);
      res.end(req.method === 'HEAD' ? undefined : body);
      return true;
    },
  };
}

/**
 * The console's package upload route (src/console/package-upload.ts) between a real client and a stub catalog,
 * all real HTTP on loopback: the body streams through unbuffered with only the allowed headers, the answer comes
 * back as the catalog gave it, and an unreachable catalog is a coded 503.
 */
import { createHash } from 'node:crypto';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLogger } from '@agentgraph/runtime';
import { afterEach, describe, expect, it } from 'vitest';
import { createPackageUpload, PACKAGE_UPLOAD_PATH } from '../src/console/package-upload.js';

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  sha256: string;
  bytes: number;
}

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(
    servers.splice(0).map(
      (s) =>
        new Promise<void>((resolve) => {
          s.closeAllConnections();
          s.close(() => resolve());
        }),
    ),
  );
});

async function listen(server: Server): Promise<string> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A stub catalog: records each request (and its first chunk), then answers with `answer`. */
async function stubCatalog(answer: (seen: Seen, res: ServerResponse) => void) {
  const seen: Seen[] = [];
  let firstChunk: () => void = () => undefined;
  const gotFirstChunk = new Promise<void>((resolve) => (firstChunk = resolve));
  const url = await listen(
    createServer((req, res) => {
      const hash = createHash('sha256');
      let bytes = 0;
      req.on('data', (chunk: Buffer) => {
        if (bytes === 0) firstChunk();
        bytes += chunk.length;
        hash.update(chunk);
      });
      req.on('end', () => {
        const s = {
          method: req.method!,
          url: req.url!,
          headers: req.headers,
          sha256: hash.digest('hex'),
          bytes,
        };
        seen.push(s);
        answer(s, res);
      });
    }),
  );
  return { url, seen, gotFirstChunk };
}

/** The gateway's part, reduced to what it does around console routes: a correlation id, then the route or 404. */
async function frontFor(catalogUrl: string): Promise<string> {
  const logs: string[] = [];
  const route = createPackageUpload({
    catalogUrl,
    log: createLogger({ service: 'test' }, { level: 'error', write: (l) => logs.push(l) }),
  });
  return listen(
    createServer((req, res) => {
      const [path, query] = (req.url ?? '/').split('?');
      res.setHeader('x-correlation-id', 'corr-123');
      void route(req, res, path!, query === undefined ? '' : `?${query}`).then((handled) => {
        if (!handled) res.writeHead(404).end('not mine');
      });
    }),
  );
}

const ACCEPTED = (seen: Seen, res: ServerResponse) => {
  const body = JSON.stringify({
    releaseId: 'r1',
    state: 'QUARANTINED',
    sizeBytes: seen.bytes,
    sha256: seen.sha256,
  });
  res.writeHead(202, { 'content-type': 'application/json; charset=utf-8', 'x-internal': 'secret' });
  res.end(body);
};

describe('console package upload route', () => {
  it('forwards the body, the allowed headers and the query to the catalog, and its answer back', async () => {
    const catalog = await stubCatalog(ACCEPTED);
    const front = await frontFor(catalog.url);
    const body = new Uint8Array(1024 * 1024).map((_, i) => (i * 31) % 251);
    const res = await fetch(`${front}${PACKAGE_UPLOAD_PATH}?plugin=web-search&version=1.0.0`, {
      method: 'POST',
      headers: {
        authorization: 'Bearer tok',
        'content-type': 'application/zip',
        cookie: 'ag_refresh=never-forwarded',
        'x-other': 'dropped',
      },
      body,
    });
    expect(res.status).toBe(202);
    expect(res.headers.get('x-internal')).toBeNull();
    const answer = (await res.json()) as { sha256: string; sizeBytes: number };
    const sha256 = createHash('sha256').update(body).digest('hex');
    expect(answer).toEqual({ releaseId: 'r1', state: 'QUARANTINED', sizeBytes: body.length, sha256 });
    const [seen] = catalog.seen;
    expect(seen).toMatchObject({ method: 'POST', url: '/packages?plugin=web-search&version=1.0.0', sha256 });
    expect(seen!.headers).toMatchObject({
      authorization: 'Bearer tok',
      'content-type': 'application/zip',
      'content-length': String(body.length),
      'x-correlation-id': 'corr-123',
    });
    expect(seen!.headers['cookie']).toBeUndefined();
    expect(seen!.headers['x-other']).toBeUndefined();
  });

  it('streams: the catalog reads the first bytes before the client has sent the rest', async () => {
    const catalog = await stubCatalog(ACCEPTED);
    const front = new URL(await frontFor(catalog.url));
    const answered = new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = request(
        {
          host: front.hostname,
          port: front.port,
          method: 'POST',
          path: `${PACKAGE_UPLOAD_PATH}?plugin=p&version=1.0.0`,
          headers: { authorization: 'Bearer tok', 'content-type': 'application/zip' }, // chunked: no length
        },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode!, text }));
        },
      );
      req.on('error', reject);
      req.write(Buffer.from('first part;'));
      // The rest only after the catalog has the first part: a buffering proxy would wait here forever.
      void catalog.gotFirstChunk.then(() => req.end(Buffer.from('second part')));
    });
    const { status, text } = await answered;
    expect(status).toBe(202);
    expect(JSON.parse(text)).toMatchObject({ sizeBytes: 'first part;second part'.length });
    expect(catalog.seen[0]!.headers['transfer-encoding']).toBe('chunked');
  });

  it("passes the catalog's refusals through: status, JSON body and retry-after", async () => {
    const refusal = {
      errors: [
        { message: 'The package is over the limit', extensions: { code: 'PAYLOAD_TOO_LARGE', maxBytes: 10 } },
      ],
    };
    const catalog = await stubCatalog((_seen, res) => {
      res.writeHead(413, { 'content-type': 'application/json; charset=utf-8', 'retry-after': '7' });
      res.end(JSON.stringify(refusal));
    });
    const front = await frontFor(catalog.url);
    const res = await fetch(`${front}${PACKAGE_UPLOAD_PATH}?plugin=p&version=1.0.0`, {
      method: 'POST',
      headers: { authorization: 'Bearer tok' },
      body: new Uint8Array(100),
    });
    expect(res.status).toBe(413);
    expect(res.headers.get('retry-after')).toBe('7');
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(await res.json()).toEqual(refusal);
  });

  it('answers 503 SERVICE_UNAVAILABLE with the correlation id when the catalog is unreachable', async () => {
    const gone = await listen(createServer());
    const port = new URL(gone).port;
    await new Promise<void>((resolve) => servers.pop()!.close(() => resolve()));
    const front = await frontFor(`http://127.0.0.1:${port}`);
    const res = await fetch(`${front}${PACKAGE_UPLOAD_PATH}?plugin=p&version=1.0.0`, {
      method: 'POST',
      body: new Uint8Array(10),
    });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('2');
    const body = (await res.json()) as { errors: { message: string; extensions: Record<string, unknown> }[] };
    expect(body.errors[0]!.extensions).toMatchObject({
      code: 'SERVICE_UNAVAILABLE',
      correlationId: 'corr-123',
    });
    expect(body.errors[0]!.message).toMatch(/catalog service did not take the upload .*Try again/);
  });

  it('refuses other methods with 405 and leaves other paths to the rest of the console', async () => {
    const catalog = await stubCatalog(ACCEPTED);
    const front = await frontFor(catalog.url);
    const get = await fetch(`${front}${PACKAGE_UPLOAD_PATH}`);
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    const other = await fetch(`${front}/catalog/other`, { method: 'POST', body: 'x' });
    expect(other.status).toBe(404);
    expect(await other.text()).toBe('not mine');
    expect(catalog.seen).toEqual([]);
  });
});

/** A real loopback upstream for the proxy tests: a JSON echo on /graphql and SSE streams on /stream. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SeenRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export interface TestUpstream {
  url: string;
  seen: SeenRequest[];
  /** Resolves when the client of the nth stream (0-based) went away. */
  streamClosed(index: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * `/stream?events=N&keepOpen=1&heartbeat=1`: N events `data: {"n":i}` written in one chunk, preceded by a `:`
 * heartbeat when asked; the stream then ends, or stays open with keepOpen.
 */
export async function startUpstream(): Promise<TestUpstream> {
  const seen: SeenRequest[] = [];
  const closed: Array<{ promise: Promise<void>; resolve: () => void }> = [];
  const closedAt = (i: number) => {
    while (closed.length <= i) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      closed.push({ promise, resolve });
    }
    return closed[i]!;
  };
  let streams = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      const url = new URL(req.url!, 'http://upstream.invalid');
      if (url.pathname.endsWith('/stream')) {
        const index = streams++;
        res.on('close', () => closedAt(index).resolve());
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        const n = Number(url.searchParams.get('events') ?? '3');
        let text = url.searchParams.get('heartbeat') ? ':\n\n' : '';
        for (let i = 1; i <= n; i++) text += `event: next\ndata: {"n":${i}}\n\n`;
        if (url.searchParams.get('keepOpen')) res.write(text);
        else res.end(text);
        return;
      }
      const answer = JSON.stringify({ data: { echo: body, path: url.pathname, query: url.search } });
      res
        .writeHead(200, { 'content-type': 'application/graphql-response+json', 'x-upstream': 'yes' })
        .end(answer);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    streamClosed: (i) => closedAt(i).promise,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** POSTs a GraphQL-shaped JSON body. */
export function post(
  base: string,
  operationName: string,
  variables: Record<string, unknown> = {},
  path = '/graphql',
) {
  return fetch(base + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: `mutation ${operationName} { x }`, operationName, variables }),
  });
}

/** Reads a streamed body until it ends or breaks; returns the text and whether it broke. */
export async function readAll(res: Response): Promise<{ text: string; broke: boolean }> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { text, broke: false };
      text += decoder.decode(value, { stream: true });
    }
  } catch {
    return { text, broke: true };
  }
}

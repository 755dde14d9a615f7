/** Test helpers: the error table, a fake clock, and a loopback HTTP server scripted per request. */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Clock, ErrorTable } from '../src/index.js';

export const errorTable = JSON.parse(
  readFileSync(new URL('../../../schemas/errors.json', import.meta.url), 'utf8'),
) as ErrorTable;

export class TestClock implements Clock {
  readonly sleeps: number[] = [];
  constructor(private current = 1_700_000_000_000) {}
  now(): number {
    return this.current;
  }
  async sleep(ms: number): Promise<void> {
    this.sleeps.push(ms);
    this.current += ms;
  }
}

export interface Received {
  headers: IncomingMessage['headers'];
  body: any;
}

export interface Loopback {
  url: string;
  received: Received[];
  close(): Promise<void>;
}

/** A real HTTP server on 127.0.0.1; `handle` answers request number `index` (0-based). */
export async function loopback(
  handle: (index: number, req: IncomingMessage, res: ServerResponse, body: any) => void,
): Promise<Loopback> {
  const received: Received[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const body = text ? JSON.parse(text) : undefined;
      received.push({ headers: req.headers, body });
      handle(received.length - 1, req, res, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/graphql`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export function json(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
) {
  res.writeHead(status, { 'content-type': 'application/graphql-response+json; charset=utf-8', ...headers });
  res.end(JSON.stringify(body));
}

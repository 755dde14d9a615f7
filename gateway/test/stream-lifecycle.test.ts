/**
 * An open stream's life as the gateway keeps it (kept small: a gateway holds thousands of idle ones). Once a stream is
 * open, nothing of its request's handling stays pending: the request's log line and its count in flight are settled
 * from the stream's own end; its answer carries every header (the correlation id too) in one header block; its
 * request headers are let go. `MuxClientStream` (stream-client.ts) on its own: events held until the client is
 * answered, ends before and after that, a slow client dropped.
 */
import { EventEmitter } from 'node:events';
import http, { type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { startHarness, type Harness } from './harness.js';
import { subscribe } from '../../test/src/sse.js';
import { MAX_CLIENT_BACKLOG_BYTES, MuxClientStream, type ClientStreamHost } from '../src/stream-client.js';
import { forgetSentHeader, releaseHeaders } from '../src/stream.js';

const TICKS = 'subscription S($from: Int) { ticks(from: $from) { n } }';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const requestLines = (h: Harness, correlationId: string) =>
  h.logs
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l['msg'] === 'request' && l['correlationId'] === correlationId);

/** A raw stream request with a correlation id of the test's choosing. */
async function openStream(h: Harness, token: string | null, correlationId: string) {
  const controller = new AbortController();
  const response = await fetch(`${h.url}/graphql/stream`, {
    method: 'POST',
    signal: controller.signal,
    headers: {
      'content-type': 'application/json',
      accept: 'text/event-stream',
      'x-correlation-id': correlationId,
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: JSON.stringify({ query: TICKS, variables: { from: 1 } }),
  });
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  return {
    response,
    async until(pred: (t: string) => boolean) {
      while (!pred(text)) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`the stream ended first; got ${JSON.stringify(text)}`);
        text += decoder.decode(value, { stream: true });
      }
    },
    cancel: () => controller.abort(),
  };
}

describe('an open stream through the gateway', () => {
  it('answers with the correlation id, and logs the request once, when the stream ends', async () => {
    h = await startHarness();
    const token = await h.token();
    const marker = `stream-${randomUUID()}`;
    const s = await openStream(h, token, marker);
    expect(s.response.status).toBe(200);
    expect(s.response.headers.get('x-correlation-id')).toBe(marker);
    expect(s.response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    await s.until((t) => t.includes('event: next'));
    // Open: its request is not over (no log line yet).
    expect(requestLines(h, marker)).toEqual([]);
    expect(h.gateway.openStreams).toBe(1);
    s.cancel();
    await vi.waitFor(() => expect(requestLines(h!, marker)).toHaveLength(1));
    expect(requestLines(h, marker)[0]).toMatchObject({
      method: 'POST',
      path: '/graphql/stream',
      status: 200,
    });
    expect(h.gateway.openStreams).toBe(0);
    await h.ticks.activeBecomes(0);
  });

  it('logs a stream ended by the gateway (shutdown) once, with its correlation id', async () => {
    h = await startHarness();
    const token = await h.token();
    const marker = `stream-${randomUUID()}`;
    const s = await openStream(h, token, marker);
    await s.until((t) => t.includes('event: next'));
    await h.gateway.close();
    await s.until((t) => t.includes('event: complete'));
    expect(requestLines(h, marker)).toHaveLength(1);
  });

  it('puts the correlation id on refusals too: 401 from the gateway, 400 from the checks', async () => {
    h = await startHarness();
    const unauthenticated = await openStream(h, null, 'refused-401');
    expect(unauthenticated.response.status).toBe(401);
    expect(unauthenticated.response.headers.get('x-correlation-id')).toBe('refused-401');
    const token = await h.token();
    const res = await fetch(`${h.url}/graphql/stream`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'text/event-stream',
        authorization: `Bearer ${token}`,
        'x-correlation-id': 'refused-400',
      },
      body: JSON.stringify({ query: 'subscription { ticks { nope } }' }),
    });
    expect(res.status).toBe(400);
    expect(res.headers.get('x-correlation-id')).toBe('refused-400');
    expect(requestLines(h, 'refused-401')[0]).toMatchObject({ status: 401 });
    expect(requestLines(h, 'refused-400')[0]).toMatchObject({ status: 400 });
  });

  it('streams on after its request headers were let go (events, heartbeats, the end)', async () => {
    h = await startHarness();
    const token = await h.token();
    const s = subscribe<{ ticks: { n: number } }>(`${h.url}/graphql/stream`, token, TICKS, { from: 1 });
    expect((await s.next()).data?.ticks.n).toBe(1);
    await h.ticks.activeBecomes(1);
    h.timers.tick();
    h.ticks.push(2);
    expect((await s.next()).data?.ticks.n).toBe(2);
    h.ticks.completeAll();
    await s.ended;
    await h.ticks.activeBecomes(0);
  });
});

describe('releaseHeaders', () => {
  it('leaves the request its method and URL, and no header', async () => {
    const server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const before = req.headers['authorization'];
        releaseHeaders(req);
        res.end(
          JSON.stringify({
            before,
            headers: req.headers,
            raw: req.rawHeaders,
            method: req.method,
            url: req.url,
          }),
        );
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    try {
      const { port } = server.address() as AddressInfo;
      const res = await fetch(`http://127.0.0.1:${port}/graphql/stream?x=1`, {
        method: 'POST',
        headers: { authorization: 'Bearer secret-token' },
        body: '{}',
      });
      expect(await res.json()).toEqual({
        before: 'Bearer secret-token',
        headers: {},
        raw: [],
        method: 'POST',
        url: '/graphql/stream?x=1',
      });
    } finally {
      server.close();
    }
  });
});

describe('forgetSentHeader', () => {
  it('keeps a sent response answering as sent (headersSent, no second header) while it writes and ends', async () => {
    const seen: Record<string, unknown> = {};
    const server = http.createServer((_req, res) => {
      res.writeHead(200, ['content-type', 'text/event-stream', 'x-correlation-id', 'cid-9']);
      res.flushHeaders();
      const before = (res as unknown as { _header: string })._header;
      forgetSentHeader(res);
      seen['shorter'] = (res as unknown as { _header: string })._header.length < before.length;
      seen['headersSent'] = res.headersSent;
      seen['setHeader'] = codeOf(() => res.setHeader('x-late', '1'));
      seen['writeHead'] = codeOf(() => res.writeHead(500));
      res.write(':\n\n');
      res.end('event: complete\ndata:\n\n');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    try {
      const { port } = server.address() as AddressInfo;
      const res = await fetch(`http://127.0.0.1:${port}/`);
      expect(res.status).toBe(200);
      expect(res.headers.get('x-correlation-id')).toBe('cid-9');
      expect(res.headers.get('x-late')).toBeNull();
      expect(await res.text()).toBe(':\n\nevent: complete\ndata:\n\n');
      expect(seen).toEqual({
        shorter: true,
        headersSent: true,
        setHeader: 'ERR_HTTP_HEADERS_SENT',
        writeHead: 'ERR_HTTP_HEADERS_SENT',
      });
    } finally {
      server.close();
    }
  });

  it('leaves a response whose headers are not sent yet alone', () => {
    const res = { _header: null, _headerSent: false } as unknown as ServerResponse;
    forgetSentHeader(res);
    expect((res as unknown as { _header: unknown })._header).toBeNull();
  });
});

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (err) {
    return (err as { code?: string }).code;
  }
}

/** A response as MuxClientStream uses it: what it was sent, and whether it ended or was dropped. */
class FakeResponse extends EventEmitter {
  writable = true;
  writableEnded = false;
  writableLength = 0;
  destroyed = false;
  text = '';
  /** Bytes the client does not read (a slow client). */
  unread = 0;
  write(chunk: string): boolean {
    this.text += chunk;
    this.writableLength += this.unread ? chunk.length : 0;
    return true;
  }
  end(chunk?: string): this {
    if (chunk) this.text += chunk;
    this.writable = false;
    this.writableEnded = true;
    this.emit('close');
    return this;
  }
  destroy(): this {
    this.destroyed = true;
    this.writable = false;
    this.emit('close');
    return this;
  }
}

function clientStream() {
  const res = new FakeResponse();
  const ended: MuxClientStream[] = [];
  const host: ClientStreamHost = {
    maskErrors: (data, correlationId) => `masked(${data},${correlationId})`,
    failureEvent: (reason, correlationId) => `failed(${reason},${correlationId})`,
    ended: (s) => ended.push(s),
  };
  const stream = new MuxClientStream(res as unknown as ServerResponse, 'cid-1', host);
  const streamEnded = vi.fn();
  return { res, stream, ended, onEnd: { streamEnded } };
}

describe('MuxClientStream', () => {
  it('holds events until the client is answered, then sends a comment and them in order', () => {
    const { res, stream, onEnd } = clientStream();
    stream.next('{"data":1}');
    stream.next('{"errors":[]}');
    expect(res.text).toBe('');
    stream.opened(onEnd);
    expect(res.text).toBe(
      ':\n\nevent: next\ndata: {"data":1}\n\nevent: next\ndata: masked({"errors":[]},cid-1)\n\n',
    );
    stream.next('{"data":3}');
    expect(res.text.endsWith('event: next\ndata: {"data":3}\n\n')).toBe(true);
    expect(onEnd.streamEnded).not.toHaveBeenCalled();
  });

  it('sends an end that came before the answer right after it, and tells its end once', () => {
    const { res, stream, ended, onEnd } = clientStream();
    stream.next('{"data":1}');
    stream.fail('gone');
    stream.complete();
    stream.opened(onEnd);
    expect(res.text).toBe(
      ':\n\nevent: next\ndata: {"data":1}\n\nevent: next\ndata: failed(gone,cid-1)\n\nevent: complete\ndata:\n\n',
    );
    expect(ended).toEqual([stream]);
    expect(onEnd.streamEnded).toHaveBeenCalledTimes(1);
    stream.finish();
    res.emit('close');
    expect(ended).toHaveLength(1);
    expect(onEnd.streamEnded).toHaveBeenCalledTimes(1);
  });

  it('a client gone before its answer ends the stream without telling an opener', () => {
    const { res, stream, ended, onEnd } = clientStream();
    res.destroy();
    expect(ended).toEqual([stream]);
    stream.opened(onEnd);
    stream.next('{"data":1}');
    expect(res.text).toBe('');
    expect(onEnd.streamEnded).not.toHaveBeenCalled();
  });

  it('completes on finish() and when the client leaves, telling the opener once', () => {
    const { res, stream, ended, onEnd } = clientStream();
    stream.opened(onEnd);
    stream.finish();
    expect(res.text).toBe(':\n\nevent: complete\ndata:\n\n');
    expect(ended).toEqual([stream]);
    expect(onEnd.streamEnded).toHaveBeenCalledTimes(1);
    expect(res.listenerCount('close')).toBe(0);

    const other = clientStream();
    other.stream.opened(other.onEnd);
    other.res.destroy();
    expect(other.ended).toEqual([other.stream]);
    expect(other.onEnd.streamEnded).toHaveBeenCalledTimes(1);
  });

  it(`drops a client whose unsent events pass ${MAX_CLIENT_BACKLOG_BYTES} bytes`, () => {
    const { res, stream, onEnd } = clientStream();
    stream.opened(onEnd);
    res.unread = 1;
    const event = `{"data":"${'x'.repeat(64 * 1024)}"}`;
    let sent = 0;
    while (!res.destroyed && sent < 1000) {
      stream.next(event);
      sent++;
    }
    expect(res.destroyed).toBe(true);
    expect(res.writableLength).toBeGreaterThan(MAX_CLIENT_BACKLOG_BYTES);
    expect(sent).toBe(Math.floor(MAX_CLIENT_BACKLOG_BYTES / (event.length + 20)) + 1);
    expect(onEnd.streamEnded).toHaveBeenCalledTimes(1);
  });
});

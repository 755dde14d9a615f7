/**
 * graphql-sse on `node:http`: graphql-sse's own `use/http` adapter, except for how a stream's events are written.
 * That adapter waits for each write's callback before it takes the next event, so every event is a syscall of its own
 * (and a TCP segment the reader parses on its own). On a reservation's event stream, which carries every operation of
 * the gateway's shared connection, one room message to ten thousand operations was ten thousand writes. Here each
 * event is written as it comes: Node's response corks its socket for the rest of the tick, so the events produced in
 * one wake-up leave together in a few writes. Only backpressure waits: when `write` returns false, the next event
 * waits for 'drain' (or the end, if the response closes first), so a slow reader still bounds what is buffered.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  createHandler as createRawHandler,
  type HandlerOptions as RawHandlerOptions,
  type OperationContext,
} from 'graphql-sse';

/** What graphql-sse's callbacks see of a request besides the raw one (as in graphql-sse's `use/http`). */
interface SseRequestContext {
  res: ServerResponse;
}

type SseHandlerOptions<Context extends OperationContext> = RawHandlerOptions<
  IncomingMessage,
  SseRequestContext,
  Context
>;

/** Resolves true if `res` closed, false once it drained. */
function drainedOrClosed(res: ServerResponse): Promise<boolean> {
  return new Promise((resolve) => {
    const drained = () => {
      res.off('close', closed);
      resolve(false);
    };
    const closed = () => {
      res.off('drain', drained);
      resolve(true);
    };
    res.once('drain', drained);
    res.once('close', closed);
  });
}

export function createSseHandler<Context extends OperationContext>(
  options: SseHandlerOptions<Context>,
): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  const handler = createRawHandler(options);
  return async function handleRequest(req, res) {
    const [body, init] = await handler({
      method: req.method!,
      url: req.url!,
      headers: {
        get(key) {
          const header = req.headers[key];
          return Array.isArray(header) ? header.join('\n') : header;
        },
      },
      body: () =>
        new Promise<string>((resolve, reject) => {
          let text = '';
          req.on('data', (chunk: Buffer | string) => (text += chunk));
          req.once('error', reject);
          req.once('end', () => {
            req.off('error', reject);
            resolve(text);
          });
        }),
      raw: req,
      context: { res },
    });
    res.writeHead(init.status, init.statusText, init.headers);
    if (!body || typeof body === 'string') {
      return new Promise<void>((resolve) => res.end(body, () => resolve()));
    }
    // graphql-sse's iterator methods are bound properties: a client that leaves ends the stream (and its operations).
    const stop = body.return;
    res.once('close', stop);
    for await (const value of body) {
      if (!res.writable) break; // closed; its 'close' may still be on its way
      if (!res.write(value) && (await drainedOrClosed(res))) break;
    }
    res.off('close', stop);
    return new Promise<void>((resolve) => res.end(resolve));
  };
}

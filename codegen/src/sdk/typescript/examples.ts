/**
 * The SDK's examples, written once: generated as examples/*.ts (type-checked with the SDK, run by codegen's
 * end-to-end test against the real platform) and quoted in the README with the package name as import path.
 */

export interface Example {
  /** File name under examples/. */
  file: string;
  title: string;
  /** AgentGraph methods (and \`subscriptions.<Name>\`) the example uses: it is generated only when the API has them all. */
  needs: readonly string[];
  source: string;
}

const QUICKSTART = `/**
 * Create a client, ask who you are, page through the tenant's devices, post a message with an idempotency key,
 * and tell typed errors apart. Tokens come from your sign-in (the device flow, OAuth); here they are functions.
 */
import { AgentGraph, AgentGraphError, NotFoundError, PrivacyError, RateLimitedError } from '../src/index.js';

export interface QuickstartOptions {
  /** The GraphQL endpoint, e.g. https://api.example.com/graphql */
  baseUrl: string;
  getToken: () => Promise<string>;
  refreshToken: () => Promise<string>;
  roomId: string;
  log?: (...args: unknown[]) => void;
}

export async function quickstart({ baseUrl, getToken, refreshToken, roomId, log = console.log }: QuickstartOptions) {
  // 1. A client. Message bodies are PERSONAL data: allow that class to leave the process (the default policy
  //    sends PUBLIC and INTERNAL only, and BIOMETRIC never).
  const sdk = new AgentGraph({
    baseUrl,
    tokenProvider: { getToken, refresh: refreshToken },
    privacyPolicy: { allow: ['PUBLIC', 'INTERNAL', 'PERSONAL'] },
  });
  await sdk.client.refreshCapabilities(); // obey the server's retry budget and payload cap

  // 2. Who am I? A method resolves to the operation's data, the model.
  const { viewer } = await sdk.viewer();
  log(\`\${viewer.user.displayName} is \${viewer.role} of \${viewer.tenant.name}\`);

  // 3. Every device of the tenant, 50 per request. Aborting the signal stops the loop (AbortError).
  const controller = new AbortController();
  for await (const device of sdk.paginateDevices({ first: 50 }, { signal: controller.signal })) {
    log(\`device \${device.name}: \${device.status}\`);
  }

  // 4. Post a message. The SDK makes one idempotency key per call and resends it on every retry; pass your own
  //    (persisted with your record) to repeat the same logical call later: the server applies it once.
  const idempotencyKey = crypto.randomUUID();
  const input = { body: 'deploy finished' };
  const posted = await sdk.postMessage({ roomId, input }, { idempotencyKey });
  // .withResponse(): the envelope of the call (data, replayed, attempts, idempotencyKey, extensions, response).
  const again = await sdk.postMessage({ roomId, input }, { idempotencyKey }).withResponse();
  log(\`message \${posted.postMessage.message.seq}, replayed: \${again.replayed}\`); // replayed: true

  // 5. Typed errors: one class per code of schemas/errors.json, plus the client's own.
  try {
    await sdk.postMessage({ roomId: crypto.randomUUID(), input: { body: 'hello?' } });
  } catch (err) {
    if (err instanceof NotFoundError) log(\`no such room (correlation id \${err.correlationId})\`);
    else if (err instanceof RateLimitedError) log(\`slow down: retry in \${err.retryAfterMs} ms\`);
    else if (err instanceof PrivacyError) log('refused before sending:', err.refusals);
    else if (err instanceof AgentGraphError) log(err.code, err.retryable);
    else throw err;
  }
  return sdk;
}
`;

const MUTATIONS = `/**
 * Mutations and idempotency. An idempotent mutation (one declaring $idempotencyKey) gets one key per call, sent as the
 * \`idempotencyKey\` variable and the \`Idempotency-Key\` header on every retry. Persist your own key with your record
 * to repeat the same logical call later (after a crash, from another process): the server applies it once and
 * answers the repeat with the stored result. The envelope (\`.withResponse()\`) says whether it was a replay.
 */
import type { AgentGraph } from '../src/index.js';

export async function postOnce(sdk: AgentGraph, roomId: string, body: string, idempotencyKey = crypto.randomUUID()) {
  // Awaited: the model, here the PostMessage payload.
  const first = await sdk.postMessage({ roomId, input: { body } }, { idempotencyKey });
  // The same key again, e.g. on the next start: the same message, not a second one.
  const again = await sdk.postMessage({ roomId, input: { body } }, { idempotencyKey }).withResponse();
  return {
    seq: first.postMessage.message.seq,
    sameMessage: again.data.postMessage.message.id === first.postMessage.message.id,
    replayed: again.replayed, // true: the server answered with the stored result
    attempts: again.attempts, // HTTP requests this call took (retries included)
    idempotencyKey: again.idempotencyKey, // the key sent
    status: again.response.status, // the HTTP answer that carried the result
    correlationId: again.response.headers.get('x-correlation-id'),
  };
}
`;

const PAGINATION = `/**
 * Pagination. Every Relay connection has a \`paginate…\` method: an AsyncIterable of nodes that asks for the next page
 * only when the loop has taken every node of the current one. \`first\` is the page size; aborting the signal stops
 * the loop with AbortError and cancels the request in flight. The plain method returns one page, for your own paging.
 */
import { AbortError, type AgentGraph } from '../src/index.js';

export async function listRooms(sdk: AgentGraph, pageSize: number, stopAfter?: number) {
  const names: string[] = [];
  const controller = new AbortController();
  try {
    for await (const room of sdk.paginateRooms({ first: pageSize }, { signal: controller.signal })) {
      names.push(room.name);
      if (names.length === stopAfter) controller.abort(); // the loop ends with AbortError
    }
  } catch (err) {
    if (!(err instanceof AbortError)) throw err;
  }
  // One page by hand: the connection's edges and pageInfo (pass endCursor as \`after\` for the next one).
  const page = await sdk.rooms({ first: pageSize });
  return { names, firstPage: page.rooms.edges.map((e) => e.node.name), hasNextPage: page.rooms.pageInfo.hasNextPage };
}
`;

const ERRORS = `/**
 * Errors. A failed call throws an AgentGraphError subclass: one class per code of the error table (\`NotFoundError\`,
 * \`RateLimitedError\`, …; \`instanceof\` works by code), and the client's own \`NetworkError\`, \`TimeoutError\`,
 * \`InvalidResponseError\` and \`PrivacyError\` (refused before anything is sent, naming paths, never values); an
 * aborted signal throws AbortError. Each says whether retrying can help (\`retryable\`, \`retryAfterMs\`) and why the
 * client stopped (\`giveUpReason\`); the SDK has already retried what it may.
 */
import { AgentGraph, AgentGraphError, NotFoundError, PrivacyError, RateLimitedError } from '../src/index.js';

export async function explain(call: () => Promise<unknown>): Promise<string> {
  try {
    await call();
    return 'ok';
  } catch (err) {
    if (err instanceof NotFoundError) return \`not found (correlation id \${err.correlationId})\`;
    if (err instanceof RateLimitedError) return \`rate limited: come back in \${err.retryAfterMs} ms\`;
    if (err instanceof PrivacyError) return \`refused before sending: \${err.refusals.map((r) => \`\${r.path} \${r.reason}\`).join(', ')}\`;
    if (err instanceof AgentGraphError) return \`\${err.code} (retryable: \${err.retryable}, gave up: \${err.giveUpReason ?? 'no'})\`;
    throw err; // not the SDK's: a bug to see
  }
}

export async function showErrors(sdk: AgentGraph, baseUrl: string, token: string) {
  const missing = await explain(() => sdk.postMessage({ roomId: crypto.randomUUID(), input: { body: 'hello?' } }));
  // The default privacy policy sends PUBLIC and INTERNAL data only: a message body is PERSONAL.
  const strict = new AgentGraph({ baseUrl, tokenProvider: { getToken: async () => token, refresh: async () => token } });
  const refused = await explain(() => strict.postMessage({ roomId: crypto.randomUUID(), input: { body: 'hi' } }));
  return { missing, refused };
}
`;

const OUTBOX = `/**
 * Node only: a durable outbox (SQLite, better-sqlite3: \`npm install better-sqlite3\`). Messages survive a crash or a
 * long outage and are delivered exactly once, in order per room (the idempotency key is made at enqueue and persisted
 * with the entry). Offline and "wait" failures retry until the TTL (7 days); an entry the server refuses, or fails on
 * three times (\`maxFailedDeliveries\`), goes to the dead letters (POISON) with the reason, and its room goes on.
 */
import { type AgentGraph, Outbox, operations, sendWithClient, SqliteOutboxStore } from '../src/index.js';

export async function postThroughOutbox(sdk: AgentGraph, file: string, roomId: string, bodies: string[]) {
  const outbox = await Outbox.open({
    store: SqliteOutboxStore.open(file), // one process owns the file
    send: sendWithClient(sdk.client, operations),
    maxFailedDeliveries: 3, // the default
  });
  try {
    for (const body of bodies) {
      await outbox.enqueue({ room: roomId, operation: 'PostMessage', variables: { roomId, input: { body } } });
    }
    await outbox.drain(); // or outbox.start() to keep sending in the background
    const sent = (await outbox.list({ state: 'SENT' })).length;
    // Entries that will not be delivered: show them to the user, export them, or revive(id) after a fix.
    const deadLetters = (await outbox.deadLetters()).map((e) => ({
      id: e.id,
      reason: e.lastError?.code,
      failedDeliveries: e.failedDeliveries,
    }));
    return { sent, deadLetters, exported: await outbox.exportDeadLetters() };
  } finally {
    await outbox.close();
  }
}
`;

const SUBSCRIBE = `/**
 * Follow a room live. \`createSubscriptions(sdk.client)\` streams with the client's own endpoint (\`<baseUrl>/stream\`),
 * fetch, privacy policy and token provider, which it asks for a token on every connect and reconnect. It resumes
 * after the last message handled (\`afterSeq\`), drops duplicates, and reconnects with backoff when a stream breaks.
 */
import { type AgentGraph, createSubscriptions, type OnRoomMessageData, subscriptions } from '../src/index.js';

export async function followRoom(
  sdk: AgentGraph,
  roomId: string,
  count: number,
  onMessage: (seq: number, body: string) => void = (seq, body) => console.log(seq, body),
  signal?: AbortSignal,
) {
  const stream = createSubscriptions(sdk.client); // the client's endpoint, token provider, fetch, privacy policy
  const bodies: string[] = [];
  for await (const item of stream.subscribe(
    subscriptions.OnRoomMessage,
    { roomId },
    {
      resume: { cursorVariable: 'afterSeq', seqOf: (message) => message.seq, after: 0 }, // 0: from the first message
      select: (data: OnRoomMessageData) => data.roomMessages,
      ...(signal ? { signal } : {}),
    },
  )) {
    if (item.type === 'event') {
      bodies.push(item.event.body);
      onMessage(item.seq, item.event.body);
    }
    if (item.seq >= count) break; // leaving the loop closes the stream
  }
  return bodies;
}
`;

export const EXAMPLES: readonly Example[] = [
  {
    file: 'quickstart.ts',
    title: 'Quickstart',
    needs: ['viewer', 'paginateDevices', 'postMessage'],
    source: QUICKSTART,
  },
  {
    file: 'mutations.ts',
    title: 'Mutations, idempotency and the envelope',
    needs: ['postMessage'],
    source: MUTATIONS,
  },
  { file: 'pagination.ts', title: 'Pagination', needs: ['paginateRooms', 'rooms'], source: PAGINATION },
  { file: 'errors.ts', title: 'Errors', needs: ['postMessage'], source: ERRORS },
  { file: 'subscribe.ts', title: 'Subscriptions', needs: ['subscriptions.OnRoomMessage'], source: SUBSCRIBE },
  { file: 'outbox.node.ts', title: 'Outbox (Node)', needs: ['postMessage'], source: OUTBOX },
];

/** The example as a user of the published package writes it. */
export function asPackageUser(source: string): string {
  return source.replace(/'\.\.\/src\/index\.js'/g, "'@agentgraph/sdk'");
}

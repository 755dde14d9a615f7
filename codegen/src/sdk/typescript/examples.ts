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

const OUTBOX = `/**
 * Node only: a durable outbox. Messages survive a crash or a long outage and are delivered exactly once, in order
 * per room (the idempotency key is made at enqueue and persisted with the entry).
 */
import { type AgentGraph, Outbox, operations, sendWithClient, SqliteOutboxStore } from '../src/index.js';

export async function postThroughOutbox(sdk: AgentGraph, file: string, roomId: string, bodies: string[]) {
  const outbox = await Outbox.open({
    store: SqliteOutboxStore.open(file),
    send: sendWithClient(sdk.client, operations),
  });
  for (const body of bodies) {
    await outbox.enqueue({ room: roomId, operation: 'PostMessage', variables: { roomId, input: { body } } });
  }
  await outbox.drain(); // or outbox.start() to keep sending in the background
  return outbox.deadLetters(); // entries the server refused for good (POISON): show them to the user
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
  { file: 'outbox.node.ts', title: 'Outbox (Node)', needs: ['postMessage'], source: OUTBOX },
  { file: 'subscribe.ts', title: 'Subscriptions', needs: ['subscriptions.OnRoomMessage'], source: SUBSCRIBE },
];

/** The example as a user of the published package writes it. */
export function asPackageUser(source: string): string {
  return source.replace(/'\.\.\/src\/index(\.node)?\.js'/g, "'@agentgraph/sdk'");
}

/**
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

export async function quickstart({
  baseUrl,
  getToken,
  refreshToken,
  roomId,
  log = console.log,
}: QuickstartOptions) {
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
  log(`${viewer.user.displayName} is ${viewer.role} of ${viewer.tenant.name}`);

  // 3. Every device of the tenant, 50 per request. Aborting the signal stops the loop (AbortError).
  const controller = new AbortController();
  for await (const device of sdk.paginateDevices({ first: 50 }, { signal: controller.signal })) {
    log(`device ${device.name}: ${device.status}`);
  }

  // 4. Post a message. The SDK makes one idempotency key per call and resends it on every retry; pass your own
  //    (persisted with your record) to repeat the same logical call later: the server applies it once.
  const idempotencyKey = crypto.randomUUID();
  const input = { body: 'deploy finished' };
  const posted = await sdk.postMessage({ roomId, input }, { idempotencyKey });
  // .withResponse(): the envelope of the call (data, replayed, attempts, idempotencyKey, extensions, response).
  const again = await sdk.postMessage({ roomId, input }, { idempotencyKey }).withResponse();
  log(`message ${posted.postMessage.message.seq}, replayed: ${again.replayed}`); // replayed: true

  // 5. Typed errors: one class per code of schemas/errors.json, plus the client's own.
  try {
    await sdk.postMessage({ roomId: crypto.randomUUID(), input: { body: 'hello?' } });
  } catch (err) {
    if (err instanceof NotFoundError) log(`no such room (correlation id ${err.correlationId})`);
    else if (err instanceof RateLimitedError) log(`slow down: retry in ${err.retryAfterMs} ms`);
    else if (err instanceof PrivacyError) log('refused before sending:', err.refusals);
    else if (err instanceof AgentGraphError) log(err.code, err.retryable);
    else throw err;
  }
  return sdk;
}

/**
 * The console's one SDK client (the generated TypeScript SDK, browser entry) and its stream client. The console
 * shows people's own data back to them, so PERSONAL data may leave the browser (the default policy would refuse
 * message bodies and search text); BIOMETRIC never.
 */
import { AgentGraph, AgentGraphError, createSubscriptions, errorTable } from '@agentgraph/sdk';
import { SessionError, tokenProvider } from './session.js';

const baseUrl = `${location.origin}/graphql`;

export const sdk = new AgentGraph({
  baseUrl,
  tokenProvider,
  privacyPolicy: { allow: ['PUBLIC', 'INTERNAL', 'PERSONAL'] },
});

export const streams = createSubscriptions(sdk.client, { baseUrl, tokenProvider });

export interface Problem {
  /** The error code (schemas/errors.json), or the client's own: NETWORK_ERROR, SESSION, ... */
  code: string;
  message: string;
  /** What the person can do about it. */
  advice: string;
  correlationId?: string;
}

const ADVICE: Record<string, string> = {
  BAD_USER_INPUT: 'Check the highlighted values and try again.',
  UNAUTHENTICATED: 'Your session ended: sign in again.',
  FORBIDDEN: 'Your role does not allow this. Ask an admin of the tenant.',
  NOT_FOUND: 'It may have been deleted, or it belongs to another tenant. Reload the list.',
  VERSION_CONFLICT: 'Someone changed it after you opened it. Reload to see their version, then edit again.',
  RATE_LIMITED: 'Too many requests: wait a moment, then try again.',
  EMERGENCY_STOP: 'The emergency stop is engaged. An admin must lift it first.',
  PAYLOAD_TOO_LARGE: 'Make it smaller and try again.',
  SERVICE_UNAVAILABLE: 'The service is busy or restarting. Try again in a moment.',
  PRIVACY: 'The value looks like a secret or personal identifier and was not sent. Remove it.',
  NETWORK: 'The server is not reachable. Check your connection and try again.',
  TIMEOUT: 'The server took too long to answer. Try again.',
};

function describeCode(code: string): string {
  return errorTable.codes.find((c) => c.code === code)?.description ?? '';
}

/** Any thrown value as something a person can read: the code, what happened, and what to do. */
export function problemOf(err: unknown): Problem {
  if (err instanceof SessionError) {
    return { code: 'SESSION', message: err.message, advice: ADVICE['UNAUTHENTICATED']! };
  }
  if (err instanceof AgentGraphError) {
    const code = err.code;
    const kind = code.startsWith('PRIVACY') ? 'PRIVACY' : code.startsWith('NETWORK') ? 'NETWORK' : code;
    const waitHint =
      err.retryAfterMs !== undefined
        ? ` Wait ${Math.ceil(err.retryAfterMs / 1000)} s before trying again.`
        : '';
    return {
      code,
      message: err.message,
      advice:
        (ADVICE[kind] ?? describeCode(code)) + waitHint || 'Try again; if it persists, report the id below.',
      ...(err.correlationId ? { correlationId: err.correlationId } : {}),
    };
  }
  const message = err instanceof Error ? err.message : String(err);
  return { code: 'ERROR', message, advice: 'Try again; if it persists, reload the page.' };
}

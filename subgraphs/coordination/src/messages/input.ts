/**
 * Argument rules of the agent-message operations (zod), and who the caller is as an address. Errors name the
 * argument and the rule, never the value (bodies and correlation ids may be personal data).
 */
import { AppError, type AuthContext } from '@agentgraph/runtime';
import { z } from 'zod';
import { requireWriter } from '../input.js';
import type { AgentAddressModel } from './models.js';
import { ACK_STATES } from './states.js';

/** No C0 control characters and no DEL (code points below 32, and 127). */
const noControl = (s: string) => ![...s].some((c) => c.charCodeAt(0) < 32 || c.charCodeAt(0) === 127);

export const MessageId = z.guid('must be a UUID');

/** `{ deviceId }` or `{ userId }`, exactly one. */
export const AgentAddressArg = z
  .object({
    deviceId: z.guid('must be a UUID').nullish(),
    userId: z.guid('must be a UUID').nullish(),
  })
  .refine((a) => (a.deviceId == null) !== (a.userId == null), 'must name exactly one of deviceId or userId')
  .transform((a): AgentAddressModel =>
    a.deviceId != null
      ? { kind: 'DEVICE', id: a.deviceId.toLowerCase() }
      : { kind: 'USER', id: a.userId!.toLowerCase() },
  );

/** At most 16 KB of UTF-8, not empty, no NUL. */
export const AgentMessageBody = z
  .string()
  .min(1, 'must not be empty')
  .refine((s) => Buffer.byteLength(s, 'utf8') <= 16_384, 'must be at most 16384 bytes (UTF-8)')
  .refine((s) => !s.includes('\u0000'), 'must not contain NUL characters');

/** A media type such as text/plain or application/json; charset=utf-8. */
export const ContentType = z
  .string()
  .trim()
  .max(100, 'must be at most 100 characters')
  .regex(
    /^[A-Za-z0-9][\w.+-]*\/[A-Za-z0-9][\w.+-]*(\s*;.*)?$/,
    'must be a media type such as application/json',
  )
  .refine(noControl, 'must not contain control characters');

export const CorrelationId = z
  .string()
  .min(1, 'must not be empty')
  .max(200, 'must be at most 200 characters')
  .refine(noControl, 'must not contain control characters');

/** Time a message may wait QUEUED before it reads EXPIRED: 10 s to 7 days. */
export const MessageExpiresIn = z
  .number()
  .int('must be a whole number of seconds')
  .min(10, 'must be at least 10 seconds')
  .max(604_800, 'must be at most 604800 seconds (7 days)');

export const AckStateArg = z.enum(ACK_STATES, {
  error: `must be one of ${ACK_STATES.join(', ')} (QUEUED is where messages start; EXPIRED is set by the clock)`,
});

export const FailureReason = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(500, 'must be at most 500 characters')
  .refine((s) => !s.includes('\u0000'), 'must not contain NUL characters');

export const InboxAfterSeq = z.number().int().min(0, 'must be 0 or more (0 replays the whole inbox)');

/** The caller as an address: a device token is its device, a user token the user; null when not a UUID. */
export function addressOf(auth: AuthContext): AgentAddressModel | null {
  const a: AgentAddressModel = auth.deviceId
    ? { kind: 'DEVICE', id: auth.deviceId.toLowerCase() }
    : { kind: 'USER', id: auth.principalId.toLowerCase() };
  return MessageId.safeParse(a.id).success ? a : null;
}

/** Whose inbox the caller reads: a device token reads its device's, a user token the user's. */
export function callerAddress(auth: AuthContext): AgentAddressModel {
  const a = addressOf(auth);
  if (!a) {
    throw new AppError(
      'FORBIDDEN',
      "This token's subject is neither a user nor a device, so it has no agent inbox. Use a user's or a device's token.",
    );
  }
  return a;
}

/**
 * Who may send: a device (its own token; agents live on devices, whatever the owner's role) or a user with a
 * writer role (OPERATOR and above). Returns the sender's address.
 */
export function requireSender(auth: AuthContext): AgentAddressModel {
  if (!auth.deviceId) requireWriter(auth, 'send agent messages');
  return callerAddress(auth);
}

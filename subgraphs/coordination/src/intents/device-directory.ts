/**
 * What coordination knows about a device, and whether a user id is a member of the caller's tenant, asked of identity
 * over GraphQL with the caller's own bearer token (zero trust: identity verifies it and applies its own tenant rules).
 * Subgraphs never read each other's tables. Answers are cached for a few seconds per (token, id), so a burst of
 * intents, reports or messages costs one call.
 *
 * Identity has no query for a user by id: a member is resolved as the gateway would resolve a `User` reference
 * (`_entities`, the caller's tenant only), which identity answers only with the gateway secret
 * (runtime/src/gateway-secret.ts): every subgraph holds it, to check it.
 */
import {
  AppError,
  GATEWAY_SECRET_HEADER,
  inClientSpan,
  injectTraceHeaders,
  type SubgraphContext,
} from '@agentgraph/runtime';
import { z } from 'zod';

export interface DeviceInfo {
  id: string;
  status: 'PENDING' | 'ENROLLED' | 'REVOKED';
  remoteActionsEnabled: boolean;
  /** The enrolled public JWK (parsed); null unless ENROLLED. */
  publicJwk: Record<string, unknown> | null;
  ownerId: string;
}

const DEVICE_QUERY =
  'query CoordinationDevice($id: ID!) { device(id: $id) { id status remoteActionsEnabled publicJwk owner { id } } }';

const Answer = z.object({
  data: z
    .object({
      device: z
        .object({
          id: z.string(),
          status: z.enum(['PENDING', 'ENROLLED', 'REVOKED']),
          remoteActionsEnabled: z.boolean(),
          publicJwk: z.string().nullable(),
          owner: z.object({ id: z.string() }),
        })
        .nullable(),
    })
    .nullable()
    .optional(),
  errors: z
    .array(z.object({ message: z.string(), extensions: z.record(z.string(), z.unknown()).optional() }))
    .optional(),
});

const MEMBER_QUERY =
  'query CoordinationMember($r: [_Any!]!) { _entities(representations: $r) { ... on User { id } } }';

const MemberAnswer = z.object({
  data: z
    .object({ _entities: z.array(z.object({ id: z.string() }).nullable()).length(1) })
    .nullable()
    .optional(),
  errors: Answer.shape.errors,
});

/** Seconds an answer is reused. */
export const DEVICE_CACHE_MS = 5_000;

export interface DeviceDirectory {
  /** The device as identity shows it to the caller; null when identity does not show it (unknown or foreign). */
  device(ctx: SubgraphContext, deviceId: string): Promise<DeviceInfo | null>;
  /** Whether the user is a member of the caller's tenant (false for an unknown id and another tenant's alike). */
  member(ctx: SubgraphContext, userId: string): Promise<boolean>;
}

export function createDeviceDirectory(
  opts: { fetch?: typeof fetch; now?: () => number } = {},
): DeviceDirectory {
  const fetchImpl = opts.fetch ?? ((input, init) => globalThis.fetch(input, init));
  const now = opts.now ?? Date.now;
  // Insertion-ordered: the oldest entry goes first when the cache is full.
  const cache = new Map<string, { at: number; value: Promise<unknown> }>();

  /**
   * Asks identity one query with the caller's token; `what` names the check in errors ("the device"). Identity's
   * refusal of the token is the caller's (its code passed on); anything else is SERVICE_UNAVAILABLE.
   */
  async function askIdentity<T extends z.ZodType<{ errors?: { extensions?: Record<string, unknown> }[] }>>(
    ctx: SubgraphContext,
    what: string,
    request: { query: string; variables: Record<string, unknown> },
    answer: T,
    opts: { headers?: Record<string, string>; log: Record<string, unknown>; callerCodes: readonly string[] },
  ): Promise<z.output<T>> {
    const url = ctx.config.subgraphUrls.identity;
    let body: unknown;
    try {
      // A CLIENT span of the caller's trace when tracing is on; identity continues it only with the gateway secret.
      body = await inClientSpan('coordination', 'POST identity', { 'peer.service': 'identity' }, async () => {
        const headers: Record<string, string> = {
          'content-type': 'application/json',
          accept: 'application/json',
          'x-correlation-id': ctx.correlationId,
          ...(ctx.authorization ? { authorization: ctx.authorization } : {}),
          ...opts.headers,
        };
        injectTraceHeaders(headers);
        const res = await fetchImpl(url, {
          method: 'POST',
          headers,
          body: JSON.stringify(request),
          signal: AbortSignal.timeout(5_000),
        });
        return (await res.json()) as unknown;
      });
    } catch (err) {
      ctx.log.warn(`identity could not be asked about ${what}`, { ...opts.log, error: err });
      throw new AppError(
        'SERVICE_UNAVAILABLE',
        `Identity could not be reached to check ${what}. Retry shortly.`,
        {
          retryAfterMs: 1000,
        },
      );
    }
    const parsed = answer.safeParse(body);
    if (!parsed.success || parsed.data.errors?.length) {
      const code = parsed.success ? parsed.data.errors?.[0]?.extensions?.['code'] : undefined;
      if (code === 'UNAUTHENTICATED' || (code === 'FORBIDDEN' && opts.callerCodes.includes(code))) {
        throw new AppError(code, `Identity refused your token when checking ${what}; sign in again.`);
      }
      // A FORBIDDEN to _entities is identity refusing the gateway secret: GATEWAY_SECRET differs between the two.
      ctx.log.warn(`identity answered a check of ${what} unexpectedly`, { ...opts.log, code });
      throw new AppError('SERVICE_UNAVAILABLE', `Identity could not check ${what}. Retry shortly.`, {
        retryAfterMs: 1000,
      });
    }
    return parsed.data;
  }

  async function ask(ctx: SubgraphContext, deviceId: string): Promise<DeviceInfo | null> {
    const parsed = await askIdentity(
      ctx,
      'the device',
      { query: DEVICE_QUERY, variables: { id: deviceId } },
      Answer,
      { log: { deviceId }, callerCodes: ['FORBIDDEN'] },
    );
    const d = parsed.data?.device;
    if (!d) return null;
    let publicJwk: Record<string, unknown> | null = null;
    if (d.publicJwk !== null) {
      try {
        publicJwk = JSON.parse(d.publicJwk) as Record<string, unknown>;
      } catch {
        publicJwk = null;
      }
    }
    return {
      id: d.id,
      status: d.status,
      remoteActionsEnabled: d.remoteActionsEnabled,
      publicJwk,
      ownerId: d.owner.id,
    };
  }

  async function askMember(ctx: SubgraphContext, userId: string): Promise<boolean> {
    const parsed = await askIdentity(
      ctx,
      'the recipient',
      { query: MEMBER_QUERY, variables: { r: [{ __typename: 'User', id: userId }] } },
      MemberAnswer,
      { headers: { [GATEWAY_SECRET_HEADER]: ctx.config.gatewaySecret }, log: { userId }, callerCodes: [] },
    );
    return parsed.data?._entities[0]?.id.toLowerCase() === userId.toLowerCase();
  }

  /** One cached answer per (token, kind, id). */
  function cached<V>(key: string, load: () => Promise<V>): Promise<V> {
    const hit = cache.get(key);
    if (hit && now() - hit.at < DEVICE_CACHE_MS) return hit.value as Promise<V>;
    const value = load();
    cache.delete(key);
    cache.set(key, { at: now(), value });
    if (cache.size > 10_000) cache.delete(cache.keys().next().value!);
    value.catch(() => cache.delete(key));
    return value;
  }

  return {
    device(ctx, deviceId) {
      return cached(`${ctx.authorization ?? ''}\u0000${deviceId}`, () => ask(ctx, deviceId));
    },
    member(ctx, userId) {
      return cached(`${ctx.authorization ?? ''}\u0000user:${userId}`, () => askMember(ctx, userId));
    },
  };
}

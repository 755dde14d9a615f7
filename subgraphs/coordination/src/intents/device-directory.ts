/**
 * What coordination knows about a device, asked of identity over GraphQL with the caller's own bearer token
 * (zero trust: identity verifies it and applies its own tenant rules). Subgraphs never read each other's tables.
 * Answers are cached for a few seconds per (token, device), so a burst of intents or reports costs one call.
 */
import { AppError, type SubgraphContext } from '@agentgraph/runtime';
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

/** Seconds an answer is reused. */
export const DEVICE_CACHE_MS = 5_000;

export interface DeviceDirectory {
  /** The device as identity shows it to the caller; null when identity does not show it (unknown or foreign). */
  device(ctx: SubgraphContext, deviceId: string): Promise<DeviceInfo | null>;
}

export function createDeviceDirectory(
  opts: { fetch?: typeof fetch; now?: () => number } = {},
): DeviceDirectory {
  const fetchImpl = opts.fetch ?? ((input, init) => globalThis.fetch(input, init));
  const now = opts.now ?? Date.now;
  // Insertion-ordered: the oldest entry goes first when the cache is full.
  const cache = new Map<string, { at: number; value: Promise<DeviceInfo | null> }>();

  async function ask(ctx: SubgraphContext, deviceId: string): Promise<DeviceInfo | null> {
    const url = ctx.config.subgraphUrls.identity;
    let body: unknown;
    try {
      const res = await fetchImpl(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          'x-correlation-id': ctx.correlationId,
          ...(ctx.authorization ? { authorization: ctx.authorization } : {}),
        },
        body: JSON.stringify({ query: DEVICE_QUERY, variables: { id: deviceId } }),
        signal: AbortSignal.timeout(5_000),
      });
      body = await res.json();
    } catch (err) {
      ctx.log.warn('identity could not be asked about a device', { deviceId, error: err });
      throw new AppError(
        'SERVICE_UNAVAILABLE',
        'Identity could not be reached to check the device. Retry shortly.',
        {
          retryAfterMs: 1000,
        },
      );
    }
    const parsed = Answer.safeParse(body);
    if (!parsed.success || parsed.data.errors?.length) {
      const code = parsed.success ? parsed.data.errors?.[0]?.extensions?.['code'] : undefined;
      if (code === 'UNAUTHENTICATED' || code === 'FORBIDDEN') {
        throw new AppError(code, 'Identity refused your token when checking the device; sign in again.');
      }
      ctx.log.warn('identity answered a device check unexpectedly', { deviceId, code });
      throw new AppError('SERVICE_UNAVAILABLE', 'Identity could not check the device. Retry shortly.', {
        retryAfterMs: 1000,
      });
    }
    const d = parsed.data.data?.device;
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

  return {
    device(ctx, deviceId) {
      const key = `${ctx.authorization ?? ''}\u0000${deviceId}`;
      const hit = cache.get(key);
      if (hit && now() - hit.at < DEVICE_CACHE_MS) return hit.value;
      const value = ask(ctx, deviceId);
      cache.delete(key);
      cache.set(key, { at: now(), value });
      if (cache.size > 10_000) cache.delete(cache.keys().next().value!);
      value.catch(() => cache.delete(key));
      return value;
    },
  };
}

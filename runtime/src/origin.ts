/**
 * Where a request came from, for audit records ("who, what, when, from where") and per-address limits (identity's
 * wrong user-code counter). The client's address is the last `x-forwarded-for` hop only on a request the gateway
 * vouches for (it appends the address it saw, and proves itself with the gateway secret); on any other request
 * `x-forwarded-for` is a claim anyone can make, so the address is the socket peer (the claim is kept, bounded, in
 * `forwardedFor` for the audit record). Values are bounded; no header that can carry a secret is read.
 */
import type { IncomingMessage } from 'node:http';

export interface RequestOrigin {
  /** The client's address as the first hop we run (the gateway) saw it; the socket peer when no gateway vouches. */
  ip: string | null;
  /** `x-forwarded-for` as received: the chain of claimed addresses, oldest first (bounded). */
  forwardedFor?: string;
  /** `user-agent` (bounded). */
  userAgent?: string;
  /** This service's socket peer (the gateway, in the federated path). */
  peer: string | null;
}

const MAX_FORWARDED = 512;
const MAX_USER_AGENT = 256;

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  const s = Array.isArray(v) ? v.join(', ') : v;
  return s?.trim() ? s.trim() : undefined;
}

/** Strips an IPv4-mapped IPv6 prefix (`::ffff:127.0.0.1` → `127.0.0.1`). */
export function plainAddress(address: string | undefined | null): string | null {
  if (!address) return null;
  return address.startsWith('::ffff:') ? address.slice(7) : address;
}

/** `trustForwarded`: the request came through our gateway (its secret checked), so its last hop is the client. */
export function originOf(req: IncomingMessage, trustForwarded: boolean): RequestOrigin {
  const peer = plainAddress(req.socket?.remoteAddress);
  const forwarded = header(req, 'x-forwarded-for')?.slice(0, MAX_FORWARDED);
  const hops = forwarded
    ?.split(',')
    .map((h) => h.trim())
    .filter(Boolean);
  const userAgent = header(req, 'user-agent')?.slice(0, MAX_USER_AGENT);
  return {
    ip: (trustForwarded ? plainAddress(hops?.at(-1)) : null) ?? peer,
    ...(forwarded ? { forwardedFor: forwarded } : {}),
    ...(userAgent ? { userAgent } : {}),
    peer,
  };
}

/** The `x-forwarded-for` a proxy sends on: what it received, then the address it saw itself. */
export function forwardedForOf(req: IncomingMessage): string | undefined {
  const own = plainAddress(req.socket?.remoteAddress);
  const received = header(req, 'x-forwarded-for');
  const chain = [received, own].filter(Boolean).join(', ');
  return chain ? chain.slice(-MAX_FORWARDED) : undefined;
}

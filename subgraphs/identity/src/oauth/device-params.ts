/**
 * The device's side of enrolment: besides the standard RFC 8628 parameters, the desktop sends what it is
 * (`device_name`, `device_platform`) and the public key it will sign its reports with (`device_jwk`, a JSON-encoded
 * public JWK: EC P-256 or Ed25519). They are checked at the device authorization endpoint, stored with the device
 * code, shown to the approving user, and written to the device row on approval.
 */
import { calculateJwkThumbprint, type JWK } from 'jose';
import { errors } from 'oidc-provider';
import { z } from 'zod';
import { PLATFORMS } from '../models.js';
import { DESKTOP_CLIENT_ID } from './constants.js';

const b64url = z.string().regex(/^[A-Za-z0-9_-]+$/, 'must be base64url');
export const DevicePublicJwk = z.union([
  z.strictObject({
    kty: z.literal('EC'),
    crv: z.literal('P-256'),
    x: b64url.length(43),
    y: b64url.length(43),
    kid: z.string().max(200).optional(),
    alg: z.literal('ES256').optional(),
    use: z.literal('sig').optional(),
  }),
  z.strictObject({
    kty: z.literal('OKP'),
    crv: z.literal('Ed25519'),
    x: b64url.length(43),
    kid: z.string().max(200).optional(),
    alg: z.literal('EdDSA').optional(),
    use: z.literal('sig').optional(),
  }),
]);
export type DevicePublicJwk = z.infer<typeof DevicePublicJwk>;

export interface DeviceDescription {
  name: string;
  platform: (typeof PLATFORMS)[number];
  publicJwk: JWK;
  thumbprint: string;
}

/** Parses the JSON text of `device_jwk`; null when it is not an acceptable public key. */
export function parseDeviceJwk(text: unknown): DevicePublicJwk | null {
  if (typeof text !== 'string' || text.length > 2000) return null;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  const r = DevicePublicJwk.safeParse(value);
  return r.success ? r.data : null;
}

/** The device described by a stored device code's params (as validated at the device authorization endpoint). */
export async function describeDevice(params: Record<string, unknown>): Promise<DeviceDescription | null> {
  const jwk = parseDeviceJwk(params['device_jwk']);
  const name = typeof params['device_name'] === 'string' ? params['device_name'].trim() : '';
  const platform = PLATFORMS.find((p) => p === params['device_platform']);
  if (!jwk || !name || !platform) return null;
  const { kid: _kid, alg: _alg, use: _use, ...key } = jwk;
  return { name, platform, publicJwk: key, thumbprint: await calculateJwkThumbprint(key, 'sha256') };
}

type Validator = (ctx: { oidc: { route: string } }, value: unknown, client: { clientId: string }) => void;

function onlyAtDeviceAuthorization(
  ctx: { oidc: { route: string } },
  value: unknown,
  client: { clientId: string },
  name: string,
): boolean {
  const enrolling = ctx.oidc.route === 'device_authorization' && client.clientId === DESKTOP_CLIENT_ID;
  if (!enrolling) {
    if (value !== undefined)
      throw new errors.InvalidRequest(`${name} is only accepted when a desktop enrols`);
    return false;
  }
  if (value === undefined || value === '') {
    throw new errors.InvalidRequest(`${name} is required to enrol a device`);
  }
  return true;
}

/** oidc-provider `extraParams` with their validators. */
export const deviceExtraParams: Record<string, Validator> = {
  device_name(ctx, value, client) {
    if (!onlyAtDeviceAuthorization(ctx, value, client, 'device_name')) return;
    const name = String(value).trim();
    if (name.length < 1 || name.length > 100) {
      throw new errors.InvalidRequest('device_name must be 1 to 100 characters');
    }
  },
  device_platform(ctx, value, client) {
    if (!onlyAtDeviceAuthorization(ctx, value, client, 'device_platform')) return;
    if (!PLATFORMS.includes(value as (typeof PLATFORMS)[number])) {
      throw new errors.InvalidRequest(`device_platform must be one of ${PLATFORMS.join(', ')}`);
    }
  },
  device_jwk(ctx, value, client) {
    if (!onlyAtDeviceAuthorization(ctx, value, client, 'device_jwk')) return;
    if (!parseDeviceJwk(value)) {
      throw new errors.InvalidRequest(
        'device_jwk must be a JSON public JWK: EC P-256 (kty, crv, x, y) or Ed25519 (kty OKP, crv, x), no private members',
      );
    }
  },
};

/**
 * Enrols desktops the way a real one does, with panva's openid-client against identity on loopback (RFC 8628):
 * discovery, device authorization carrying the device's public key, the owner's approval (done by the bench's
 * services process in-process on the same database, as identity's /device page does), then polling for the tokens.
 * The devices' tokens seed the measurements: refresh chains, the subject token of the exchanges, the gateway's token.
 */
import { exportJWK, generateKeyPair } from 'jose';
import * as client from 'openid-client';
import { DESKTOP_CLIENT_ID } from '../../../subgraphs/identity/src/oauth/constants.js';
import { DEVICE_SCOPE } from './token-requests.js';

export interface EnrolledDevice {
  deviceId: string;
  accessToken: string;
  refreshToken: string;
}

/** A fresh device public key as the JSON text `device_jwk` carries. */
export async function devicePublicJwk(): Promise<string> {
  const { publicKey } = await generateKeyPair('ES256', { extractable: true });
  return JSON.stringify(await exportJWK(publicKey));
}

export async function enrolDevices(
  issuer: string,
  count: number,
  approve: (userCode: string) => Promise<{ deviceId: string }>,
): Promise<EnrolledDevice[]> {
  const config = await client.discovery(new URL(issuer), DESKTOP_CLIENT_ID, undefined, client.None(), {
    execute: [client.allowInsecureRequests],
  });
  return Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const da = await client.initiateDeviceAuthorization(config, {
        scope: DEVICE_SCOPE,
        device_name: `bench desktop ${i}`,
        device_platform: 'linux',
        device_jwk: await devicePublicJwk(),
      });
      const { deviceId } = await approve(da.user_code);
      // openid-client waits the advertised interval before its first poll, by which time the code is approved.
      const tokens = await client.pollDeviceAuthorizationGrant(config, da);
      if (!tokens.refresh_token) throw new Error('device enrolment returned no refresh token');
      return { deviceId, accessToken: tokens.access_token, refreshToken: tokens.refresh_token };
    }),
  );
}

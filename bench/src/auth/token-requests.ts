/**
 * The three token-endpoint workloads of the auth bench, as plain form POSTs (what a desktop client sends): refresh
 * with rotation (each worker follows its own refresh chain), RFC 8693 token exchange of one subject token, and RFC 8628
 * device authorization. Each answer is checked, not just its status: a 200 without the expected fields is an error.
 * Nothing here logs or returns a token except to the worker that must send it next.
 */
import { z } from 'zod';
import {
  DESKTOP_CLIENT_ID,
  ROUTES,
  TOKEN_EXCHANGE_GRANT,
  TOKEN_TYPE_ACCESS_TOKEN,
} from '../../../subgraphs/identity/src/oauth/constants.js';

export const TOKEN_WORKLOADS = ['refresh', 'exchange', 'device-authorization'] as const;
export type TokenWorkload = (typeof TOKEN_WORKLOADS)[number];

export interface TokenRequest {
  path: string;
  body: string;
}

/** What a worker needs: its own refresh token (refresh), the shared subject token (exchange), the device's key. */
export const TokenWorkerSeed = z.object({
  refreshToken: z.string().min(1).optional(),
  subjectToken: z.string().min(1).optional(),
  deviceJwk: z.string().min(1).optional(),
});
export type TokenWorkerSeed = z.infer<typeof TokenWorkerSeed>;

/** The checked outcome of one answer: ok (and for refresh, the chain's next refresh token) or why not. */
export type TokenAnswer = { ok: true; nextRefreshToken?: string } | { ok: false; why: string };

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

const RefreshAnswer = z.object({
  access_token: z.string().min(1),
  refresh_token: z.string().min(1),
  token_type: z.string(),
});
const ExchangeAnswer = z.object({
  access_token: z.string().min(1),
  issued_token_type: z.literal(TOKEN_TYPE_ACCESS_TOKEN),
  token_type: z.string(),
});
const DeviceAnswer = z.object({
  device_code: z.string().min(32),
  user_code: z.string().regex(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/),
  verification_uri: z.string().url(),
  interval: z.number().int().positive(),
});

/** Device scopes asked for at enrolment (the desktop's), and the API audience of exchanged tokens. */
export const DEVICE_SCOPE = 'openid offline_access api:read api:write';

export function tokenRequest(
  workload: TokenWorkload,
  seed: TokenWorkerSeed,
  state: { refreshToken?: string },
  audience: string,
): TokenRequest {
  switch (workload) {
    case 'refresh': {
      const refreshToken = state.refreshToken ?? seed.refreshToken;
      if (!refreshToken)
        throw new Error('refresh workload: the worker has no refresh token to start its chain');
      return {
        path: ROUTES.token,
        body: form({
          grant_type: 'refresh_token',
          client_id: DESKTOP_CLIENT_ID,
          refresh_token: refreshToken,
        }),
      };
    }
    case 'exchange':
      if (!seed.subjectToken) throw new Error('exchange workload: no subject token given');
      return {
        path: ROUTES.token,
        body: form({
          grant_type: TOKEN_EXCHANGE_GRANT,
          client_id: DESKTOP_CLIENT_ID,
          subject_token: seed.subjectToken,
          subject_token_type: TOKEN_TYPE_ACCESS_TOKEN,
          requested_token_type: TOKEN_TYPE_ACCESS_TOKEN,
          audience,
          scope: 'api:read',
        }),
      };
    case 'device-authorization':
      if (!seed.deviceJwk) throw new Error('device-authorization workload: no device public key given');
      return {
        path: ROUTES.device_authorization,
        body: form({
          client_id: DESKTOP_CLIENT_ID,
          scope: DEVICE_SCOPE,
          device_name: 'bench desktop',
          device_platform: 'linux',
          device_jwk: seed.deviceJwk,
        }),
      };
  }
}

/** Checks one answer of `workload`; `sent` is the refresh token the request carried (refresh only). */
export function checkTokenAnswer(
  workload: TokenWorkload,
  status: number,
  text: string,
  sent?: string,
): TokenAnswer {
  if (status !== 200) {
    let error = '';
    try {
      error = String((JSON.parse(text) as { error?: unknown }).error ?? '');
    } catch {
      /* not JSON */
    }
    return { ok: false, why: `HTTP ${status}${error ? ` ${error}` : ''}` };
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { ok: false, why: 'HTTP 200 with a body that is not JSON' };
  }
  const schema =
    workload === 'refresh' ? RefreshAnswer : workload === 'exchange' ? ExchangeAnswer : DeviceAnswer;
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    return { ok: false, why: `HTTP 200 but ${issue.path.join('.') || 'body'}: ${issue.message}` };
  }
  if (workload === 'refresh') {
    const next = (parsed.data as z.infer<typeof RefreshAnswer>).refresh_token;
    if (next === sent) return { ok: false, why: 'HTTP 200 but the refresh token was not rotated' };
    return { ok: true, nextRefreshToken: next };
  }
  return { ok: true };
}

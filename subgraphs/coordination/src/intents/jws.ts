/**
 * The two compact JWS formats of intents:
 *  - the intent itself, signed by coordination (`typ: intent+jwt`): iss, aud = device id, sub = requester, tid,
 *    jti = intent id, iat, nbf, exp, action, params, seq: exactly what the SDK's createIntentVerifier checks;
 *  - a device's report of a state change, signed with its enrolled key (`typ: intent-report+jwt`): iss = device
 *    id, aud = the intent issuer, jti (unique per report), iat, intent (intent id), state, reason (optional).
 * Report refusals are AppErrors with `extensions.reason` (FORGED, WRONG_DEVICE, WRONG_AUDIENCE, STALE, MALFORMED).
 */
import { AppError, type Config } from '@agentgraph/runtime';
import { decodeProtectedHeader, importJWK, jwtVerify, SignJWT, type CryptoKey, type JWK } from 'jose';
import { z } from 'zod';
import type { ActiveIntentKey } from './keys.js';
import { INTENT_STATES, type IntentState } from './machine.js';

export const INTENT_TYP = 'intent+jwt';
export const REPORT_TYP = 'intent-report+jwt';
/** How far a report's iat may be from the server's clock, either way. */
export const REPORT_MAX_SKEW_SEC = 60;

/** `iss` of intents (and `aud` of reports): coordination's own origin, where its intent JWKS is served. */
export function intentIssuer(config: Pick<Config, 'subgraphUrls' | 'intentIssuer'>): string {
  return config.intentIssuer ?? new URL(config.subgraphUrls.coordination).origin;
}

export interface IntentClaimsInput {
  issuer: string;
  id: string;
  tenantId: string;
  deviceId: string;
  requester: string;
  action: string;
  params: Record<string, unknown>;
  seq: number;
  issuedAt: Date;
  expiresAt: Date;
}

export async function signIntent(key: ActiveIntentKey, c: IntentClaimsInput): Promise<string> {
  const iat = Math.floor(c.issuedAt.getTime() / 1000);
  return new SignJWT({ tid: c.tenantId, action: c.action, params: c.params, seq: c.seq })
    .setProtectedHeader({ alg: 'ES256', kid: key.kid, typ: INTENT_TYP })
    .setIssuer(c.issuer)
    .setAudience(c.deviceId)
    .setSubject(c.requester)
    .setJti(c.id)
    .setIssuedAt(iat)
    .setNotBefore(iat)
    .setExpirationTime(Math.floor(c.expiresAt.getTime() / 1000))
    .sign(key.key);
}

export interface DeviceReport {
  jti: string;
  intentId: string;
  state: IntentState;
  reason: string | null;
}

const ReportClaims = z.object({
  jti: z.string().min(1).max(200),
  intent: z.guid(),
  state: z.enum(INTENT_STATES),
  reason: z.string().max(500).optional(),
});

function refused(
  reason: string,
  message: string,
  code: 'FORBIDDEN' | 'BAD_USER_INPUT' = 'FORBIDDEN',
): AppError {
  return new AppError(code, `The report was refused (${reason}): ${message}`, { reason });
}

const ALG_OF_KTY: Record<string, string> = { EC: 'ES256', OKP: 'EdDSA' };

/** The `intent` claim of a report without verifying it (to find the intent, and so its device, first). */
export function peekReportIntent(report: string): string {
  try {
    const header = decodeProtectedHeader(report);
    const payload = JSON.parse(
      Buffer.from(report.split('.')[1] ?? '', 'base64url').toString('utf8'),
    ) as unknown;
    const intent = (payload as { intent?: unknown }).intent;
    if (header.typ !== REPORT_TYP) throw new Error('typ');
    if (typeof intent === 'string' && z.guid().safeParse(intent).success) return intent;
  } catch {
    // fall through
  }
  throw refused(
    'MALFORMED',
    `"report" must be a compact JWS with typ ${REPORT_TYP} and an "intent" claim holding the intent id.`,
    'BAD_USER_INPUT',
  );
}

/**
 * Verifies a device's report against the device's enrolled public key: signature (FORGED), `iss` = the device
 * (WRONG_DEVICE), `aud` = the intent issuer (WRONG_AUDIENCE), `iat` within REPORT_MAX_SKEW_SEC of now (STALE),
 * claims (MALFORMED). Replay (jti) is checked by the caller in the transaction that applies the report.
 */
export async function verifyReport(
  report: string,
  opts: { publicJwk: Record<string, unknown>; deviceId: string; audience: string; now: Date },
): Promise<DeviceReport> {
  const alg = ALG_OF_KTY[String(opts.publicJwk['kty'])];
  if (!alg) throw refused('FORGED', 'the device has no usable enrolled key.');
  let key: CryptoKey | Uint8Array;
  try {
    key = await importJWK(opts.publicJwk as JWK, alg);
  } catch {
    throw refused('FORGED', 'the device has no usable enrolled key.');
  }
  let payload: Record<string, unknown>;
  try {
    ({ payload } = await jwtVerify(report, key, {
      algorithms: [alg],
      typ: REPORT_TYP,
      currentDate: opts.now,
      requiredClaims: ['iss', 'aud', 'jti', 'iat'],
    }));
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED' || code === 'ERR_JOSE_ALG_NOT_ALLOWED') {
      throw refused('FORGED', "the signature does not verify with the device's enrolled key.");
    }
    if (code === 'ERR_JWT_EXPIRED')
      throw refused('STALE', 'it has expired; sign a fresh report.', 'BAD_USER_INPUT');
    throw refused('MALFORMED', (err as Error).message, 'BAD_USER_INPUT');
  }
  if (payload['iss'] !== opts.deviceId) {
    throw refused('WRONG_DEVICE', 'it was not issued by the device the intent is for (iss).');
  }
  const aud = payload['aud'];
  if (!(aud === opts.audience || (Array.isArray(aud) && aud.includes(opts.audience)))) {
    throw refused('WRONG_AUDIENCE', `its aud must be ${opts.audience} (the intent's iss).`);
  }
  const iat = Number(payload['iat']);
  if (Math.abs(opts.now.getTime() / 1000 - iat) > REPORT_MAX_SKEW_SEC) {
    throw refused(
      'STALE',
      `its iat is more than ${REPORT_MAX_SKEW_SEC} s from the server's time; sign a fresh report (check the device clock).`,
      'BAD_USER_INPUT',
    );
  }
  const claims = ReportClaims.safeParse(payload);
  if (!claims.success) {
    throw refused(
      'MALFORMED',
      `claims must be jti (string), intent (intent id), state (an IntentState), reason (optional, ≤ 500 characters).`,
      'BAD_USER_INPUT',
    );
  }
  return {
    jti: claims.data.jti,
    intentId: claims.data.intent,
    state: claims.data.state,
    reason: claims.data.reason ?? null,
  };
}

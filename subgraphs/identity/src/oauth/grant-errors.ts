/**
 * What the token endpoint says about an `invalid_grant` (RFC 6749 §5.2 `error_description`). oidc-provider answers
 * every one of them "grant request is invalid" and keeps the reason in `error_detail`, which it only logs; a client
 * (and the person debugging it) needs the reason: expired, already used, revoked, PKCE mismatch, another client's.
 *
 * The reasons oidc-provider gives are mapped to sentences that say what to do. Any other detail is shown as is when it
 * is a short plain sentence: details are written in code (oidc-provider's and ours: `token-claims.ts`,
 * `token-exchange.ts`), never built from request values, tokens or ids; keep them so. Anything else keeps the generic
 * description.
 */

/** oidc-provider 9's InvalidGrant details (lib/helpers/grant_source.js, pkce.js, lib/actions/grants/*.js). */
const DESCRIPTIONS: Readonly<Record<string, string>> = {
  'authorization code not found':
    'the authorization code is unknown: it expired, was already used, or was never issued; sign in again',
  'authorization code is expired':
    'the authorization code has expired (codes are valid for 60 seconds); sign in again',
  'authorization code already consumed':
    'the authorization code was already used; its second use revokes the tokens issued for it (RFC 6749 §4.1.2); sign in again',
  'authorization code redirect_uri mismatch':
    'redirect_uri is not the one the authorization code was issued for',
  'code_verifier must be provided': 'PKCE verification failed: code_verifier is missing (RFC 7636)',
  'code_verifier does not match code_challenge':
    'PKCE verification failed: code_verifier does not match the code_challenge of the authorization request (RFC 7636)',
  'device code not found':
    'the device code is unknown: it expired long ago, was already used, or was never issued; start a new device authorization',
  'device code already consumed':
    'the device code was already exchanged for tokens; its second use revokes them; start a new device authorization',
  'refresh token not found':
    'the refresh token is no longer valid: it expired, or was revoked (signed out, device revoked, member removed, or reused); sign in again',
  'refresh token is expired': 'the refresh token has expired; sign in again',
  'refresh token already used':
    'the refresh token was already used; reusing a rotated refresh token revokes the whole grant (RFC 9700); sign in again',
  'grant not found':
    'the grant behind this code or token was revoked (signed out, device revoked, member removed, or a token reused); sign in again',
  'grant is expired': 'the grant behind this code or token has expired; sign in again',
  'client mismatch': 'the code or token was issued to another client',
};

/** A detail shown as is: a short sentence of plain words (no ids, tokens or values). */
const PLAIN = /^[a-z][a-z_ :;,.()'’-]{0,160}$/i;

/** The `error_description` for an invalid_grant whose reason (oidc-provider's `error_detail`) is `detail`. */
export function invalidGrantDescription(detail: unknown): string | undefined {
  if (typeof detail !== 'string') return undefined;
  return DESCRIPTIONS[detail] ?? (PLAIN.test(detail) ? detail : undefined);
}

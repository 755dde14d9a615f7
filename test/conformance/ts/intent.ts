/**
 * Executor of `intent` vectors: intent verification (jose, a JWKS, typ, alg allow-list, aud, iss, time with skew,
 * required claims, the replay cache) against pre-signed compact JWS tokens, so SDKs in other languages verify the
 * very same bytes without signing anything.
 *
 * Fields (besides the common envelope; `clock.start` is the verifier's "now"):
 * - `verifier` — `issuer`, `deviceId` (the expected `aud`), `clockSkewSec` (default 30), `algorithms` (default
 *   ES256, EdDSA), `jwksCooldownMs` (default 30 000), `jwksMaxAgeMs` (default 600 000).
 * - `keys` — the test signing keys by name: private JWKs (with `kid` and `alg`). Test material only.
 * - `jwks` — the key set the verifier is given (public JWKs); or `jwksResponses` — a remote JWKS: each fetch of
 *   `jwksUrl` gets the next `{ status, body }` (fetching more often than listed is a failure).
 * - `steps`, in order: `{ "advance": ms }`, or `{ "verify": { token, signedWith, header, claims }, "expect": … ,
 *   "jwksFetches"?: n }`. `token` is what the verifier gets; `signedWith`, `header` and `claims` say how it was
 *   made (the runner checks that the token decodes to exactly this header and these claims and that `signedWith`'s
 *   key made its signature, so a vector cannot lie about its token). `expect` is `{ "accepted": { id, tenantId,
 *   deviceId, issuer, requester, sequence, action, params, issuedAt, notBefore, expiresAt (epoch ms), kid, alg } }`
 *   or `{ "error": { reason, code, retryable? } }` (code = `INTENT_<reason>`). `jwksFetches`: fetches made so far.
 *
 * Regenerating a token: sign `claims` with `header` using `keys[signedWith]` (jose SignJWT). EdDSA signatures are
 * deterministic (the same bytes come out); ES256 ones are randomized (different bytes, same verdict).
 */
import {
  base64url,
  compactVerify,
  decodeProtectedHeader,
  importJWK,
  CompactSign,
  type JWK,
  type JSONWebKeySet,
} from 'jose';
import { IntentVerificationError } from '../../../sdk-templates/typescript/src/intents/errors.js';
import {
  MemoryReplayCache,
  createIntentVerifier,
} from '../../../sdk-templates/typescript/src/intents/index.js';
import type { Executor, ExecutorContext, VectorEnvelope } from './executor.js';
import { jsonEqual } from './match.js';
import { fail } from './sdk-harness.js';

interface VerifyStep {
  verify: {
    token: string;
    signedWith: string;
    header: Record<string, unknown>;
    claims: Record<string, unknown>;
  };
  expect:
    { accepted: Record<string, unknown> } | { error: { reason: string; code: string; retryable?: boolean } };
  jwksFetches?: number;
}

export interface IntentVector extends VectorEnvelope {
  verifier: {
    issuer: string;
    deviceId: string;
    clockSkewSec?: number;
    algorithms?: string[];
    jwksCooldownMs?: number;
    jwksMaxAgeMs?: number;
  };
  keys: Record<string, JWK>;
  jwks?: JSONWebKeySet;
  jwksResponses?: Array<{ status: number; body: unknown }>;
  steps: Array<{ advance: number } | VerifyStep>;
}

const jwk = { type: 'object', properties: { kid: { type: 'string' }, alg: { type: 'string' } } };
const strictObject = (properties: Record<string, unknown>, required: string[]) => ({
  type: 'object',
  properties,
  required,
  additionalProperties: false,
});

/** JSON Schema of the intent-specific fields. */
export const schema = {
  type: 'object',
  properties: {
    $schema: { type: 'string' },
    id: { type: 'string' },
    kind: { const: 'intent' },
    description: { type: 'string' },
    comment: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }] },
    clock: { type: 'object' },
    random: { type: 'array', maxItems: 0 },
    verifier: strictObject(
      {
        issuer: { type: 'string', minLength: 1 },
        deviceId: { type: 'string', minLength: 1 },
        clockSkewSec: { type: 'integer', minimum: 0 },
        algorithms: { type: 'array', items: { type: 'string' } },
        jwksCooldownMs: { type: 'integer', minimum: 0 },
        jwksMaxAgeMs: { type: 'integer', minimum: 0 },
      },
      ['issuer', 'deviceId'],
    ),
    keys: {
      type: 'object',
      additionalProperties: { ...jwk, required: ['kid', 'alg', 'kty', 'd'] },
    },
    jwks: strictObject({ keys: { type: 'array', items: jwk } }, ['keys']),
    jwksResponses: {
      type: 'array',
      items: strictObject({ status: { type: 'integer' }, body: {} }, ['status', 'body']),
    },
    steps: {
      type: 'array',
      minItems: 1,
      items: {
        anyOf: [
          strictObject({ advance: { type: 'integer', minimum: 0 } }, ['advance']),
          strictObject(
            {
              verify: strictObject(
                {
                  token: { type: 'string' },
                  signedWith: { type: 'string' },
                  header: { type: 'object' },
                  claims: { type: 'object' },
                },
                ['token', 'signedWith', 'header', 'claims'],
              ),
              expect: {
                anyOf: [
                  strictObject({ accepted: { type: 'object' } }, ['accepted']),
                  strictObject(
                    {
                      error: strictObject(
                        {
                          reason: { type: 'string' },
                          code: { type: 'string', pattern: '^INTENT_' },
                          retryable: { type: 'boolean' },
                        },
                        ['reason', 'code'],
                      ),
                    },
                    ['error'],
                  ),
                ],
              },
              jwksFetches: { type: 'integer', minimum: 0 },
            },
            ['verify', 'expect'],
          ),
        ],
      },
    },
  },
  required: ['id', 'kind', 'description', 'verifier', 'keys', 'steps'],
  additionalProperties: false,
};

const JWKS_URL = 'https://coordination.agentgraph.test/.well-known/jwks.json';

function publicPart(key: JWK): JWK {
  const { d: _d, ...pub } = key;
  return pub;
}

/** The token must be exactly what the step says it is. */
async function tokenProblems(
  where: string,
  step: VerifyStep['verify'],
  keys: Record<string, JWK>,
): Promise<string[]> {
  const problems: string[] = [];
  const payloadPart = step.token.split('.')[1];
  const header = decodeProtectedHeader(step.token) as Record<string, unknown>;
  const claims = JSON.parse(new TextDecoder().decode(base64url.decode(payloadPart!))) as Record<
    string,
    unknown
  >;
  if (!jsonEqual(header, step.header))
    problems.push(`${where}: the token's header is ${JSON.stringify(header)}`);
  if (!jsonEqual(claims, step.claims))
    problems.push(`${where}: the token's claims are ${JSON.stringify(claims)}`);
  const key = keys[step.signedWith];
  if (!key) return [...problems, `${where}: no key named "${step.signedWith}"`];
  const alg = String(key.alg);
  try {
    await compactVerify(step.token, await importJWK(publicPart(key), alg));
  } catch {
    problems.push(`${where}: the token is not signed by "${step.signedWith}"`);
  }
  if (alg === 'EdDSA') {
    const resigned = await new CompactSign(base64url.decode(payloadPart!))
      .setProtectedHeader(header as { alg: string })
      .sign(await importJWK(key, alg));
    if (resigned !== step.token) {
      problems.push(
        `${where}: re-signing with "${step.signedWith}" (EdDSA, deterministic) gives another token`,
      );
    }
  }
  return problems;
}

async function run(vector: IntentVector, ctx: ExecutorContext): Promise<void> {
  if ((vector.jwks === undefined) === (vector.jwksResponses === undefined)) {
    throw new Error(`${ctx.file}: give exactly one of jwks and jwksResponses`);
  }
  const problems: string[] = [];
  const responses = [...(vector.jwksResponses ?? [])];
  let fetches = 0;
  const fakeFetch = (async (input: unknown) => {
    fetches++;
    if (String(input) !== JWKS_URL) problems.push(`fetch of ${String(input)}: expected ${JWKS_URL}`);
    const next = responses.shift();
    if (!next) {
      problems.push(`JWKS fetch #${fetches}: the vector lists ${vector.jwksResponses?.length ?? 0}`);
      return new Response('{}', { status: 500 });
    }
    return new Response(JSON.stringify(next.body), {
      status: next.status,
      headers: { 'content-type': 'application/json' },
    });
  }) as typeof fetch;
  const verifier = createIntentVerifier({
    ...vector.verifier,
    ...(vector.jwks ? { jwks: vector.jwks } : { jwksUrl: JWKS_URL, fetch: fakeFetch }),
    replayCache: new MemoryReplayCache(),
    clock: ctx.clock,
  });

  for (const [index, step] of vector.steps.entries()) {
    const where = `step ${index + 1}`;
    if ('advance' in step) {
      ctx.clock.advance(step.advance);
      continue;
    }
    problems.push(...(await tokenProblems(where, step.verify, vector.keys)));
    let got: unknown;
    try {
      const intent = await verifier.verify(step.verify.token);
      const { claims: _claims, ...named } = intent;
      got = { accepted: named };
    } catch (error) {
      if (!(error instanceof IntentVerificationError)) throw error;
      got = {
        error: {
          reason: error.reason,
          code: error.code,
          ...('error' in step.expect && step.expect.error.retryable !== undefined
            ? { retryable: error.retryable }
            : {}),
        },
      };
    }
    if (!jsonEqual(step.expect, got)) {
      problems.push(`${where}: expected ${JSON.stringify(step.expect)}, got ${JSON.stringify(got)}`);
    }
    if (step.jwksFetches !== undefined && step.jwksFetches !== fetches) {
      problems.push(`${where}: expected ${step.jwksFetches} JWKS fetches so far, got ${fetches}`);
    }
  }
  fail(ctx.file, problems);
}

export const executor: Executor<IntentVector> = { kind: 'intent', run };

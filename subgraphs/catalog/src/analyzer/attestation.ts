/**
 * The analysis result as an in-toto Statement v1 (https://github.com/in-toto/attestation/tree/main/spec/v1) whose
 * subject is the package (name and its SHA-256 / SHA-512 digests) and whose predicate holds the findings, wrapped
 * in a DSSE envelope (https://github.com/secure-systems-lab/dsse) signed by the tenant's analyzer key: ECDSA P-256
 * with SHA-256 over PAE(payloadType, payload), signature DER-encoded (as sigstore and in-toto tooling expect).
 * The key id is the key's RFC 7638 JWK thumbprint; the public keys are published by Query.analyzerKeys.
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify } from 'node:crypto';
import type { KeyVault, Queryable } from '@agentgraph/runtime';
import { sealContextOf, sealedPem } from '../tuf/keys.js';
import { calculateJwkThumbprint, type JWK } from 'jose';
import type { Finding } from './analyze.mjs';

export const STATEMENT_TYPE = 'https://in-toto.io/Statement/v1';
export const PREDICATE_TYPE = 'https://agentgraph.dev/attestations/plugin-analysis/v1';
export const PAYLOAD_TYPE = 'application/vnd.in-toto+json';

export interface AnalysisPredicate {
  verdict: 'PASS' | 'FAIL';
  /** Why the package failed, or why the analysis itself failed. */
  reason: string | null;
  findings: Finding[];
  analyzer: { name: string; version: string };
  analysedAt: string;
  plugin: string;
  version: string;
}

export interface DsseEnvelope {
  payloadType: string;
  payload: string;
  signatures: { keyid: string; sig: string }[];
}

/** DSSE v1 pre-authentication encoding. */
export function pae(payloadType: string, payload: Buffer): Buffer {
  const type = Buffer.from(payloadType, 'utf8');
  return Buffer.concat([
    Buffer.from(`DSSEv1 ${type.length} `, 'utf8'),
    type,
    Buffer.from(` ${payload.length} `, 'utf8'),
    payload,
  ]);
}

export function statementFor(
  subject: { name: string; sha256: string; sha512: string },
  predicate: AnalysisPredicate,
) {
  return {
    _type: STATEMENT_TYPE,
    subject: [{ name: subject.name, digest: { sha256: subject.sha256, sha512: subject.sha512 } }],
    predicateType: PREDICATE_TYPE,
    predicate,
  };
}

export interface AnalyzerKey {
  keyId: string;
  publicJwk: JWK;
  privatePem: string;
}

/** The tenant's analyzer key, created on first use. */
export async function analyzerKey(tx: Queryable, tenantId: string, vault: KeyVault): Promise<AnalyzerKey> {
  const r = await tx.query<{ key_id: string; public_key: string; private_key: string }>(
    `SELECT key_id, public_key, private_key FROM catalog.signing_keys
      WHERE role = 'analyzer' AND state = 'active' ORDER BY created_at DESC LIMIT 1`,
  );
  if (r.rows[0]) {
    const row = r.rows[0];
    return {
      keyId: row.key_id,
      publicJwk: JSON.parse(row.public_key) as JWK,
      privatePem: vault.open(row.private_key, sealContextOf(tenantId, row.key_id)),
    };
  }
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const publicJwk = publicKey.export({ format: 'jwk' }) as JWK;
  const keyId = await calculateJwkThumbprint(publicJwk, 'sha256');
  const privatePem = privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
  await tx.query(
    `INSERT INTO catalog.signing_keys (tenant_id, key_id, role, algorithm, public_key, private_key)
     VALUES ($1, $2, 'analyzer', 'ES256', $3, $4)`,
    [
      tenantId,
      keyId,
      JSON.stringify({ ...publicJwk, kid: keyId, alg: 'ES256', use: 'sig' }),
      sealedPem(vault, tenantId, keyId, privatePem),
    ],
  );
  return { keyId, publicJwk: { ...publicJwk, kid: keyId, alg: 'ES256', use: 'sig' }, privatePem };
}

export function signEnvelope(statement: object, key: AnalyzerKey): DsseEnvelope {
  const payload = Buffer.from(JSON.stringify(statement), 'utf8');
  const sig = sign('sha256', pae(PAYLOAD_TYPE, payload), {
    key: createPrivateKey(key.privatePem),
    dsaEncoding: 'der',
  });
  return {
    payloadType: PAYLOAD_TYPE,
    payload: payload.toString('base64'),
    signatures: [{ keyid: key.keyId, sig: sig.toString('base64') }],
  };
}

/** Verifies an envelope against a published key; returns the statement, or null when the signature is wrong. */
export function verifyEnvelope(envelope: DsseEnvelope, publicJwk: JWK): unknown {
  const payload = Buffer.from(envelope.payload, 'base64');
  const key = createPublicKey({ key: publicJwk as never, format: 'jwk' });
  const ok = envelope.signatures.some((s) =>
    verify(
      'sha256',
      pae(envelope.payloadType, payload),
      { key, dsaEncoding: 'der' },
      Buffer.from(s.sig, 'base64'),
    ),
  );
  return ok ? (JSON.parse(payload.toString('utf8')) as unknown) : null;
}

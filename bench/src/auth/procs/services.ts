/**
 * The auth bench's subgraph process: memory, coordination and catalog on the bench database (as the gateway bench
 * serves its subgraphs: one process, one shared revocation list, tokens verified against identity's JWKS), plus
 * identity itself when the database is the embedded PGlite (one process only can open it). It is also the bench's
 * hand on the database, over IPC, for what a user or an operator would do, never for what is measured:
 *
 *   {type:'member'}                         a tenant and its owner (the approving user)      → {type:'member', tenantId, userId}
 *   {type:'approve', userCode}              the owner approves a device code (as identity's /device page does:
 *                                           withUserCodeGuard + approveDeviceAuthorization) → {type:'approved', deviceId}
 *   {type:'revocations', count, jtis?}      revokes `jtis`, and `count` unrelated token ids      → {type:'revoked', count}
 *   {type:'mint', template, count}          `count` copies of a real access token, each with its own jti and iat,
 *                                           signed with identity's active key                → {type:'minted', tokens}
 *
 * Every answer echoes the request's `id`; a failure answers {type:'error', id, error}. Tokens are never logged.
 */
import { randomUUID } from 'node:crypto';
import { catalogSubgraph } from '@agentgraph/catalog';
import { coordinationSubgraph } from '@agentgraph/coordination';
import { activeSigningKey, bootstrapTenant, identitySubgraph } from '@agentgraph/identity';
import { memorySubgraph } from '@agentgraph/memory';
import {
  keyVault,
  createLogger,
  createRevocationList,
  createTokenVerifier,
  loadConfig,
  openDatabase,
  revokeTokens,
  serveSubgraph,
  withTenant,
  type AuthContext,
  type ServedSubgraph,
} from '@agentgraph/runtime';
import { decodeJwt, decodeProtectedHeader, SignJWT } from 'jose';
import { z } from 'zod';
import {
  approveDeviceAuthorization,
  withUserCodeGuard,
} from '../../../../subgraphs/identity/src/oauth/device-approval.js';
import { oauthServiceFor } from '../../../../subgraphs/identity/src/oauth/service.js';

export interface ServicesReady {
  type: 'ready';
  subgraphUrls: Record<string, string>;
}

const Request = z.discriminatedUnion('type', [
  z.object({ type: z.literal('member'), id: z.number() }),
  z.object({ type: z.literal('approve'), id: z.number(), userCode: z.string() }),
  z.object({
    type: z.literal('revocations'),
    id: z.number(),
    count: z.number().int().min(0).max(100_000),
    jtis: z.array(z.string().min(1)).default([]),
  }),
  z.object({
    type: z.literal('mint'),
    id: z.number(),
    template: z.string(),
    count: z.number().int().min(1).max(200_000),
  }),
]);

const config = loadConfig(process.env);
const log = createLogger({ service: 'bench-auth-services' }, { level: config.logLevel });
const serveIdentity = process.env['BENCH_SERVE_IDENTITY'] === '1';
const modules = [identitySubgraph, memorySubgraph, coordinationSubgraph, catalogSubgraph];
// Identity's role: this process also acts as identity (tenants, enrolment approval, revocations, minting).
const { db, handle } = await openDatabase(
  config,
  modules.map((m) => m.migrations),
  'identity',
);
const revocations = createRevocationList(db, log);
await revocations.ready;
const served: ServedSubgraph[] = [];
for (const module of serveIdentity ? modules : modules.slice(1)) {
  const verifyToken = createTokenVerifier({
    issuer: config.tokenIssuer,
    audience: config.tokenAudience,
    keys: config.jwksUrl,
    revocations,
  });
  served.push(await serveSubgraph(module, { config, db: await handle.app(module.name), log, verifyToken }));
}
const oauth = oauthServiceFor({ config, db, log });
await oauth.ready;

let owner: AuthContext | null = null;

async function answer(raw: unknown): Promise<Record<string, unknown>> {
  const req = Request.parse(raw);
  switch (req.type) {
    case 'member': {
      const { tenantId, userId } = await bootstrapTenant(handle.owner, {
        tenantName: 'Auth bench tenant',
        email: `auth-bench-${Date.now()}@example.com`,
        displayName: 'Auth Bench Owner',
      });
      owner = { tenantId, principalId: userId, role: 'OWNER', scopes: ['api:read', 'api:write'] };
      return { type: 'member', tenantId, userId };
    }
    case 'approve': {
      const auth = owner;
      if (!auth) throw new Error('approve: ask for a member first ({type:"member"})');
      const { deviceId } = await withUserCodeGuard(oauth, auth, () =>
        withTenant(db, auth, (tx) => approveDeviceAuthorization(oauth, tx, auth, req.userCode)),
      );
      return { type: 'approved', deviceId };
    }
    case 'revocations': {
      const expiresAt = new Date(Date.now() + 30 * 60_000);
      const values = [...req.jtis, ...Array.from({ length: req.count }, () => randomUUID())];
      await db.transaction((tx) =>
        revokeTokens(
          tx,
          values.map((value) => ({ kind: 'jti' as const, value, expiresAt })),
        ),
      );
      return { type: 'revoked', count: values.length };
    }
    case 'mint': {
      // Same header and claims as the template (a token the token endpoint issued), a fresh jti and lifetime each.
      const { kid, key } = await activeSigningKey(db, keyVault(config));
      const header = decodeProtectedHeader(req.template);
      if (header.kid !== kid) throw new Error('mint: the template was not signed with the active key');
      const { jti: _jti, iat: _iat, exp, ...claims } = decodeJwt(req.template);
      const iat = Math.floor(Date.now() / 1000);
      const ttl = (exp ?? 0) - (_iat ?? 0);
      if (!(ttl > 0)) throw new Error('mint: the template has no positive lifetime (exp - iat)');
      const tokens: string[] = [];
      for (let i = 0; i < req.count; i++) {
        tokens.push(
          await new SignJWT({ ...claims, jti: randomUUID() })
            .setProtectedHeader({ alg: header.alg!, kid, typ: header.typ })
            .setIssuedAt(iat)
            .setExpirationTime(iat + ttl)
            .sign(key),
        );
      }
      return { type: 'minted', tokens };
    }
  }
}

process.on('message', (m: { type?: string; id?: number }) => {
  if (m?.type === 'stop') return;
  answer(m).then(
    (a) => process.send!({ ...a, id: m.id }),
    (err: Error) => process.send!({ type: 'error', id: m?.id, error: err.message }),
  );
});

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  setTimeout(() => process.exit(0), 5_000).unref();
  try {
    await oauth.close();
    for (const s of served.reverse()) await s.close();
    await revocations.close();
    await handle.close();
  } finally {
    process.exit(0);
  }
};
process.on('message', (m: { type?: string }) => {
  if (m?.type === 'stop') void stop();
});
process.once('SIGTERM', () => void stop());

const ready: ServicesReady = {
  type: 'ready',
  subgraphUrls: Object.fromEntries(served.map((s) => [s.name, `${s.url}/graphql`])),
};
process.send!(ready);

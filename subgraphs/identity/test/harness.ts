/**
 * Serves the identity subgraph over real HTTP on port 0 against a fresh test database (in-memory PGlite, or a
 * new database on DATABASE_URL's server), with the token verifier pointed at the served JWKS route.
 */
import {
  keyVault,
  createLogger,
  createRevocationList,
  createTokenVerifier,
  GATEWAY_SECRET_HEADER,
  loadConfig,
  openDatabase,
  serveSubgraph,
  type Config,
  type Database,
  type DatabaseHandle,
  type ServedSubgraph,
  type TokenVerifier,
} from '@agentgraph/runtime';
import { randomUUID } from 'node:crypto';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, SignJWT } from 'jose';
import { provisionTestDatabase, type TestDatabase } from '../../../test/src/database.js';
import {
  activeSigningKey,
  bootstrapTenant,
  identitySubgraph,
  issueAccessToken,
  JWKS_PATH,
} from '../src/index.js';
import type { Role } from '../src/models.js';

export interface GraphQLAnswer {
  status: number;

  body: {
    data?: any;
    errors?: { message: string; path?: string[]; extensions: Record<string, unknown> }[];
    extensions?: Record<string, unknown>;
  };
}

export interface Member {
  tenantId: string;
  userId: string;
  token: string;
}

export interface Harness {
  testDb: TestDatabase;
  config: Config;
  db: Database;
  handle: DatabaseHandle;
  served: ServedSubgraph;
  url: string;
  logs: string[];
  verify: TokenVerifier;
  gql(query: string, variables?: Record<string, unknown>, token?: string): Promise<GraphQLAnswer>;
  /** bootstrap a tenant + owner and sign a token for them. */
  tenant(name: string, email: string, role?: Role): Promise<Member>;
  token(m: { tenantId: string; userId: string }, role?: Role, now?: Date): Promise<string>;
  /** A device's access token as the device grant issues it: `did`, `client_id: agentgraph-desktop`, API scopes. */
  deviceToken(
    m: { tenantId: string; userId: string },
    deviceId: string,
    role?: Role,
    extra?: Record<string, unknown>,
  ): Promise<string>;
  /** An ENROLLED device of the member, written as the migration owner (as device approval leaves it). */
  enrolledDevice(m: { tenantId: string; userId: string }, name: string): Promise<string>;
  /** SQL with the migration owner's rights (test fixtures the app role may not write). */
  asOwner<Row = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<Row[]>;
  close(): Promise<void>;
}

export async function startIdentity(
  env: Record<string, string> = {},
  configure?: (c: Config) => Config,
): Promise<Harness> {
  const testDb = await provisionTestDatabase();
  let config = loadConfig({
    ...testDb.env,
    IDENTITY_PORT: '0',
    TOKEN_ISSUER: 'http://identity.test',
    LOG_LEVEL: 'debug',
    ...env,
  });
  if (configure) config = configure(config);
  const { db, handle } = await openDatabase(config, [identitySubgraph.migrations], 'identity');
  const logs: string[] = [];
  const log = createLogger(
    { service: 'identity-test' },
    { level: 'debug', write: (line) => logs.push(line) },
  );
  // Revoked tokens are refused as in production (serveSubgraph's own verifier does the same).
  const revocations = createRevocationList(db, log);
  await revocations.ready;
  let verifier: TokenVerifier | null = null;
  const served = await serveSubgraph(identitySubgraph, {
    config,
    db,
    log,
    port: 0,
    verifyToken: (authorization) => verifier!(authorization),
  });
  verifier = createTokenVerifier({
    issuer: config.tokenIssuer,
    audience: config.tokenAudience,
    keys: `${served.url}${JWKS_PATH}`,
    revocations,
  });
  const verify = verifier;

  const token: Harness['token'] = (m, role = 'OWNER', now) =>
    issueAccessToken(
      db,
      config,
      { tenantId: m.tenantId, userId: m.userId, role, scopes: ['api:read', 'api:write'] },
      now,
    );

  // On PGlite the owner's statements step out of the app role for themselves (runtime/src/db/pglite.ts).
  async function asOwner<Row>(sql: string, params: unknown[] = []): Promise<Row[]> {
    return (await handle.owner.query<Row>(sql, params)).rows;
  }

  return {
    testDb,
    config,
    db,
    handle,
    served,
    url: served.url,
    logs,
    verify,
    async gql(query, variables, bearer) {
      const res = await fetch(`${served.url}/graphql`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/graphql-response+json',
          // As the gateway asks (tests query _entities directly): runtime/src/gateway-secret.ts.
          [GATEWAY_SECRET_HEADER]: config.gatewaySecret,
          ...(bearer ? { authorization: `Bearer ${bearer}` } : {}),
        },
        body: JSON.stringify({ query, variables }),
      });
      return { status: res.status, body: (await res.json()) as GraphQLAnswer['body'] };
    },
    async tenant(name, email, role = 'OWNER') {
      const { tenantId, userId } = await bootstrapTenant(handle.owner, {
        tenantName: name,
        email,
        displayName: name + ' owner',
      });
      return { tenantId, userId, token: await token({ tenantId, userId }, role) };
    },
    token,
    async deviceToken(m, deviceId, role = 'OWNER', extra = {}) {
      const { kid, key } = await activeSigningKey(db, keyVault(config));
      const iat = Math.floor(Date.now() / 1000);
      return new SignJWT({
        tid: m.tenantId,
        role,
        scope: 'openid offline_access api:read api:write',
        client_id: 'agentgraph-desktop',
        did: deviceId,
        ...extra,
      })
        .setProtectedHeader({ alg: 'ES256', kid, typ: 'at+jwt' })
        .setIssuer(config.tokenIssuer)
        .setAudience(config.tokenAudience)
        .setSubject(m.userId)
        .setIssuedAt(iat)
        .setExpirationTime(iat + 15 * 60)
        .setJti(randomUUID())
        .sign(key);
    },
    async enrolledDevice(m, name) {
      const jwk = await exportJWK((await generateKeyPair('ES256', { extractable: true })).publicKey);
      const rows = await asOwner<{ id: string }>(
        `INSERT INTO identity.devices
           (tenant_id, owner_id, name, platform, status, public_jwk, key_thumbprint, client_id, enrolled_at)
         VALUES ($1, $2, $3, 'linux', 'ENROLLED', $4::text::jsonb, $5, 'agentgraph-desktop', now()) RETURNING id`,
        [m.tenantId, m.userId, name, JSON.stringify(jwk), await calculateJwkThumbprint(jwk, 'sha256')],
      );
      return rows[0]!.id;
    },
    asOwner,
    async close() {
      await served.close();
      await revocations.close();
      await handle.close();
      await testDb.drop();
    },
  };
}

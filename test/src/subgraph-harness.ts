/**
 * Test harness for one subgraph module (used by memory's and catalog's tests): served over real HTTP on port 0, on a
 * fresh database (in-memory PGlite, or a new PostgreSQL database when DATABASE_URL is set), trusting ES256 tokens
 * that the test signs itself.
 */
import { randomUUID } from 'node:crypto';
import {
  createLogger,
  createTokenVerifier,
  GATEWAY_SECRET_HEADER,
  loadConfig,
  openDatabase,
  serveSubgraph,
  type Config,
  type ServedSubgraph,
  type SubgraphModule,
} from '@agentgraph/runtime';
import { createLocalJWKSet, exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import { provisionTestDatabase, type TestDatabase } from './database.js';

export type { Role } from '@agentgraph/runtime';
import type { Role } from '@agentgraph/runtime';

export interface Principal {
  tenantId: string;
  userId: string;
  role: Role;
  /** A device's token (the `did` claim): memory's device authorship rules apply. */
  deviceId?: string;
}

export interface GraphQLResponse {
  status: number;
  body: {
    data?: Record<string, unknown> | null;
    errors?: { message: string; path?: string[]; extensions?: Record<string, unknown> }[];
    extensions?: Record<string, unknown>;
  };
}

export interface Harness {
  url: string;
  config: Config;
  driver: TestDatabase['driver'];
  /** A token for this principal, signed like identity would sign it. */
  token(p: Principal): Promise<string>;
  /**
   * POST /graphql as this principal (or anonymously), as the gateway sends it: with the gateway secret
   * (x-agentgraph-gateway), unless `asGateway` is false (a client that reached the subgraph directly).
   */
  gql(
    p: Principal | null,
    query: string,
    variables?: Record<string, unknown>,
    opts?: { asGateway?: boolean; headers?: Record<string, string> },
  ): Promise<GraphQLResponse>;
  close(): Promise<void>;
}

export const ISSUER = 'https://identity.test';
export const AUDIENCE = 'agentgraph';

export function newPrincipal(role: Role = 'OWNER', tenantId: string = randomUUID()): Principal {
  return { tenantId, userId: randomUUID(), role };
}

export async function startSubgraph(
  module: SubgraphModule,
  env: Record<string, string> = {},
  /** Changes the loaded config (e.g. production mode, which loadConfig allows only with DATABASE_URL). */
  configure: (c: Config) => Config = (c) => c,
): Promise<Harness> {
  const database = await provisionTestDatabase();
  const config = configure(
    loadConfig({ ...database.env, HOST: '127.0.0.1', TOKEN_AUDIENCE: AUDIENCE, ...env }),
  );
  const { db, handle } = await openDatabase(config, [module.migrations], module.name);
  const { publicKey, privateKey } = await generateKeyPair('ES256');
  const publicJwk = { ...(await exportJWK(publicKey)), kid: 'test-key', alg: 'ES256', use: 'sig' };
  const verifyToken = createTokenVerifier({
    issuer: ISSUER,
    audience: AUDIENCE,
    keys: createLocalJWKSet({ keys: [publicJwk] }),
  });
  const log = createLogger(
    { service: `${module.name}-test` },
    { level: 'error', write: (line) => process.stderr.write(line + '\n') },
  );
  const served: ServedSubgraph = await serveSubgraph(module, { config, db, log, verifyToken, port: 0 });
  const sign = (p: Principal, key: CryptoKey) =>
    new SignJWT({
      tid: p.tenantId,
      role: p.role,
      scope: 'api:read api:write',
      ...(p.deviceId && { did: p.deviceId }),
    })
      .setProtectedHeader({ alg: 'ES256', kid: 'test-key', typ: 'at+jwt' })
      .setSubject(p.userId)
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setIssuedAt()
      .setExpirationTime('10m')
      .sign(key);
  const tokens = new Map<string, string>();
  const token = async (p: Principal) => {
    const k = `${p.tenantId}/${p.userId}/${p.role}/${p.deviceId ?? ''}`;
    let t = tokens.get(k);
    if (!t) tokens.set(k, (t = await sign(p, privateKey)));
    return t;
  };
  return {
    url: `${served.url}/graphql`,
    config,
    driver: database.driver,
    token,
    async gql(p, query, variables, opts = {}) {
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        accept: 'application/graphql-response+json',
      };
      if (opts.asGateway !== false) headers[GATEWAY_SECRET_HEADER] = config.gatewaySecret;
      if (p) headers['authorization'] = `Bearer ${await token(p)}`;
      Object.assign(headers, opts.headers);
      const res = await fetch(`${served.url}/graphql`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ query, variables }),
      });
      return { status: res.status, body: (await res.json()) as GraphQLResponse['body'] };
    },
    async close() {
      await served.close();
      await handle.close();
      await database.drop();
    },
  };
}

/** The first error's code, or undefined when the request succeeded. */
export function codeOf(r: GraphQLResponse): unknown {
  return r.body.errors?.[0]?.extensions?.['code'];
}

/** The data of a response that must have succeeded (fails the test with the errors otherwise). */
export function dataOf<T = Record<string, any>>(r: GraphQLResponse): T {
  if (r.body.errors?.length || !r.body.data) {
    throw new Error(`expected success, got HTTP ${r.status}: ${JSON.stringify(r.body.errors)}`);
  }
  return r.body.data as T;
}

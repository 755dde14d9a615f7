/**
 * Serves the identity subgraph over real HTTP on port 0 against a fresh test database (in-memory PGlite, or a
 * new database on DATABASE_URL's server), with the token verifier pointed at the served JWKS route.
 */
import {
  createLogger,
  createTokenVerifier,
  loadConfig,
  openDatabase,
  serveSubgraph,
  type Config,
  type Database,
  type DatabaseHandle,
  type ServedSubgraph,
  type TokenVerifier,
} from '@agentgraph/runtime';
import { provisionTestDatabase, type TestDatabase } from '../../../test/src/database.js';
import { bootstrapTenant, identitySubgraph, issueAccessToken, JWKS_PATH } from '../src/index.js';
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
  const { db, handle } = await openDatabase(config, [identitySubgraph.migrations]);
  const logs: string[] = [];
  const log = createLogger(
    { service: 'identity-test' },
    { level: 'debug', write: (line) => logs.push(line) },
  );
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
  });
  const verify = verifier;

  const token: Harness['token'] = (m, role = 'OWNER', now) =>
    issueAccessToken(db, config, { tenantId: m.tenantId, userId: m.userId, role, scopes: [] }, now);

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
          ...(bearer ? { authorization: `Bearer ${bearer}` } : {}),
        },
        body: JSON.stringify({ query, variables }),
      });
      return { status: res.status, body: (await res.json()) as GraphQLAnswer['body'] };
    },
    async tenant(name, email, role = 'OWNER') {
      const { tenantId, userId } = await bootstrapTenant(db, {
        tenantName: name,
        email,
        displayName: name + ' owner',
      });
      return { tenantId, userId, token: await token({ tenantId, userId }, role) };
    },
    token,
    async asOwner<Row>(sql: string, params: unknown[] = []) {
      if (db.driver === 'pglite') {
        // One PGlite connection serves both: step out of the app role for this statement only.
        await handle.owner.query('RESET ROLE');
        try {
          return (await handle.owner.query<Row>(sql, params)).rows;
        } finally {
          await handle.owner.query(`SET ROLE ${config.appRole}`);
        }
      }
      return (await handle.owner.query<Row>(sql, params)).rows;
    },
    async close() {
      await served.close();
      await handle.close();
      await testDb.drop();
    },
  };
}

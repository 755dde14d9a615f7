/**
 * The whole platform for one end-to-end test file: a fresh database (in-memory PGlite, or a new database on the
 * PostgreSQL server when DATABASE_URL is set), the four subgraphs and the gateway on loopback port 0, and helpers
 * that talk to it over real HTTP the way a client would.
 */
import { randomUUID } from 'node:crypto';
import { bootstrapTenant, issueAccessToken } from '@agentgraph/identity';
import { createLogger, loadConfig, type Logger } from '@agentgraph/runtime';
import { startPlatform, type Platform, type PlatformOptions } from '../../gateway/src/platform.js';
import { provisionTestDatabase } from './database.js';

export type { Role } from '@agentgraph/runtime';
import type { Role } from '@agentgraph/runtime';

export interface GraphQLResult<T = any> {
  status: number;
  headers: Headers;
  data?: T | null;
  errors?: Array<{
    message: string;
    path?: Array<string | number>;
    extensions?: { code?: string } & Record<string, unknown>;
  }>;
  extensions?: Record<string, unknown>;
  /** The body as text when it was not JSON. */
  raw?: string;
}

export interface TestUser {
  tenantId: string;
  userId: string;
  email: string;
  displayName: string;
  role: Role;
  token: string;
}

export interface TestPlatform {
  driver: 'pglite' | 'postgres';
  /** Gateway base URL: /graphql, /graphql/stream, /healthz, /readyz. */
  gatewayUrl: string;
  subgraphs: Platform['subgraphs'];
  platform: Platform;
  /** Error-level log lines (anything logged at error). */
  errorLogs: string[];
  /**
   * The owner of a tenant, with a fresh access token signed by identity. `tenant` names the tenant (created with
   * its owner through identity's bootstrapTenant on first use; same name, same tenant and user). `role` is the role
   * claim written into the token (default OWNER; identity has no member management yet, so one user per tenant).
   */
  tokenFor(opts?: { tenant?: string; role?: Role; displayName?: string }): Promise<TestUser>;
  /** POSTs a GraphQL request to the gateway. */
  gql<T = any>(
    query: string,
    variables?: Record<string, unknown>,
    token?: string | null,
    headers?: Record<string, string>,
  ): Promise<GraphQLResult<T>>;
  /** POSTs a raw body to the gateway's /graphql. */
  post(body: string, headers?: Record<string, string>): Promise<GraphQLResult>;
  /**
   * Another replica of the whole platform (identity, memory, coordination, catalog and a gateway) on the same
   * database, with its own connection pools and LISTEN connection, as another process would run it. PostgreSQL
   * only (PGlite is one in-process database). Closed before the test database is dropped.
   */
  replica(): Promise<{ gatewayUrl: string; platform: Platform; close(): Promise<void> }>;
  /** Graceful stop (idempotent), then the test database is dropped. */
  close(): Promise<void>;
}

export async function startTestPlatform(
  extraEnv: Record<string, string> = {},
  opts: Partial<PlatformOptions> = {},
): Promise<TestPlatform> {
  const testDb = await provisionTestDatabase();
  const env = {
    ...testDb.env,
    HOST: '127.0.0.1',
    GATEWAY_PORT: '0',
    IDENTITY_PORT: '0',
    MEMORY_PORT: '0',
    COORDINATION_PORT: '0',
    CATALOG_PORT: '0',
    LOG_LEVEL: 'error',
    SHUTDOWN_GRACE_MS: '5000',
    ...extraEnv,
  };
  const config = loadConfig(env);
  const errorLogs: string[] = [];
  const log: Logger =
    opts.log ?? createLogger({ service: 'e2e' }, { level: 'error', write: (line) => errorLogs.push(line) });
  let platform: Platform;
  try {
    platform = await startPlatform(config, { ...opts, log });
  } catch (err) {
    await testDb.drop();
    throw err;
  }
  const served = platform.config;
  const owners = new Map<string, Omit<TestUser, 'role' | 'token'>>();

  const post = async (body: string, headers: Record<string, string> = {}): Promise<GraphQLResult> => {
    const res = await fetch(`${platform.gatewayUrl}/graphql`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/graphql-response+json',
        ...headers,
      },
      body,
    });
    const text = await res.text();
    try {
      return { status: res.status, headers: res.headers, ...(JSON.parse(text) as object) };
    } catch {
      return { status: res.status, headers: res.headers, raw: text };
    }
  };

  let closed: Promise<void> | null = null;
  const replicas: Platform[] = [];
  return {
    driver: testDb.driver,
    gatewayUrl: platform.gatewayUrl,
    subgraphs: platform.subgraphs,
    platform,
    errorLogs,
    async tokenFor(o = {}) {
      const tenant = o.tenant ?? 'acme';
      let owner = owners.get(tenant);
      if (!owner) {
        const email = `owner.${randomUUID().slice(0, 8)}@${tenant.toLowerCase().replace(/[^a-z0-9]+/g, '-')}.test`;
        const displayName = o.displayName ?? `Owner of ${tenant}`;
        const r = await bootstrapTenant(platform.owner, { tenantName: tenant, email, displayName });
        owner = { tenantId: r.tenantId, userId: r.userId, email, displayName };
        owners.set(tenant, owner);
      }
      const role = o.role ?? 'OWNER';
      const token = await issueAccessToken(platform.dbs.identity, served, {
        tenantId: owner.tenantId,
        userId: owner.userId,
        role,
        scopes: ['api:read', 'api:write'],
      });
      return { ...owner, role, token };
    },
    gql(query, variables, token, headers = {}) {
      return post(JSON.stringify({ query, variables }), {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...headers,
      });
    },
    post,
    async replica() {
      if (testDb.driver !== 'postgres') {
        throw new Error('A replica needs PostgreSQL (DATABASE_URL): PGlite is one in-process database.');
      }
      const other = await startPlatform(loadConfig(env), { ...opts, log });
      replicas.push(other);
      return { gatewayUrl: other.gatewayUrl, platform: other, close: () => other.close() };
    },
    close() {
      closed ??= (async () => {
        for (const r of replicas) await r.close();
        await platform.close();
        await testDb.drop();
      })();
      return closed;
    },
  };
}

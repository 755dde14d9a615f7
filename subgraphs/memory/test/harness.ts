/**
 * The memory subgraph over real HTTP on port 0, on a fresh database (in-memory PGlite, or a new PostgreSQL database
 * when DATABASE_URL is set), with locally signed ES256 tokens, a fake clock, and no background work: tests run the
 * indexing worker and the sweeper by hand at the fake clock's time. Exposes the app connection (RLS applies) and
 * the owner connection (to look at stored rows the way an attacker with the disk would).
 */
import { randomUUID } from 'node:crypto';
import {
  createLogger,
  createTokenVerifier,
  GATEWAY_SECRET_HEADER,
  loadConfig,
  openDatabase,
  serveSubgraph,
  type Database,
  type Queryable,
} from '@agentgraph/runtime';
import { createLocalJWKSet, exportJWK, generateKeyPair, SignJWT } from 'jose';
import { provisionTestDatabase } from '../../../test/src/database.js';
import type { GraphQLResponse, Principal } from '../../../test/src/subgraph-harness.js';
import { createMemorySubgraph, type MemoryOptions } from '../src/index.js';
import type { SearchParams } from '../src/search.js';

export interface FakeClock {
  now(): Date;
  advance(ms: number): void;
}

export interface MemoryHarness {
  driver: 'pglite' | 'postgres';
  clock: FakeClock;
  /** The app connection (the non-owner role; RLS applies). */
  db: Database;
  /** Owner privileges: reads every tenant's rows (checks of what is stored). Not concurrently with requests. */
  owner: Queryable;
  gql(p: Principal | null, query: string, variables?: Record<string, unknown>): Promise<GraphQLResponse>;
  close(): Promise<void>;
}

export async function startMemoryHarness(
  opts: Omit<MemoryOptions, 'now' | 'sweepIntervalMs' | 'indexIntervalMs'> = {},
): Promise<MemoryHarness> {
  const database = await provisionTestDatabase();
  const config = loadConfig({ ...database.env, HOST: '127.0.0.1', TOKEN_AUDIENCE: 'agentgraph' });
  let t = Date.now();
  const clock: FakeClock = { now: () => new Date(t), advance: (ms) => void (t += ms) };
  const module = createMemorySubgraph({ ...opts, now: clock.now, sweepIntervalMs: 0, indexIntervalMs: 0 });
  const { db, handle } = await openDatabase(config, [module.migrations], module.name);
  const { publicKey, privateKey } = await generateKeyPair('ES256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'k', alg: 'ES256', use: 'sig' };
  const verifyToken = createTokenVerifier({
    issuer: 'https://identity.test',
    audience: 'agentgraph',
    keys: createLocalJWKSet({ keys: [jwk] }),
  });
  const log = createLogger(
    { service: 'memory-test' },
    { level: 'error', write: (line) => process.stderr.write(line + '\n') },
  );
  const served = await serveSubgraph(module, { config, db, log, verifyToken, port: 0 });
  const tokens = new Map<string, string>();
  const token = async (p: Principal) => {
    const k = `${p.tenantId}/${p.userId}/${p.role}`;
    let tok = tokens.get(k);
    if (!tok) {
      tok = await new SignJWT({ tid: p.tenantId, role: p.role, scope: 'api:read api:write' })
        .setProtectedHeader({ alg: 'ES256', kid: 'k', typ: 'at+jwt' })
        .setSubject(p.userId)
        .setIssuer('https://identity.test')
        .setAudience('agentgraph')
        .setIssuedAt()
        .setExpirationTime('10m')
        .sign(privateKey);
      tokens.set(k, tok);
    }
    return tok;
  };
  return {
    driver: database.driver,
    clock,
    db,
    // On PGlite the owner's statements step out of the app role for themselves (runtime/src/db/pglite.ts); on
    // PostgreSQL the owner has connections of its own.
    owner: handle.owner,
    async gql(p, query, variables) {
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        accept: 'application/graphql-response+json',
        // As the gateway asks (tests query _entities directly): runtime/src/gateway-secret.ts.
        [GATEWAY_SECRET_HEADER]: config.gatewaySecret,
      };
      if (p) headers['authorization'] = `Bearer ${await token(p)}`;
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

export const key = () => randomUUID();

/** A search's parameters: no text, no embedding, weight 0.5, no filter, with `over` on top. */
export const searchParams = (over: Partial<SearchParams>): SearchParams => ({
  text: null,
  embedding: null,
  textWeight: 0.5,
  filter: { kind: null, tag: null, authorId: null, updatedSince: null },
  ...over,
});

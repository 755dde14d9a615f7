/**
 * Test harness: the coordination subgraph served over real HTTP on port 0, on a fresh database (in-memory PGlite,
 * or a new PostgreSQL database when DATABASE_URL is set), with its own ES256 token issuer (no identity service).
 */
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import {
  createLogger,
  createTokenVerifier,
  GATEWAY_SECRET_HEADER,
  loadConfig,
  openDatabase,
  serveSubgraph,
  type Database,
  type ServedSubgraph,
} from '@agentgraph/runtime';
import { createLocalJWKSet, exportJWK, generateKeyPair, SignJWT } from 'jose';
import { provisionTestDatabase } from '../../../test/src/database.js';
import { EMERGENCY_CHANNEL, coordinationSubgraph } from '../src/index.js';

const ISSUER = 'https://identity.test';
const AUDIENCE = 'agentgraph';

export type { Role } from '@agentgraph/runtime';
import type { Role } from '@agentgraph/runtime';

export interface Caller {
  tenantId: string;
  sub: string;
  role: Role;
  token: string;
}

export interface GraphQLResponse<T = Record<string, unknown>> {
  status: number;
  data?: T | null;
  errors?: {
    message: string;
    path?: (string | number)[];
    extensions?: { code?: string } & Record<string, unknown>;
  }[];
  extensions?: Record<string, unknown>;
}

export interface Harness {
  url: string;
  served: ServedSubgraph;
  /** The app connection (non-owner role), as the resolvers use it. */
  db: Database;
  driver: 'pglite' | 'postgres';
  /** Error-level log lines the server wrote. */
  errorLogs: string[];
  /** Number of NOTIFY listeners the subgraph currently holds; `listenersBecome(n)` resolves when it reaches n. */
  activeListeners(): number;
  listenersBecome(n: number): Promise<void>;
  caller(opts?: { tenantId?: string; role?: Role; sub?: string }): Promise<Caller>;
  gql<T = Record<string, unknown>>(
    caller: Caller | null,
    query: string,
    variables?: Record<string, unknown>,
  ): Promise<GraphQLResponse<T>>;
  /**
   * A second server of this subgraph on its own connections to the same database, as another process would run
   * (its own pool and LISTEN connection). Only meaningful on PostgreSQL: PGlite is in-process.
   */
  startReplica(): Promise<{ url: string; close(): Promise<void> }>;
  /** Closes the server (idempotent), then the database. */
  close(): Promise<void>;
  closeServer(): Promise<void>;
}

export async function startHarness(): Promise<Harness> {
  const testDb = await provisionTestDatabase();
  const config = loadConfig({
    ...testDb.env,
    LOG_LEVEL: 'error',
    TOKEN_ISSUER: ISSUER,
    TOKEN_AUDIENCE: AUDIENCE,
    SHUTDOWN_GRACE_MS: '5000',
  });
  const errorLogs: string[] = [];
  const log = createLogger(
    { service: 'coordination-test' },
    { level: 'error', write: (l) => errorLogs.push(l) },
  );
  const { db, handle } = await openDatabase(config, [coordinationSubgraph.migrations], 'coordination');

  // Count the streams' listeners so tests can await their release instead of sleeping (the server's own
  // emergency-stop listener lives as long as the server and is not counted).
  let listeners = 0;
  const listenerChanges = new EventEmitter();
  const counted: Database = {
    ...db,
    async listen(channel, onNotify, onReconnect) {
      const unlisten = await db.listen(channel, onNotify, onReconnect);
      if (channel === EMERGENCY_CHANNEL) return unlisten;
      listeners++;
      listenerChanges.emit('change');
      let done = false;
      return async () => {
        if (done) return;
        done = true;
        await unlisten();
        listeners--;
        listenerChanges.emit('change');
      };
    },
  };

  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  const kid = 'test-key';
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' };
  const verifyToken = createTokenVerifier({
    issuer: ISSUER,
    audience: AUDIENCE,
    keys: createLocalJWKSet({ keys: [publicJwk] }),
  });

  const served = await serveSubgraph(coordinationSubgraph, {
    config,
    db: counted,
    log,
    verifyToken,
    port: 0,
  });
  let serverClosed: Promise<void> | null = null;
  const closeServer = () => (serverClosed ??= served.close());

  return {
    url: served.url,
    served,
    db,
    driver: testDb.driver,
    errorLogs,
    activeListeners: () => listeners,
    listenersBecome(n) {
      return new Promise((resolve) => {
        const check = () => {
          if (listeners !== n) return;
          listenerChanges.off('change', check);
          resolve();
        };
        listenerChanges.on('change', check);
        check();
      });
    },
    async caller(opts = {}) {
      const tenantId = opts.tenantId ?? randomUUID();
      const sub = opts.sub ?? `user-${randomUUID()}`;
      const role = opts.role ?? 'OPERATOR';
      const token = await new SignJWT({ tid: tenantId, role, scope: 'api:read api:write' })
        .setProtectedHeader({ alg: 'ES256', kid, typ: 'at+jwt' })
        .setSubject(sub)
        .setIssuer(ISSUER)
        .setAudience(AUDIENCE)
        .setIssuedAt()
        .setExpirationTime('15m')
        .sign(privateKey);
      return { tenantId, sub, role, token };
    },
    async gql(caller, query, variables) {
      const res = await fetch(`${served.url}/graphql`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/graphql-response+json',
          // As the gateway asks (tests query _entities directly): runtime/src/gateway-secret.ts.
          [GATEWAY_SECRET_HEADER]: config.gatewaySecret,
          ...(caller ? { authorization: `Bearer ${caller.token}` } : {}),
        },
        body: JSON.stringify({ query, variables }),
      });
      return { status: res.status, ...((await res.json()) as object) };
    },
    closeServer,
    async startReplica() {
      const replica = await openDatabase(config, [coordinationSubgraph.migrations], 'coordination');
      const server = await serveSubgraph(coordinationSubgraph, {
        config,
        db: replica.db,
        log,
        verifyToken,
        port: 0,
      });
      return {
        url: server.url,
        async close() {
          await server.close();
          await replica.handle.close();
        },
      };
    },
    async close() {
      await closeServer();
      await handle.close();
      await testDb.drop();
    },
  };
}

export const CREATE_ROOM = /* GraphQL */ `
  mutation CreateRoom($name: String!, $key: ID!) {
    createRoom(input: { name: $name }, idempotencyKey: $key) {
      room {
        id
        name
        createdAt
        createdBy {
          id
        }
      }
    }
  }
`;

export const POST_MESSAGE = /* GraphQL */ `
  mutation Post($roomId: ID!, $body: String!, $key: ID!) {
    postMessage(roomId: $roomId, input: { body: $body }, idempotencyKey: $key) {
      message {
        id
        seq
        body
        createdAt
        author {
          id
        }
        room {
          id
          name
        }
      }
    }
  }
`;

export interface PostedMessage {
  id: string;
  seq: number;
  body: string;
  createdAt: string;
  author: { id: string };
  room: { id: string; name: string };
}

export async function createRoom(h: Harness, caller: Caller, name = 'ops'): Promise<string> {
  const r = await h.gql<{ createRoom: { room: { id: string } } }>(caller, CREATE_ROOM, {
    name,
    key: randomUUID(),
  });
  if (!r.data?.createRoom) throw new Error(`createRoom failed: ${JSON.stringify(r.errors)}`);
  return r.data.createRoom.room.id;
}

export async function post(h: Harness, caller: Caller, roomId: string, body: string): Promise<PostedMessage> {
  const r = await h.gql<{ postMessage: { message: PostedMessage } }>(caller, POST_MESSAGE, {
    roomId,
    body,
    key: randomUUID(),
  });
  if (!r.data?.postMessage) throw new Error(`postMessage failed: ${JSON.stringify(r.errors)}`);
  return r.data.postMessage.message;
}

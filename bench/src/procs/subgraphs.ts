/**
 * The subgraphs, in one child process: startPlatform's four subgraphs on a fresh in-memory PGlite (DATA_DIR=memory://,
 * so the bench never touches ./.data), then seeding through identity and the coordination subgraph. With
 * BENCH_SUBGRAPH_SERVERS=1 it also serves the coordination subgraph's schema and resolvers, on the same database, on
 * our runtime's server and on Fastify + mercurius (see ./coordination-servers.ts).
 *
 * Protocol (IPC): we send {type:'ready', ...} once seeded; parent sends {type:'stop'}.
 */
import { randomUUID } from 'node:crypto';
import { activeSigningKey, bootstrapTenant, issueAccessToken } from '@agentgraph/identity';
import { SignJWT } from 'jose';
import {
  keyVault,
  createLogger,
  loadConfig,
  type Database,
  type Queryable,
  type TransactionSettings,
} from '@agentgraph/runtime';
import { startPlatform } from '../../../gateway/src/platform.js';
import { postGraphQL } from '../lib/http.js';
import { installMemoryProbe } from '../lib/memory-probe.js';
import { startCoordinationServers, type ServerVariant } from './coordination-servers.js';

export interface SubgraphsReady {
  type: 'ready';
  subgraphUrls: Record<string, string>;
  platformGatewayUrl: string | null;
  token: string;
  /** More tokens for the same user (distinct callers: one per load connection); tokens[0] === token. */
  tokens: string[];
  tokenIssuer: string;
  jwksUrl: string;
  seed: { rooms: number; messagesPerRoom: number; users: number };
  servers?: ServerVariant[];
  /** BENCH_DEVICES=n: enrolled devices (remote actions on) of the tenant with their own device tokens. */
  devices?: { id: string; token: string }[];
}

const ROOMS = Number(process.env['BENCH_ROOMS'] ?? 10);
const MESSAGES_PER_ROOM = Number(process.env['BENCH_MESSAGES_PER_ROOM'] ?? 10);

const config = loadConfig(process.env);
const log = createLogger({ service: 'bench-subgraphs' }, { level: config.logLevel });

const platform = await startPlatform(config, { log });
/** Identity's connections: the seeding below creates the tenant, tokens and devices as identity does. */
const db: Database = platform.dbs.identity;

/**
 * Counting database round trips (for "statements per request" in the results): each service holds its one
 * Database object (its own role) and looks its methods up per call, so wrapping them here sees every query and
 * transaction. A
 * transaction adds BEGIN and COMMIT to the statements its callback runs. Costs an increment and a small object.
 */
const dbCounts = { transactions: 0, statements: 0, bySql: {} as Record<string, number> };
const sqlKeys = new Map<string, string>();
const countSql = (sql: string) => {
  dbCounts.statements++;
  let key = sqlKeys.get(sql);
  if (key === undefined) sqlKeys.set(sql, (key = sql.replace(/\s+/g, ' ').trim().slice(0, 160)));
  dbCounts.bySql[key] = (dbCounts.bySql[key] ?? 0) + 1;
};
for (const db of Object.values(platform.dbs)) {
  const query = db.query.bind(db);
  const transaction = db.transaction.bind(db);
  const mutable = db as { -readonly [K in keyof Database]: Database[K] };
  mutable.query = ((sql: string, params?: unknown[]) => {
    countSql(sql);
    return query(sql, params);
  }) as Database['query'];
  mutable.transaction = ((fn: (tx: Queryable) => Promise<unknown>, settings?: TransactionSettings) => {
    dbCounts.transactions++;
    // BEGIN (with the settings in the same round trip on PostgreSQL) and COMMIT.
    dbCounts.statements += settings && db.driver === 'pglite' ? 3 : 2;
    return transaction(
      (tx) =>
        fn({
          query: ((sql: string, params?: unknown[]) => {
            countSql(sql);
            return tx.query(sql, params);
          }) as Queryable['query'],
        }),
      settings,
    );
  }) as Database['transaction'];
}
/** startPlatform's config holds the actual URLs, token issuer and JWKS URL once everything listens. */
const served = platform.config;
const subgraphUrls: Record<string, string> = Object.fromEntries(
  Object.entries(platform.subgraphs).map(([name, base]) => [name, `${base}/graphql`]),
);

// --- seed: a tenant and its owner, a token, rooms with messages ---------------------------------------------
const boot = await bootstrapTenant(platform.owner, {
  tenantName: 'Bench tenant',
  email: `bench-${Date.now()}@example.com`,
  displayName: 'Bench Owner',
});
const token = await issueAccessToken(db, served, {
  tenantId: boot.tenantId,
  userId: boot.userId,
  role: 'OWNER',
  scopes: ['api:read', 'api:write'],
});
const tokens = [token];
for (let i = 1; i < Number(process.env['BENCH_TOKENS'] ?? 1); i++) {
  tokens.push(
    await issueAccessToken(db, served, {
      tenantId: boot.tenantId,
      userId: boot.userId,
      role: 'OWNER',
      scopes: ['api:read', 'api:write'],
    }),
  );
}
const auth = { authorization: `Bearer ${token}` };

async function mutate(query: string, variables: Record<string, unknown>): Promise<Record<string, unknown>> {
  const r = await postGraphQL(subgraphUrls['coordination']!, query, variables, auth);
  if (r.status !== 200 || !r.json?.data || r.json.errors) {
    throw new Error(`seeding failed: ${r.status} ${r.text.slice(0, 500)}`);
  }
  return r.json.data as Record<string, unknown>;
}

for (let i = 0; i < ROOMS; i++) {
  const data = await mutate(
    'mutation($name: String!, $key: ID!) { createRoom(input: { name: $name }, idempotencyKey: $key) { room { id } } }',
    { name: `room ${String(i).padStart(2, '0')}`, key: randomUUID() },
  );
  const roomId = (data['createRoom'] as { room: { id: string } }).room.id;
  for (let j = 0; j < MESSAGES_PER_ROOM; j++) {
    await mutate(
      'mutation($room: ID!, $body: String!, $key: ID!) { postMessage(roomId: $room, input: { body: $body }, idempotencyKey: $key) { message { id } } }',
      {
        room: roomId,
        body: `message ${j} in room ${i}: the quick brown fox jumps over the lazy dog`,
        key: randomUUID(),
      },
    );
  }
}

// --- devices (BENCH_DEVICES): enrolled, remote actions on, each with a device token as identity issues it -------
const devices: { id: string; token: string }[] = [];
{
  const count = Number(process.env['BENCH_DEVICES'] ?? 0);
  const { kid, key } = count ? await activeSigningKey(db, keyVault(platform.config)) : { kid: '', key: null };
  const settings = { 'app.tenant_id': boot.tenantId, 'app.principal_id': boot.userId };
  for (let i = 0; i < count; i++) {
    const jwk = {
      kty: 'EC',
      crv: 'P-256',
      x: 'f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU',
      y: 'x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0',
    };
    // The owner connection: a device row as identity's approval writes it, remote actions already on.
    const id = await platform.owner.transaction(async (tx) => {
      const r = await tx.query<{ id: string }>(
        `INSERT INTO identity.devices (tenant_id, owner_id, name, platform, status, public_jwk, key_thumbprint,
           client_id, enrolled_at, remote_actions_enabled)
         VALUES ($1, $2, $3, 'linux', 'ENROLLED', $4::text::jsonb, $5, 'agentgraph-desktop', now(), true) RETURNING id`,
        [boot.tenantId, boot.userId, `bench device ${i}`, JSON.stringify(jwk), `bench-thumbprint-${i}`],
      );
      return r.rows[0]!.id;
    }, settings);
    const iat = Math.floor(Date.now() / 1000);
    const deviceToken = await new SignJWT({
      tid: boot.tenantId,
      role: 'OWNER',
      scope: 'api:read api:write',
      did: id,
      client_id: 'agentgraph-desktop',
    })
      .setProtectedHeader({ alg: 'ES256', kid, typ: 'at+jwt' })
      .setIssuer(served.tokenIssuer)
      .setAudience(served.tokenAudience)
      .setSubject(boot.userId)
      .setIssuedAt(iat)
      .setExpirationTime(iat + 900)
      .setJti(randomUUID())
      .sign(key!);
    devices.push({ id, token: deviceToken });
  }
}

const servers =
  process.env['BENCH_SUBGRAPH_SERVERS'] === '1'
    ? await startCoordinationServers({ config: served, db: platform.dbs.coordination, log })
    : undefined;

const ready: SubgraphsReady = {
  type: 'ready',
  subgraphUrls,
  platformGatewayUrl: platform.gatewayUrl,
  token,
  tokens,
  tokenIssuer: served.tokenIssuer,
  jwksUrl: served.jwksUrl,
  seed: { rooms: ROOMS, messagesPerRoom: MESSAGES_PER_ROOM, users: 1 },
  servers,
  devices,
};
process.send!(ready);
installMemoryProbe();

process.on('message', (m: { type?: string }) => {
  if (m?.type === 'db-counts')
    process.send!({ type: 'db-counts', ...dbCounts, bySql: { ...dbCounts.bySql } });
});

let stopping = false;
process.on('message', async (m: { type?: string }) => {
  if (m?.type !== 'stop' || stopping) return;
  stopping = true;
  setTimeout(() => process.exit(0), 5_000).unref();
  try {
    for (const s of servers ?? []) await s.close?.();
    await platform.close();
  } finally {
    process.exit(0); // through process.exit so --cpu-prof writes its profile
  }
});
process.once('SIGTERM', () => process.exit(0));

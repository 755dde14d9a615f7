/**
 * Server driver: PostgreSQL through pg. The owner pool runs migrations; the app pool switches every connection
 * to the non-owner role (SET ROLE) so Row-Level Security applies. NOTIFY arrives on one dedicated connection
 * that reconnects with backoff and re-LISTENs.
 */
import pg from 'pg';
import type { Database, DatabaseHandle, NotificationHandler, Queryable, QueryResult } from './types.js';
import { assertChannel, assertSettingNames } from './types.js';
import { serviceRole, type Service } from './service-roles.js';
import { pgTypes } from './pg-types.js';

/**
 * Statements with parameters go as named (prepared) statements: each connection parses and plans a text once, then
 * only binds and executes it (PostgreSQL re-plans by itself when a table or the role changes). The name is fixed per
 * text for the process; past MAX_NAMED distinct texts the rest stay unnamed. Statements without parameters keep the
 * simple protocol (they may hold several statements, e.g. BEGIN with the settings).
 */
const statementNames = new Map<string, string>();
const MAX_NAMED = 2000;

function statementName(sql: string): string | undefined {
  let name = statementNames.get(sql);
  if (name === undefined && statementNames.size < MAX_NAMED) {
    name = `ag_${statementNames.size}`;
    statementNames.set(sql, name);
  }
  return name;
}

function wrap(q: { query: pg.Pool['query'] } | pg.PoolClient): Queryable {
  return {
    async query<Row>(sql: string, params: unknown[] = []): Promise<QueryResult<Row>> {
      const r =
        params.length > 0
          ? await (q as pg.Pool).query({ name: statementName(sql), text: sql, values: params })
          : await (q as pg.Pool).query(sql);
      return { rows: r.rows as Row[], rowCount: r.rowCount ?? r.rows.length };
    },
  };
}

/**
 * How long making a connection (or waiting for a free one in a full pool) may take before the query fails: during
 * an outage a request fails fast with SERVICE_UNAVAILABLE (db/errors.ts) instead of hanging.
 */
export const CONNECT_TIMEOUT_MS = 5_000;

function transactionOn(pool: pg.Pool): Database['transaction'] {
  return async (fn, settings) => {
    const client = await pool.connect();
    // A checked-out client whose connection fails (server stopped, backend terminated) emits 'error'; with no one
    // listening, Node would end the process. The transaction's next query fails instead, and the client is dropped.
    let lost: Error | undefined;
    const onLost = (err: Error) => {
      lost = err;
    };
    client.on('error', onLost);
    try {
      if (settings) {
        // One round trip for BEGIN and the settings: a simple-protocol script, so the values are escaped literals.
        assertSettingNames(settings);
        const sets = Object.entries(settings).map(
          ([n, v]) => `set_config('${n}', ${client.escapeLiteral(v)}, true)`,
        );
        await client.query(`BEGIN; SELECT ${sets.join(', ')}`);
      } else {
        await client.query('BEGIN');
      }
      const result = await fn(wrap(client));
      await client.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.off('error', onLost);
      client.release(lost);
    }
  };
}

class Listener {
  private client: pg.Client | null = null;
  private readonly handlers = new Map<string, Set<NotificationHandler>>();
  private readonly reconnectHandlers = new Map<string, Set<() => void>>();
  private connecting: Promise<pg.Client> | null = null;
  private closed = false;
  private retryMs = 100;

  constructor(
    private readonly url: string,
    /** null when the URL logs in as the app role itself. */
    private readonly role: string | null,
  ) {}

  private async connect(): Promise<pg.Client> {
    if (this.client) return this.client;
    if (this.connecting) return this.connecting;
    this.connecting = (async () => {
      const client = new pg.Client({
        connectionString: this.url,
        connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
        ...(this.role ? { options: `-c role=${this.role}` } : {}),
      });
      client.on('notification', (n) => {
        for (const h of this.handlers.get(n.channel) ?? []) h(n.payload ?? '');
      });
      client.on('error', () => this.lost(client));
      client.on('end', () => this.lost(client));
      await client.connect();
      for (const channel of this.handlers.keys()) await client.query(`LISTEN ${channel}`);
      this.client = client;
      this.retryMs = 100;
      return client;
    })().finally(() => {
      this.connecting = null;
    });
    return this.connecting;
  }

  private lost(client: pg.Client): void {
    if (this.client !== client) return;
    this.client = null;
    if (this.closed) return;
    const retry = () => {
      if (this.closed) return;
      this.connect().then(
        () => {
          for (const set of this.reconnectHandlers.values()) for (const h of set) h();
        },
        () => {
          this.retryMs = Math.min(this.retryMs * 2, 5_000);
          setTimeout(retry, this.retryMs).unref();
        },
      );
    };
    setTimeout(retry, this.retryMs).unref();
  }

  async listen(channel: string, onNotify: NotificationHandler, onReconnect?: () => void) {
    assertChannel(channel);
    let set = this.handlers.get(channel);
    const first = !set;
    if (!set) this.handlers.set(channel, (set = new Set()));
    set.add(onNotify);
    if (onReconnect) {
      if (!this.reconnectHandlers.has(channel)) this.reconnectHandlers.set(channel, new Set());
      this.reconnectHandlers.get(channel)!.add(onReconnect);
    }
    const client = await this.connect();
    if (first) await client.query(`LISTEN ${channel}`);
    return async () => {
      set.delete(onNotify);
      if (onReconnect) this.reconnectHandlers.get(channel)?.delete(onReconnect);
      if (set.size === 0) {
        this.handlers.delete(channel);
        await this.client?.query(`UNLISTEN ${channel}`).catch(() => undefined);
      }
    };
  }

  async close() {
    this.closed = true;
    const c = this.client;
    this.client = null;
    await c?.end().catch(() => undefined);
  }
}

/**
 * The app connections log in as their role when the deployment gives it a login: `DATABASE_APP_URL` (the app role;
 * for a service, the same URL with the service's role as user name) or `DATABASE_<SERVICE>_URL`. Such connections
 * never were the owner, so not even `RESET ROLE` (after a SQL injection, say) can leave the role. Without one
 * (development, tests without logins), they log in as the owner and take the role as a startup parameter.
 */
export interface AppLogins {
  /** DATABASE_APP_URL */
  app: string | null;
  /** DATABASE_<SERVICE>_URL */
  services?: Partial<Record<Service, string>>;
}

function loginFor(logins: AppLogins, role: string, service: Service | undefined): string | null {
  const own = service ? logins.services?.[service] : undefined;
  if (own) return own;
  if (!logins.app) return null;
  if (!service) return logins.app;
  const u = new URL(logins.app);
  u.username = role;
  return u.toString();
}

/**
 * A login of a role must be that role and unable to become anything more: not a superuser, no BYPASSRLS, and a
 * member of no role but the app role (whose shared grants the subgraph roles inherit).
 */
async function assertOwnLogin(pool: pg.Pool, role: string, appRole: string, variable: string): Promise<void> {
  const r = await pool.query<{ session_user: string; super: boolean; bypass: boolean; escalates: boolean }>(
    `SELECT session_user::text AS session_user, r.rolsuper AS super, r.rolbypassrls AS bypass,
            EXISTS (SELECT 1 FROM pg_auth_members m JOIN pg_roles g ON g.oid = m.roleid
                     WHERE m.member = r.oid AND (g.rolname <> $1 OR g.rolsuper OR g.rolbypassrls
                        OR EXISTS (SELECT 1 FROM pg_auth_members m2 WHERE m2.member = g.oid))) AS escalates
       FROM pg_roles r WHERE r.rolname = session_user`,
    [appRole],
  );
  const row = r.rows[0];
  if (!row || row.session_user !== role) {
    throw new Error(
      `${variable} logs in as "${row?.session_user ?? '?'}", not as the role "${role}". ` +
        `Point it at a login of ${role} (ALTER ROLE ${role} LOGIN PASSWORD '…').`,
    );
  }
  if (row.super || row.bypass || row.escalates) {
    throw new Error(
      `The role "${role}" is a superuser, bypasses RLS or is a member of a role other than ${appRole}; ` +
        'it must be a plain login that owns nothing.',
    );
  }
}

/** The app pools' size and how long an idle connection stays open (DATABASE_POOL_SIZE, DATABASE_POOL_IDLE_SECONDS). */
export interface PoolOptions {
  size: number;
  idleSeconds: number;
}

export async function openPostgres(
  url: string,
  poolOptions: PoolOptions,
  appRole: string,
  logins: AppLogins = { app: null },
): Promise<DatabaseHandle> {
  const ownerPool = new pg.Pool({
    connectionString: url,
    max: 2,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    types: pgTypes,
  });
  ownerPool.on('error', () => undefined);
  const opened = new Map<string, Promise<{ db: Database; close(): Promise<void> }>>();
  const open = async (service: Service | undefined) => {
    const role = service ? serviceRole(appRole, service) : appRole;
    const login = loginFor(logins, role, service);
    // The role is a startup parameter: a connection that cannot take it fails instead of running as owner.
    const sizing = {
      max: poolOptions.size,
      idleTimeoutMillis: poolOptions.idleSeconds * 1000,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      types: pgTypes,
    };
    const pool = login
      ? new pg.Pool({ connectionString: login, ...sizing })
      : new pg.Pool({ connectionString: url, options: `-c role=${role}`, ...sizing });
    pool.on('error', () => undefined);
    const listener = new Listener(login ?? url, login ? null : role);
    const close = async () => {
      await listener.close();
      await pool.end().catch(() => undefined);
    };
    try {
      if (login) {
        const variable =
          service && logins.services?.[service]
            ? `DATABASE_${service.toUpperCase()}_URL`
            : 'DATABASE_APP_URL';
        await assertOwnLogin(pool, role, appRole, variable);
      }
    } catch (err) {
      await close();
      throw err;
    }
    const db: Database = {
      driver: 'postgres',
      ...wrap(pool),
      transaction: transactionOn(pool),
      listen: (c, h, r) => listener.listen(c, h, r),
      async ping() {
        await pool.query('select 1');
      },
      poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
      close,
    };
    return { db, close };
  };
  return {
    owner: { ...wrap(ownerPool), transaction: transactionOn(ownerPool) },
    async app(service) {
      const key = service ?? '';
      let entry = opened.get(key);
      if (!entry) {
        entry = open(service);
        opened.set(key, entry);
        entry.catch(() => opened.delete(key));
      }
      return (await entry).db;
    },
    async close() {
      const all = [...opened.values()];
      opened.clear();
      for (const e of all) await e.then((x) => x.close()).catch(() => undefined);
      await ownerPool.end().catch(() => undefined);
    },
  };
}

/** The database contract both drivers (PGlite in-process, PostgreSQL through pg) implement with the same SQL. */
import type { Service } from './service-roles.js';

export interface QueryResult<Row> {
  rows: Row[];
  rowCount: number;
}

export interface Queryable {
  query<Row = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<QueryResult<Row>>;
}

/** Names like `app.tenant_id` (checked), values any text. */
export type TransactionSettings = Readonly<Record<string, string>>;

export const SETTING_NAME = /^[a-z_]+\.[a-z_]+$/;

export function assertSettingNames(settings: TransactionSettings): void {
  for (const name of Object.keys(settings)) {
    if (!SETTING_NAME.test(name)) throw new Error(`Invalid transaction setting name: ${name}`);
  }
}

export type NotificationHandler = (payload: string) => void;

export interface Database extends Queryable {
  readonly driver: 'pglite' | 'postgres';
  /**
   * Runs fn in one transaction (READ COMMITTED); commits if it resolves, rolls back if it throws. `settings` are
   * transaction-local configuration values (set_config(name, value, true)) in force before fn runs; the server
   * driver sends them with BEGIN in one round trip.
   */
  transaction<T>(fn: (tx: Queryable) => Promise<T>, settings?: TransactionSettings): Promise<T>;
  /**
   * Subscribes to NOTIFY on a channel. `onReconnect` runs after a lost listener connection is back, so callers
   * can re-read what they may have missed. Resolves to an unsubscribe function.
   */
  listen(
    channel: string,
    onNotify: NotificationHandler,
    onReconnect?: () => void,
  ): Promise<() => Promise<void>>;
  /** Cheap round trip for readiness checks. */
  ping(): Promise<void>;
  /** The connection pool's use now (PostgreSQL; PGlite has one connection and no pool). */
  poolStats?(): { total: number; idle: number; waiting: number };
  close(): Promise<void>;
}

/** The owner connection migrations run on; the app then works as the non-owner roles. */
export interface DatabaseHandle {
  /** Owner privileges: migrations only. */
  owner: Queryable & { transaction: Database['transaction'] };
  /**
   * The connections of one service, as that service's own role (`service-roles.ts`), or without a service as the
   * shared app role (the runtime's own tables only). Call after migrations; one `Database` per role, reused.
   */
  app(service?: Service): Promise<Database>;
  close(): Promise<void>;
}

export const CHANNEL_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

export function assertChannel(channel: string): void {
  if (!CHANNEL_NAME.test(channel)) throw new Error(`Invalid NOTIFY channel name: ${channel}`);
}

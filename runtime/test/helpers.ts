/**
 * Test helpers for the runtime: real databases only. PGlite (in memory) always; PostgreSQL too when
 * DATABASE_URL is set (a fresh database on that server per call, dropped by close()).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { provisionTestDatabase } from '../../test/src/database.js';
import { loadConfig, type Config } from '../src/config.js';
import type { MigrationSet } from '../src/db/migrate.js';
import { openDatabase, openHandle } from '../src/db/open.js';
import type { Service } from '../src/db/service-roles.js';
import type { Database, DatabaseHandle } from '../src/db/types.js';
import { AppError, type ErrorCode } from '../src/errors.js';

export type Driver = 'pglite' | 'postgres';

/** The drivers to run database tests on: PGlite always, PostgreSQL when DATABASE_URL is set. */
export const drivers: Driver[] = process.env['DATABASE_URL'] ? ['pglite', 'postgres'] : ['pglite'];

function envFor(driver: Driver): NodeJS.ProcessEnv {
  return driver === 'pglite' ? {} : { DATABASE_URL: process.env['DATABASE_URL'] };
}

export interface TestDb {
  db: Database;
  handle: DatabaseHandle;
  config: Config;
  close(): Promise<void>;
}

/** A fresh database with the runtime's migrations (and `sets`) applied, as the app role or `service`'s role. */
export async function openTestDatabase(
  driver: Driver,
  sets: MigrationSet[] = [],
  service?: Service,
): Promise<TestDb> {
  const t = await provisionTestDatabase(envFor(driver));
  const config = loadConfig(t.env);
  const { db, handle } = await openDatabase(config, sets, service);
  return {
    db,
    handle,
    config,
    async close() {
      await handle.close();
      await t.drop();
    },
  };
}

/** A fresh database with nothing applied, as owner (for the migrations runner). */
export async function openBareDatabase(
  driver: Driver,
): Promise<{ handle: DatabaseHandle; config: Config; close(): Promise<void> }> {
  const t = await provisionTestDatabase(envFor(driver));
  const config = loadConfig(t.env);
  const handle = await openHandle(config);
  return {
    handle,
    config,
    async close() {
      await handle.close();
      await t.drop();
    },
  };
}

/** A temporary folder of migration files; `write` adds or changes one. */
export function migrationDir(files: Record<string, string> = {}): {
  dir: string;
  write(name: string, sql: string): void;
  remove(): void;
} {
  const dir = mkdtempSync(join(tmpdir(), 'agentgraph-migrations-'));
  const write = (name: string, sql: string) => writeFileSync(join(dir, name), sql);
  for (const [name, sql] of Object.entries(files)) write(name, sql);
  return { dir, write, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Awaits `p` and asserts it rejects with an AppError of `code`; returns the error. */
export async function expectAppError(
  p: Promise<unknown> | (() => unknown),
  code: ErrorCode,
): Promise<AppError> {
  let error: unknown;
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (err) {
    error = err;
  }
  expect(error, `expected ${code}`).toBeInstanceOf(AppError);
  expect((error as AppError).code).toBe(code);
  expect((error as AppError).extensions['code']).toBe(code);
  return error as AppError;
}

/** A promise with its resolve function, for ordering concurrent work without sleeps. */
export function deferred<T = void>(): { promise: Promise<T>; resolve(value: T): void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

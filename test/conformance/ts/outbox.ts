/**
 * Executor of `outbox` vectors: the durable outbox on its SQLite store, driven step by step with the fake clock
 * and a scripted send function.
 *
 * Fields (besides the common envelope):
 * - `config` — `idempotencyKeys` (what the key factory returns, in order; making more is a failure), `concurrency`
 *   (rooms sending at once, default 4), `ttlMs` (default 604 800 000 = 7 days), `retry` {`baseDelayMs`,
 *   `maxDelayMs`} of the delay between whole sends: base · 2^(attempt−1) capped at max, at least the error's
 *   `retryAfterMs` (defaults 1 000 and 300 000), `keyRetentionMs` (unset: only the TTL), `maxFailedDeliveries`
 *   (failed deliveries, INTERNAL_SERVER_ERROR or HTTP 500, after which an entry goes to POISON; default 3).
 * - `outcomes` — per idempotency key, what its sends do, in order (after the list: `ok`): `"ok"` (resolves),
 *   `"hang"` (never settles: the process is busy sending when it dies) or `{ "error": { code, retryable,
 *   retryAfterMs?, status? } }` (rejects with that SDK error).
 * - `steps`, in order: `{ "enqueue": { room, operation, variables? } }`; `{ "drain": true }` (send until nothing is
 *   pending, waiting on the fake clock for retries); `{ "runUntilHung": n }` (send until n sends hang, then stop
 *   waiting); `{ "crash": true }` (the process dies: hanging sends never settle, nothing more is written; the outbox
 *   is opened again on the same file, which runs crash recovery); `{ "advance": ms }` (move the clock);
 *   `{ "check": { … } }` (compare the state now, same fields as `expect` without `sends`).
 * - `expect` — `sends`: every send as { room, key, at } (`at` = fake ms since the start); compared room by room, in
 *   order, with exact times (the order across rooms is not pinned except through `at`). `entries`: every entry in
 *   enqueue order as { key, room, state, attempts, failedDeliveries?, lastError?: { code } | null, operation?,
 *   variables? } (optional fields are compared when present).
 *   `recovered`: SENDING entries put back to QUEUED by the last open. `deadLetters`: keys of POISON and EXPIRED
 *   entries in enqueue order.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AgentGraphError } from '../../../sdk-templates/typescript/src/errors.js';
import {
  Outbox,
  exponentialOutboxDelay,
  type OutboxEntry,
} from '../../../sdk-templates/typescript/src/outbox/index.js';
import { SqliteOutboxStore } from '../../../sdk-templates/typescript/src/outbox/index.node.js';
import type { Executor, ExecutorContext, VectorEnvelope } from './executor.js';
import { jsonEqual } from './match.js';
import { fail } from './sdk-harness.js';

type Outcome =
  'ok' | 'hang' | { error: { code: string; retryable: boolean; retryAfterMs?: number; status?: number } };

interface ExpectedEntry {
  key: string;
  room: string;
  state: string;
  attempts: number;
  failedDeliveries?: number;
  lastError?: { code: string } | null;
  operation?: string;
  variables?: Record<string, unknown>;
}

interface StateCheck {
  entries?: ExpectedEntry[];
  recovered?: number;
  deadLetters?: string[];
}

type Step =
  | { enqueue: { room: string; operation: string; variables?: Record<string, unknown> } }
  | { drain: true }
  | { runUntilHung: number }
  | { crash: true }
  | { advance: number }
  | { check: StateCheck };

export interface OutboxVector extends VectorEnvelope {
  config: {
    idempotencyKeys: string[];
    concurrency?: number;
    ttlMs?: number;
    retry?: { baseDelayMs?: number; maxDelayMs?: number };
    keyRetentionMs?: number;
    maxFailedDeliveries?: number;
  };
  outcomes?: Record<string, Outcome[]>;
  steps: Step[];
  expect: StateCheck & { sends: Array<{ room: string; key: string; at: number }> };
}

const errorOutcome = {
  type: 'object',
  properties: {
    error: {
      type: 'object',
      properties: {
        code: { type: 'string', minLength: 1 },
        retryable: { type: 'boolean' },
        retryAfterMs: { type: 'number', minimum: 0 },
        status: { type: 'integer' },
      },
      required: ['code', 'retryable'],
      additionalProperties: false,
    },
  },
  required: ['error'],
  additionalProperties: false,
};

const entrySchema = {
  type: 'object',
  properties: {
    key: { type: 'string' },
    room: { type: 'string' },
    state: { enum: ['QUEUED', 'SENDING', 'RETRYABLE', 'SENT', 'POISON', 'EXPIRED'] },
    attempts: { type: 'integer', minimum: 0 },
    failedDeliveries: { type: 'integer', minimum: 0 },
    lastError: {
      anyOf: [
        { type: 'null' },
        {
          type: 'object',
          properties: { code: { type: 'string' } },
          required: ['code'],
          additionalProperties: false,
        },
      ],
    },
    operation: { type: 'string' },
    variables: { type: 'object' },
  },
  required: ['key', 'room', 'state', 'attempts'],
  additionalProperties: false,
};

const checkSchema = {
  type: 'object',
  properties: {
    entries: { type: 'array', items: entrySchema },
    recovered: { type: 'integer', minimum: 0 },
    deadLetters: { type: 'array', items: { type: 'string' } },
  },
  additionalProperties: false,
};

/** JSON Schema of the outbox-specific fields (the runner applies it with the envelope's). */
export const schema = {
  type: 'object',
  properties: {
    $schema: { type: 'string' },
    id: { type: 'string' },
    kind: { const: 'outbox' },
    description: { type: 'string' },
    comment: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }] },
    clock: { type: 'object' },
    random: { type: 'array', maxItems: 0 },
    config: {
      type: 'object',
      properties: {
        idempotencyKeys: { type: 'array', items: { type: 'string', minLength: 1 } },
        concurrency: { type: 'integer', minimum: 1 },
        ttlMs: { type: 'integer', minimum: 1 },
        retry: {
          type: 'object',
          properties: {
            baseDelayMs: { type: 'integer', minimum: 0 },
            maxDelayMs: { type: 'integer', minimum: 0 },
          },
          additionalProperties: false,
        },
        keyRetentionMs: { type: 'integer', minimum: 1 },
        maxFailedDeliveries: { type: 'integer', minimum: 1 },
      },
      required: ['idempotencyKeys'],
      additionalProperties: false,
    },
    outcomes: {
      type: 'object',
      additionalProperties: { type: 'array', items: { anyOf: [{ enum: ['ok', 'hang'] }, errorOutcome] } },
    },
    steps: {
      type: 'array',
      minItems: 1,
      items: {
        anyOf: [
          {
            type: 'object',
            properties: {
              enqueue: {
                type: 'object',
                properties: {
                  room: { type: 'string', minLength: 1 },
                  operation: { type: 'string', minLength: 1 },
                  variables: { type: 'object' },
                },
                required: ['room', 'operation'],
                additionalProperties: false,
              },
            },
            required: ['enqueue'],
            additionalProperties: false,
          },
          {
            type: 'object',
            properties: { drain: { const: true } },
            required: ['drain'],
            additionalProperties: false,
          },
          {
            type: 'object',
            properties: { runUntilHung: { type: 'integer', minimum: 1 } },
            required: ['runUntilHung'],
            additionalProperties: false,
          },
          {
            type: 'object',
            properties: { crash: { const: true } },
            required: ['crash'],
            additionalProperties: false,
          },
          {
            type: 'object',
            properties: { advance: { type: 'integer', minimum: 0 } },
            required: ['advance'],
            additionalProperties: false,
          },
          {
            type: 'object',
            properties: { check: checkSchema },
            required: ['check'],
            additionalProperties: false,
          },
        ],
      },
    },
    expect: {
      type: 'object',
      properties: {
        ...checkSchema.properties,
        sends: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              room: { type: 'string' },
              key: { type: 'string' },
              at: { type: 'number', minimum: 0 },
            },
            required: ['room', 'key', 'at'],
            additionalProperties: false,
          },
        },
      },
      required: ['sends', 'entries'],
      additionalProperties: false,
    },
  },
  required: ['id', 'kind', 'description', 'config', 'steps', 'expect'],
  additionalProperties: false,
};

/** Yields to the event loop until `condition` holds; false after `turns` turns (no timers involved). */
async function settle(condition: () => boolean, turns = 5000): Promise<boolean> {
  for (let i = 0; i < turns; i++) {
    if (condition()) return true;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  return condition();
}

function stateProblems(where: string, want: StateCheck, entries: OutboxEntry[], recovered: number): string[] {
  const problems: string[] = [];
  if (want.entries) {
    const got = entries.map((e) => {
      const item: ExpectedEntry = {
        key: e.idempotencyKey,
        room: e.room,
        state: e.state,
        attempts: e.attempts,
        failedDeliveries: e.failedDeliveries,
        lastError: e.lastError ? { code: e.lastError.code } : null,
      };
      return item;
    });
    const same =
      got.length === want.entries.length &&
      want.entries.every((w, i) => {
        const g = got[i]!;
        const e = entries[i]!;
        return (
          w.key === g.key &&
          w.room === g.room &&
          w.state === g.state &&
          w.attempts === g.attempts &&
          (w.failedDeliveries === undefined || w.failedDeliveries === g.failedDeliveries) &&
          (w.lastError === undefined || jsonEqual(w.lastError, g.lastError)) &&
          (w.operation === undefined || w.operation === e.operation) &&
          (w.variables === undefined || jsonEqual(w.variables, e.variables))
        );
      });
    if (!same)
      problems.push(`${where} entries: expected ${JSON.stringify(want.entries)}, got ${JSON.stringify(got)}`);
  }
  if (want.recovered !== undefined && want.recovered !== recovered) {
    problems.push(`${where} recovered: expected ${want.recovered}, got ${recovered}`);
  }
  if (want.deadLetters) {
    const dead = entries
      .filter((e) => e.state === 'POISON' || e.state === 'EXPIRED')
      .map((e) => e.idempotencyKey);
    if (!jsonEqual(want.deadLetters, dead)) {
      problems.push(
        `${where} deadLetters: expected ${JSON.stringify(want.deadLetters)}, got ${JSON.stringify(dead)}`,
      );
    }
  }
  return problems;
}

async function run(vector: OutboxVector, ctx: ExecutorContext): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'conformance-outbox-'));
  const file = join(dir, 'outbox.db');
  const start = ctx.clock.now();
  const problems: string[] = [];
  const keys = [...vector.config.idempotencyKeys];
  const outcomes = new Map(Object.entries(vector.outcomes ?? {}).map(([k, list]) => [k, [...list]]));
  const sends: Array<{ room: string; key: string; at: number }> = [];
  let hung = 0;
  let ids = 0;
  let keysMade = 0;

  const send = async (entry: OutboxEntry): Promise<unknown> => {
    sends.push({ room: entry.room, key: entry.idempotencyKey, at: ctx.clock.now() - start });
    const outcome = outcomes.get(entry.idempotencyKey)?.shift() ?? 'ok';
    if (outcome === 'ok') return { ok: true };
    if (outcome === 'hang') {
      hung++;
      return new Promise(() => undefined);
    }
    throw new AgentGraphError({
      code: outcome.error.code,
      message: `${outcome.error.code} (scripted)`,
      retryable: outcome.error.retryable,
      ...(outcome.error.retryAfterMs === undefined ? {} : { retryAfterMs: outcome.error.retryAfterMs }),
      ...(outcome.error.status === undefined ? {} : { status: outcome.error.status }),
    });
  };

  const openOutbox = async () => {
    const store = SqliteOutboxStore.open(file);
    const outbox = await Outbox.open({
      store,
      send,
      clock: ctx.clock,
      concurrency: vector.config.concurrency,
      ttlMs: vector.config.ttlMs,
      keyRetentionMs: vector.config.keyRetentionMs,
      maxFailedDeliveries: vector.config.maxFailedDeliveries,
      delayFor: exponentialOutboxDelay({
        baseMs: vector.config.retry?.baseDelayMs,
        maxMs: vector.config.retry?.maxDelayMs,
      }),
      newId: () => `entry-${++ids}`,
      newKey: () => {
        keysMade++;
        const key = keys.shift();
        if (key === undefined) {
          problems.push(`the outbox made idempotency key #${keysMade}, the vector lists fewer`);
          return `unlisted-key-${keysMade}`;
        }
        return key;
      },
    });
    return { store, outbox };
  };

  let { store, outbox } = await openOutbox();
  let running: Promise<void> | null = null;
  try {
    for (const [index, step] of vector.steps.entries()) {
      const where = `step ${index + 1}`;
      if ('enqueue' in step) {
        await outbox.enqueue(step.enqueue);
      } else if ('drain' in step) {
        await outbox.drain();
      } else if ('runUntilHung' in step) {
        running = outbox.drain();
        running.catch(() => undefined);
        if (!(await settle(() => hung >= step.runUntilHung))) {
          problems.push(`${where}: expected ${step.runUntilHung} hanging sends, got ${hung}`);
          break;
        }
      } else if ('crash' in step) {
        await store.close(); // the process is gone: its hanging sends never settle, nothing more is written
        running = null;
        hung = 0;
        ({ store, outbox } = await openOutbox());
      } else if ('advance' in step) {
        ctx.clock.advance(step.advance);
      } else {
        problems.push(...stateProblems(where, step.check, await outbox.list(), outbox.counters().recovered));
      }
    }
    const { sends: wantSends, ...finalState } = vector.expect;
    problems.push(...stateProblems('expect', finalState, await outbox.list(), outbox.counters().recovered));
    const rooms = new Set([...wantSends, ...sends].map((s) => s.room));
    for (const room of rooms) {
      const want = wantSends.filter((s) => s.room === room).map(({ key, at }) => ({ key, at }));
      const got = sends.filter((s) => s.room === room).map(({ key, at }) => ({ key, at }));
      if (!jsonEqual(want, got)) {
        problems.push(`sends of room ${room}: expected ${JSON.stringify(want)}, got ${JSON.stringify(got)}`);
      }
    }
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
  fail(ctx.file, problems);
}

export const executor: Executor<OutboxVector> = { kind: 'outbox', run };

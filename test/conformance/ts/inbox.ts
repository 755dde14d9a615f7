/**
 * Executor of `inbox` vectors: the inbox on its SQLite store, driven step by step with the fake clock.
 *
 * Fields (besides the common envelope):
 * - `config` — `leaseMs` (default 60 000), `maxAttempts` (default 3), `retryDelayMs` (a failed message may be
 *   leased again this long after the failure; default 0).
 * - `steps`, in order, each checked when it says `expect`:
 *   `{ "receive": { stream, id, seq?, cursor?, payload }, "expect": "accepted" | "duplicate" }`;
 *   `{ "lease": { stream? }, "as": "<label>", "expect": null | { stream, id, attempt, leaseUntil } }` (null: nothing
 *   to lease; the lease is remembered under the label);
 *   `{ "complete": "<label>", "expect": <acknowledgement> | { "error": "LEASE_LOST" } }`;
 *   `{ "fail": "<label>", "error": { code, message }, "expect": { "outcome": "RETRY", attempts, availableAt } |
 *   { "outcome": "QUARANTINED", "acknowledgement": <acknowledgement> } | { "error": "LEASE_LOST" } }`;
 *   `{ "acknowledged": { stream, id } }` (the app delivered that acknowledgement to the server);
 *   `{ "advance": ms }`; `{ "restart": true }` (close the storage and open it again);
 *   `{ "check": { … } }` (same fields as `expect`).
 * - An acknowledgement is `{ stream, id, seq, outcome: PROCESSED | QUARANTINED, error?: { code, message }, at }`.
 *   All times (`leaseUntil`, `availableAt`, `at`) are fake milliseconds since the start.
 * - `expect` — `messages` (every stored message in receive order: { stream, id, state, attempts,
 *   lastError?: { code } | null }), `cursors` ({ stream: cursor or null }), `pendingAcknowledgements` (in order).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Inbox,
  LeaseLostError,
  type Acknowledgement,
  type IncomingMessage,
  type Lease,
} from '../../../sdk-templates/typescript/src/inbox/index.js';
import { SqliteInboxStore } from '../../../sdk-templates/typescript/src/inbox/index.node.js';
import type { Executor, ExecutorContext, VectorEnvelope } from './executor.js';
import { jsonEqual } from './match.js';
import { fail } from './sdk-harness.js';

interface ExpectedMessage {
  stream: string;
  id: string;
  state: string;
  attempts: number;
  lastError?: { code: string } | null;
}

interface InboxCheck {
  messages?: ExpectedMessage[];
  cursors?: Record<string, string | null>;
  pendingAcknowledgements?: Acknowledgement[];
}

type Step =
  | { receive: IncomingMessage; expect: 'accepted' | 'duplicate' }
  | { lease: { stream?: string }; as?: string; expect: null | Record<string, unknown> }
  | { complete: string; expect: Record<string, unknown> }
  | { fail: string; error: { code: string; message: string }; expect: Record<string, unknown> }
  | { acknowledged: { stream: string; id: string } }
  | { advance: number }
  | { restart: true }
  | { check: InboxCheck };

export interface InboxVector extends VectorEnvelope {
  config?: { leaseMs?: number; maxAttempts?: number; retryDelayMs?: number };
  steps: Step[];
  expect: InboxCheck;
}

const errorInfo = {
  type: 'object',
  properties: { code: { type: 'string' }, message: { type: 'string' } },
  required: ['code', 'message'],
  additionalProperties: false,
};
const acknowledgement = {
  type: 'object',
  properties: {
    stream: { type: 'string' },
    id: { type: 'string' },
    seq: { type: ['integer', 'null'] },
    outcome: { enum: ['PROCESSED', 'QUARANTINED'] },
    error: errorInfo,
    at: { type: 'number' },
  },
  required: ['stream', 'id', 'seq', 'outcome', 'at'],
  additionalProperties: false,
};
const leaseLost = {
  type: 'object',
  properties: { error: { const: 'LEASE_LOST' } },
  required: ['error'],
  additionalProperties: false,
};
const check = {
  type: 'object',
  properties: {
    messages: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          stream: { type: 'string' },
          id: { type: 'string' },
          state: { enum: ['AVAILABLE', 'LEASED', 'PROCESSED', 'QUARANTINED'] },
          attempts: { type: 'integer', minimum: 0 },
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
        },
        required: ['stream', 'id', 'state', 'attempts'],
        additionalProperties: false,
      },
    },
    cursors: { type: 'object', additionalProperties: { type: ['string', 'null'] } },
    pendingAcknowledgements: { type: 'array', items: acknowledgement },
  },
  additionalProperties: false,
};
const step = (properties: Record<string, unknown>, required: string[]) => ({
  type: 'object',
  properties,
  required,
  additionalProperties: false,
});

/** JSON Schema of the inbox-specific fields. */
export const schema = {
  type: 'object',
  properties: {
    $schema: { type: 'string' },
    id: { type: 'string' },
    kind: { const: 'inbox' },
    description: { type: 'string' },
    comment: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }] },
    clock: { type: 'object' },
    random: { type: 'array', maxItems: 0 },
    config: step(
      {
        leaseMs: { type: 'integer', minimum: 1 },
        maxAttempts: { type: 'integer', minimum: 1 },
        retryDelayMs: { type: 'integer', minimum: 0 },
      },
      [],
    ),
    steps: {
      type: 'array',
      minItems: 1,
      items: {
        anyOf: [
          step(
            {
              receive: step(
                {
                  stream: { type: 'string', minLength: 1 },
                  id: { type: 'string', minLength: 1 },
                  seq: { type: 'integer', minimum: 0 },
                  cursor: { type: 'string' },
                  payload: {},
                },
                ['stream', 'id', 'payload'],
              ),
              expect: { enum: ['accepted', 'duplicate'] },
            },
            ['receive', 'expect'],
          ),
          step(
            {
              lease: step({ stream: { type: 'string' } }, []),
              as: { type: 'string' },
              expect: {
                anyOf: [
                  { type: 'null' },
                  step(
                    {
                      stream: { type: 'string' },
                      id: { type: 'string' },
                      attempt: { type: 'integer', minimum: 1 },
                      leaseUntil: { type: 'number' },
                    },
                    ['stream', 'id', 'attempt', 'leaseUntil'],
                  ),
                ],
              },
            },
            ['lease', 'expect'],
          ),
          step({ complete: { type: 'string' }, expect: { anyOf: [acknowledgement, leaseLost] } }, [
            'complete',
            'expect',
          ]),
          step(
            {
              fail: { type: 'string' },
              error: errorInfo,
              expect: {
                anyOf: [
                  step(
                    {
                      outcome: { const: 'RETRY' },
                      attempts: { type: 'integer', minimum: 1 },
                      availableAt: { type: 'number' },
                    },
                    ['outcome', 'attempts', 'availableAt'],
                  ),
                  step({ outcome: { const: 'QUARANTINED' }, acknowledgement }, [
                    'outcome',
                    'acknowledgement',
                  ]),
                  leaseLost,
                ],
              },
            },
            ['fail', 'error', 'expect'],
          ),
          step(
            {
              acknowledged: step({ stream: { type: 'string' }, id: { type: 'string' } }, ['stream', 'id']),
            },
            ['acknowledged'],
          ),
          step({ advance: { type: 'integer', minimum: 0 } }, ['advance']),
          step({ restart: { const: true } }, ['restart']),
          step({ check }, ['check']),
        ],
      },
    },
    expect: check,
  },
  required: ['id', 'kind', 'description', 'steps', 'expect'],
  additionalProperties: false,
};

async function run(vector: InboxVector, ctx: ExecutorContext): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'conformance-inbox-'));
  const file = join(dir, 'inbox.db');
  const start = ctx.clock.now();
  const rel = (ms: number) => ms - start;
  const relAck = (ack: Acknowledgement) => ({ ...ack, at: rel(ack.at) });
  const problems: string[] = [];
  const leases = new Map<string, Lease>();
  let tokens = 0;
  const open = () =>
    new Inbox({
      store: SqliteInboxStore.open(file),
      clock: ctx.clock,
      leaseMs: vector.config?.leaseMs,
      maxAttempts: vector.config?.maxAttempts,
      retryDelayMs: () => vector.config?.retryDelayMs ?? 0,
      newToken: () => `lease-${++tokens}`,
    });
  let inbox = open();

  const compare = (where: string, want: unknown, got: unknown) => {
    if (!jsonEqual(want, got))
      problems.push(`${where}: expected ${JSON.stringify(want)}, got ${JSON.stringify(got)}`);
  };
  const settle = async (label: string, action: (lease: Lease) => Promise<unknown>): Promise<unknown> => {
    const lease = leases.get(label);
    if (!lease) throw new Error(`${ctx.file}: no lease labelled "${label}"`);
    try {
      return await action(lease);
    } catch (error) {
      if (error instanceof LeaseLostError) return { error: 'LEASE_LOST' };
      throw error;
    }
  };
  const checkState = async (where: string, want: InboxCheck) => {
    if (want.messages) {
      const got = (await inbox.list()).map((m) => ({
        stream: m.stream,
        id: m.id,
        state: m.state,
        attempts: m.attempts,
        lastError: m.lastError ? { code: m.lastError.code } : null,
      }));
      const wantFull = want.messages.map((m) => ({ lastError: null, ...m }));
      compare(`${where} messages`, wantFull, got);
    }
    if (want.cursors) {
      for (const [stream, cursor] of Object.entries(want.cursors)) {
        compare(`${where} cursor of ${stream}`, cursor, await inbox.cursor(stream));
      }
    }
    if (want.pendingAcknowledgements) {
      compare(
        `${where} pendingAcknowledgements`,
        want.pendingAcknowledgements,
        (await inbox.pendingAcknowledgements()).map(relAck),
      );
    }
  };

  try {
    for (const [index, s] of vector.steps.entries()) {
      const where = `step ${index + 1}`;
      if ('receive' in s) {
        compare(where, s.expect, await inbox.receive(s.receive));
      } else if ('lease' in s) {
        const lease = await inbox.lease(s.lease);
        if (lease && s.as) leases.set(s.as, lease);
        compare(
          where,
          s.expect,
          lease && {
            stream: lease.stream,
            id: lease.id,
            attempt: lease.attempt,
            leaseUntil: rel(lease.leaseUntil),
          },
        );
      } else if ('complete' in s) {
        const got = await settle(s.complete, async (lease) => relAck(await inbox.complete(lease)));
        compare(where, s.expect, got);
      } else if ('fail' in s) {
        const got = await settle(s.fail, async (lease) => {
          const error = Object.assign(new Error(s.error.message), { code: s.error.code });
          const result = await inbox.fail(lease, error);
          return result.outcome === 'RETRY'
            ? { ...result, availableAt: rel(result.availableAt) }
            : { ...result, acknowledgement: relAck(result.acknowledgement) };
        });
        compare(where, s.expect, got);
      } else if ('acknowledged' in s) {
        await inbox.acknowledged(s.acknowledged);
      } else if ('advance' in s) {
        ctx.clock.advance(s.advance);
      } else if ('restart' in s) {
        await inbox.close();
        inbox = open();
      } else {
        await checkState(where, s.check);
      }
    }
    await checkState('expect', vector.expect);
  } finally {
    await inbox.close();
    rmSync(dir, { recursive: true, force: true });
  }
  fail(ctx.file, problems);
}

export const executor: Executor<InboxVector> = { kind: 'inbox', run };

/** Executor of `call` vectors (and, with the same fields, `privacy` vectors): one logical execute() call. */
import type { OperationSpec } from '../../../sdk-templates/typescript/src/index.js';
import type { Executor, ExecutorContext, VectorEnvelope } from './executor.js';
import { ELAPSED_TOLERANCE_MS, jsonEqual, sleepsProblems } from './match.js';
import type { Exchange } from './scripted-transport.js';
import {
  buildHarness,
  describeThrown,
  errorProblems,
  type ExpectedError,
  fail,
  operationOf,
  type VectorConfig,
} from './sdk-harness.js';

export interface CallVector extends VectorEnvelope {
  config?: VectorConfig;
  operation: OperationSpec;
  variables?: Record<string, unknown>;
  callOptions?: { idempotencyKey?: string };
  exchanges: Exchange[];
  expect: {
    sleeps: number[];
    randomConsumed?: number;
    keysMade?: number;
    tokenRefreshes?: number;
    elapsedMs?: number;
    outcome:
      | { data: unknown; replayed?: boolean; attempts?: number; idempotencyKey?: string; error?: undefined }
      | { error: ExpectedError };
  };
}

export async function runCall(vector: CallVector, ctx: ExecutorContext): Promise<void> {
  const start = ctx.clock.now();
  const h = buildHarness(vector.config, vector.exchanges, ctx);
  const problems: string[] = [];
  const { outcome } = vector.expect;
  try {
    const result = await h.client.execute(
      operationOf(vector.operation),
      vector.variables ?? {},
      vector.callOptions ?? {},
    );
    if (outcome.error) {
      problems.push(`expected error ${outcome.error.code}, but the call succeeded`);
    } else {
      if (!jsonEqual(outcome.data, result.data)) {
        problems.push(`data: expected ${JSON.stringify(outcome.data)}, got ${JSON.stringify(result.data)}`);
      }
      if (outcome.replayed !== undefined && outcome.replayed !== result.replayed) {
        problems.push(`replayed: expected ${outcome.replayed}, got ${result.replayed}`);
      }
      if (outcome.attempts !== undefined && outcome.attempts !== result.attempts) {
        problems.push(`attempts: expected ${outcome.attempts}, got ${result.attempts}`);
      }
      if (outcome.idempotencyKey !== undefined && outcome.idempotencyKey !== result.idempotencyKey) {
        problems.push(`idempotencyKey: expected ${outcome.idempotencyKey}, got ${result.idempotencyKey}`);
      }
    }
  } catch (err) {
    if (outcome.error) problems.push(...errorProblems(outcome.error, err));
    else problems.push(`expected success, got ${describeThrown(err)}`);
  }
  problems.push(
    ...h.transport.finalProblems(),
    ...h.problems,
    ...sleepsProblems(vector.expect.sleeps, ctx.clock.sleeps),
  );
  const counts: [string, number | undefined, number][] = [
    ['randomConsumed', vector.expect.randomConsumed, ctx.random.consumed],
    ['keysMade', vector.expect.keysMade, h.counters.keysMade],
    ['tokenRefreshes', vector.expect.tokenRefreshes, h.counters.tokenRefreshes],
  ];
  for (const [name, want, got] of counts) {
    if (want !== undefined && want !== got) problems.push(`${name}: expected ${want}, got ${got}`);
  }
  const elapsed = ctx.clock.now() - start;
  const wantElapsed = vector.expect.elapsedMs;
  if (wantElapsed !== undefined && Math.abs(elapsed - wantElapsed) > ELAPSED_TOLERANCE_MS) {
    problems.push(`elapsedMs: expected ${wantElapsed}, got ${elapsed}`);
  }
  fail(ctx.file, problems);
}

export const executor: Executor<CallVector> = { kind: 'call', run: runCall };

/** Executor of `pagination` vectors: iterate a connection with client.paginate, optionally aborting mid-way. */
import type { Connection, OperationSpec } from '../../../sdk-templates/typescript/src/index.js';
import type { Executor, ExecutorContext, VectorEnvelope } from './executor.js';
import { jsonEqual, sleepsProblems } from './match.js';
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

export interface PaginationVector extends VectorEnvelope {
  config?: VectorConfig;
  operation: OperationSpec;
  variables?: Record<string, unknown>;
  connectionPath: string;
  abortAfterNodes?: number;
  exchanges: Exchange[];
  expect: { nodes: unknown[]; sleeps: number[]; randomConsumed?: number; error?: ExpectedError };
}

function select(data: unknown, path: string): Connection<unknown> {
  let value: unknown = data;
  for (const key of path.split('.')) value = (value as Record<string, unknown> | null)?.[key];
  return value as Connection<unknown>;
}

async function run(vector: PaginationVector, ctx: ExecutorContext): Promise<void> {
  const h = buildHarness(vector.config, vector.exchanges, ctx);
  const controller = new AbortController();
  h.transport.abortCaller = () => controller.abort();
  const problems: string[] = [];
  const nodes: unknown[] = [];
  if (vector.abortAfterNodes === 0) controller.abort();
  try {
    const iterable = h.client.paginate(
      operationOf(vector.operation),
      vector.variables ?? {},
      (data) => select(data, vector.connectionPath),
      { signal: controller.signal },
    );
    for await (const node of iterable) {
      nodes.push(node);
      if (nodes.length === vector.abortAfterNodes) controller.abort();
    }
    if (vector.expect.error)
      problems.push(`expected error ${vector.expect.error.code}, but iteration completed`);
  } catch (err) {
    if (vector.expect.error) problems.push(...errorProblems(vector.expect.error, err));
    else problems.push(`expected the iteration to complete, got ${describeThrown(err)}`);
  }
  if (!jsonEqual(vector.expect.nodes, nodes)) {
    problems.push(`nodes: expected ${JSON.stringify(vector.expect.nodes)}, got ${JSON.stringify(nodes)}`);
  }
  if (vector.expect.randomConsumed !== undefined && vector.expect.randomConsumed !== ctx.random.consumed) {
    problems.push(`randomConsumed: expected ${vector.expect.randomConsumed}, got ${ctx.random.consumed}`);
  }
  problems.push(
    ...h.transport.finalProblems(),
    ...h.problems,
    ...sleepsProblems(vector.expect.sleeps, ctx.clock.sleeps),
  );
  fail(ctx.file, problems);
}

export const executor: Executor<PaginationVector> = { kind: 'pagination', run };

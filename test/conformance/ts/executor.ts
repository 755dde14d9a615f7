/**
 * The contract between the conformance runner (runner.test.ts) and the executor of each vector kind.
 *
 * The runner reads every `vectors/*.json`, validates it against `vector.schema.json` (a vector that does not
 * validate fails), then loads `ts/<kind>.ts` and calls its `executor.run(vector, context)`. An executor throws
 * (vitest `expect` or a plain Error naming the mismatch) when the SDK does not behave as the vector says.
 *
 * Kinds and owners: `call`, `pagination`, `privacy` (ts/call.ts, ts/pagination.ts, ts/privacy.ts);
 * `outbox`, `inbox`, `intent` (ts/outbox.ts, ts/inbox.ts, ts/intent.ts).
 *
 * A `<kind>.ts` module must export `executor: Executor`. It may also export `schema`: a JSON Schema (2020-12)
 * object for the kind-specific part of its vectors; the runner validates every vector of that kind against it in
 * addition to vector.schema.json (which checks only the common envelope for kinds it does not describe).
 */
import type { FakeClock } from './fake-clock.js';
import type { ScriptedRandom } from './scripted-random.js';

export type VectorKind = 'call' | 'pagination' | 'privacy' | 'outbox' | 'inbox' | 'intent';

/** The envelope every vector has (see README.md, "Common fields"); kind-specific fields ride alongside. */
export interface VectorEnvelope {
  id: string;
  kind: VectorKind;
  description: string;
  /** Free text: the reasoning, e.g. the backoff arithmetic. Never read by executors. */
  comment?: string | string[];
  /** Fake clock start, epoch milliseconds (default 1 700 000 000 000). */
  clock?: { start: number };
  /** The random numbers in [0, 1) the SDK's random source returns, in order. Running out is a failure. */
  random?: number[];
  [field: string]: unknown;
}

export interface ExecutorContext {
  /** Path of the vector file, for messages. */
  file: string;
  /** A fake clock started at `vector.clock.start`; `sleeps` records every delay the SDK slept. */
  clock: FakeClock;
  /** The vector's `random` sequence as a `() => number`; `consumed` counts the numbers drawn. */
  random: ScriptedRandom;
}

export interface Executor<V extends VectorEnvelope = VectorEnvelope> {
  kind: VectorKind;
  run(vector: V, context: ExecutorContext): Promise<void>;
}

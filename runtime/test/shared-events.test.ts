/**
 * Shared stream events (src/shared-events.ts): an item marked with `shareEvents` is executed once per document,
 * operation name and variables, and every stream gets that one result; anything else runs every time.
 */
import { parse, type ExecutionArgs, type ExecutionResult } from 'graphql';
import { describe, expect, it } from 'vitest';
import { executeEvent, shareEvents } from '../src/shared-events.js';

const documentA = parse('subscription A($room: ID!) { roomMessages(roomId: $room) { seq } }');
const documentB = parse('subscription B($room: ID!) { roomMessages(roomId: $room) { seq body } }');
const args = (
  document = documentA,
  variableValues: Record<string, unknown> = { room: 'r1' },
  principal = 'p',
) => ({ schema: null, document, variableValues, contextValue: { principal } }) as unknown as ExecutionArgs;

/** `executeEvent` with a synchronous execute (so its answer is the result itself, not a promise). */
const run = (payload: unknown, a: ExecutionArgs, execute: () => ExecutionResult) =>
  executeEvent(payload, a, execute) as ExecutionResult;

/** An execute that counts its runs and answers a new result object each time. */
function counting() {
  let runs = 0;
  return {
    runs: () => runs,
    execute: (): ExecutionResult => ({ data: { run: ++runs } }),
  };
}

describe('executeEvent', () => {
  it('executes a shared item once per document and arguments, whoever the stream belongs to', () => {
    const [item] = shareEvents([{ seq: 1 }]);
    const c = counting();
    const first = run(item, args(documentA, { room: 'r1' }, 'alice'), c.execute);
    const again = [1, 2, 3].map((i) =>
      executeEvent(item, args(documentA, { room: 'r1' }, `p${i}`), c.execute),
    );
    expect(c.runs()).toBe(1);
    for (const r of again) expect(r).toBe(first);
    // Another document, other variables, another operation name: each its own run.
    run(item, args(documentB), c.execute);
    run(item, args(documentA, { room: 'r2' }), c.execute);
    run(item, { ...args(), operationName: 'A' }, c.execute);
    expect(c.runs()).toBe(4);
    // Another shared item with the same fields is another event.
    const [other] = shareEvents([{ seq: 1 }]);
    run(other, args(), c.execute);
    expect(c.runs()).toBe(5);
  });

  it('executes items that were not shared every time', () => {
    const c = counting();
    const item = { seq: 1 };
    const results = [1, 2, 3].map(() => run(item, args(), c.execute));
    expect(c.runs()).toBe(3);
    expect(new Set(results).size).toBe(3);
    for (const payload of [null, 7, 'text']) run(payload, args(), c.execute);
    expect(c.runs()).toBe(6);
  });

  it('shares a result that is still being computed', async () => {
    const [item] = shareEvents([{ seq: 2 }]);
    let runs = 0;
    let finish!: (r: ExecutionResult) => void;
    const execute = () => (runs++, new Promise<ExecutionResult>((r) => (finish = r)));
    const pending = [1, 2].map(() => executeEvent(item, args(), execute) as Promise<ExecutionResult>);
    expect(runs).toBe(1);
    finish({ data: { seq: 2 } });
    const [a, b] = await Promise.all(pending);
    expect(a).toBe(b);
  });
});

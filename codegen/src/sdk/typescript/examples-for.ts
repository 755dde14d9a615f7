import type { IR } from '../ir.js';
import { EXAMPLES, type Example } from './examples.js';
import { methodName, paginateMethod } from './names.js';

/** The examples whose methods the API has (a schema without postMessage gets no example that posts). */
export function examplesFor(ir: IR): Example[] {
  const methods = new Set(
    ir.operations
      .filter((op) => op.kind !== 'subscription')
      .flatMap((op) => [methodName(op), ...op.connections.map((c) => paginateMethod(op, c))]),
  );
  for (const op of ir.operations) if (op.kind === 'subscription') methods.add(`subscriptions.${op.name}`);
  return EXAMPLES.filter((e) => e.needs.every((m) => methods.has(m)));
}

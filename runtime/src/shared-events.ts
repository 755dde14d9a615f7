/**
 * Stream events executed once for every stream that selects the same fields: when one room message goes to ten
 * thousand streams of the same subscription document, graphql-js would run the same selection on the same object ten
 * thousand times. A stream source that hands the same item objects to many streams, and whose items resolve the same
 * whoever's stream it is (e.g. room messages, which are scoped by tenant and read once for every stream of the room),
 * marks them with `shareEvents`; the subgraph server then executes each (item, document, operation name, variables)
 * once and hands every such stream the same result object (which nobody modifies: graphql-sse prints it, errors are
 * formatted into new objects). Never mark items whose fields depend on the principal (a device's intents, an inbox).
 * The results live as long as their item (a WeakMap on it).
 */
import type { DocumentNode, ExecutionArgs, ExecutionResult } from 'graphql';

type Result = ExecutionResult | Promise<ExecutionResult>;

/** Per marked item: results by document and arguments. */
const results = new WeakMap<object, Map<string, Result>>();
/** A number per document object (the server prepares one per query text and reuses it). */
const documentIds = new WeakMap<DocumentNode, number>();
let nextDocumentId = 0;
/** Each stream's key (its arguments object lives as long as the stream): computed once per stream, not per event. */
const keys = new WeakMap<ExecutionArgs, string>();

function keyOf(args: ExecutionArgs): string {
  let key = keys.get(args);
  if (key === undefined) {
    let documentId = documentIds.get(args.document);
    if (documentId === undefined) documentIds.set(args.document, (documentId = ++nextDocumentId));
    key = `${documentId}:${args.operationName ?? ''}:${JSON.stringify(args.variableValues ?? null)}`;
    keys.set(args, key);
  }
  return key;
}

/** Marks items as resolving the same for every stream they are handed to; returns them. */
export function shareEvents<T extends object>(items: T[]): T[] {
  for (const item of items) if (!results.has(item)) results.set(item, new Map());
  return items;
}

/**
 * The result of executing `args` on `payload`: `execute()` once per (marked item, document, operation, variables),
 * shared afterwards; for an item that is not marked, `execute()` every time. `args` must not change after its first
 * use (the server's are fixed for the stream's life).
 */
export function executeEvent(payload: unknown, args: ExecutionArgs, execute: () => Result): Result {
  const byArgs = typeof payload === 'object' && payload !== null ? results.get(payload) : undefined;
  if (!byArgs) return execute();
  const key = keyOf(args);
  let result = byArgs.get(key);
  if (!result) byArgs.set(key, (result = execute()));
  return result;
}

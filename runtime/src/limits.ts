/**
 * Static document limits checked before execution: depth, aliases, and page-size arguments (first/last) given
 * as literals or variables. Each violation is a QUERY_TOO_COMPLEX (or BAD_USER_INPUT for page size) request error.
 * Fragments are followed (with cycle protection) so a fragment cannot hide depth.
 */
import {
  Kind,
  type DocumentNode,
  type FragmentDefinitionNode,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValueNode,
} from 'graphql';
import { AppError, badInput } from './errors.js';

export interface DocumentLimits {
  maxDepth: number;
  maxAliases: number;
  maxPageSize: number;
}

const PAGE_ARGS = new Set(['first', 'last']);

export function checkDocumentLimits(
  doc: DocumentNode,
  operationName: string | null | undefined,
  variables: Record<string, unknown> | null | undefined,
  limits: DocumentLimits,
): void {
  const fragments = new Map<string, FragmentDefinitionNode>();
  const operations: OperationDefinitionNode[] = [];
  for (const def of doc.definitions) {
    if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def);
    else if (def.kind === Kind.OPERATION_DEFINITION) operations.push(def);
  }
  const op = operationName
    ? operations.find((o) => o.name?.value === operationName)
    : operations.length === 1
      ? operations[0]
      : undefined;
  if (!op) return; // validation reports the missing or ambiguous operation
  let aliases = 0;

  const pageValue = (v: ValueNode): unknown =>
    v.kind === Kind.INT ? Number(v.value) : v.kind === Kind.VARIABLE ? variables?.[v.name.value] : undefined;

  const walk = (set: SelectionSetNode, depth: number, seen: Set<string>): number => {
    let deepest = depth;
    for (const sel of set.selections) {
      if (sel.kind === Kind.FIELD) {
        if (sel.alias) {
          aliases++;
          if (aliases > limits.maxAliases) {
            throw new AppError(
              'QUERY_TOO_COMPLEX',
              `The document uses more than ${limits.maxAliases} aliases. Split it into several requests.`,
              { limit: 'maxAliases', max: limits.maxAliases },
            );
          }
        }
        for (const arg of sel.arguments ?? []) {
          if (!PAGE_ARGS.has(arg.name.value)) continue;
          const n = pageValue(arg.value);
          if (typeof n === 'number' && (n > limits.maxPageSize || n < 0)) {
            throw badInput(
              `"${arg.name.value}: ${n}" on ${sel.name.value} is outside 0..${limits.maxPageSize}. Page with cursors instead.`,
              { limit: 'maxPageSize', max: limits.maxPageSize, argument: arg.name.value },
            );
          }
        }
        if (sel.selectionSet) {
          const d = depth + 1;
          if (d > limits.maxDepth) {
            throw new AppError(
              'QUERY_TOO_COMPLEX',
              `The document nests deeper than ${limits.maxDepth} levels. Ask for less at once.`,
              { limit: 'maxDepth', max: limits.maxDepth },
            );
          }
          deepest = Math.max(deepest, walk(sel.selectionSet, d, seen));
        }
      } else if (sel.kind === Kind.INLINE_FRAGMENT) {
        deepest = Math.max(deepest, walk(sel.selectionSet, depth, seen));
      } else {
        const name = sel.name.value;
        const frag = fragments.get(name);
        if (!frag || seen.has(name)) continue; // unknown or cyclic: validation rejects it
        seen.add(name);
        deepest = Math.max(deepest, walk(frag.selectionSet, depth, seen));
        seen.delete(name);
      }
    }
    return deepest;
  };
  walk(op.selectionSet, 0, new Set());
}

/**
 * Static document limits checked before execution: depth, aliases, and page-size arguments (first/last) given
 * as literals or variables (a variable the request leaves out counts with its default: `$n: Int = 100000` must not
 * slip past the cap). Each violation is a QUERY_TOO_COMPLEX (or BAD_USER_INPUT for page size) request error.
 * Fragments are followed (with cycle protection) so a fragment cannot hide depth. The gateway (queries and streams)
 * and every subgraph check with this one function; `usesVariablePageArgs` tells a caller that caches the verdict
 * per document whether it must check again per request.
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
  // A variable's value: what the request gives, else the operation's default (a literal), else nothing to check.
  // Without `variables` (null: a static pass over the document alone, cached per document) variables are skipped.
  const defaults = new Map<string, ValueNode>();
  for (const d of op.variableDefinitions ?? []) {
    if (d.defaultValue) defaults.set(d.variable.name.value, d.defaultValue);
  }
  const pageValue = (v: ValueNode): unknown => {
    if (v.kind === Kind.INT) return Number(v.value);
    if (v.kind !== Kind.VARIABLE || !variables) return undefined;
    const given = variables[v.name.value];
    if (given !== undefined) return given;
    const dflt = defaults.get(v.name.value);
    return dflt?.kind === Kind.INT ? Number(dflt.value) : undefined;
  };
  const tooDeep = () =>
    new AppError(
      'QUERY_TOO_COMPLEX',
      `The document nests deeper than ${limits.maxDepth} levels. Ask for less at once.`,
      { limit: 'maxDepth', max: limits.maxDepth },
    );
  const tooManyAliases = () =>
    new AppError(
      'QUERY_TOO_COMPLEX',
      `The document uses more than ${limits.maxAliases} aliases. Split it into several requests.`,
      { limit: 'maxAliases', max: limits.maxAliases },
    );

  // What a selection set adds below its level: its deepest nesting and the aliases it expands to. Each
  // fragment is summarised once and reused, so fragments that spread each other many times cost time linear
  // in the document, not in the (exponential) number of paths through it. `base` is the set's own depth.
  interface Summary {
    depth: number;
    aliases: number;
  }
  const summaries = new Map<string, Summary>();
  const summarize = (set: SelectionSetNode, base: number, visiting: Set<string>): Summary => {
    let depth = 0;
    let aliases = 0;
    const add = (s: Summary, extraDepth: number) => {
      depth = Math.max(depth, s.depth + extraDepth);
      aliases += s.aliases;
      if (base + depth > limits.maxDepth) throw tooDeep();
      if (aliases > limits.maxAliases) throw tooManyAliases();
    };
    for (const sel of set.selections) {
      if (sel.kind === Kind.FIELD) {
        if (sel.alias) add({ depth: 0, aliases: 1 }, 0);
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
          if (base + 1 > limits.maxDepth) throw tooDeep(); // before descending: no deep recursion on a bomb
          add(summarize(sel.selectionSet, base + 1, visiting), 1);
        }
      } else if (sel.kind === Kind.INLINE_FRAGMENT) {
        add(summarize(sel.selectionSet, base, visiting), 0);
      } else {
        const name = sel.name.value;
        const frag = fragments.get(name);
        if (!frag || visiting.has(name)) continue; // unknown or cyclic: validation rejects it
        let s = summaries.get(name);
        if (!s) {
          visiting.add(name);
          s = summarize(frag.selectionSet, base, visiting);
          visiting.delete(name);
          summaries.set(name, s);
        }
        add(s, 0);
      }
    }
    return { depth, aliases };
  };
  summarize(op.selectionSet, 0, new Set());
}

/** Whether a first/last argument anywhere takes a variable: then the limits depend on each request's values. */
export function usesVariablePageArgs(doc: DocumentNode): boolean {
  let found = false;
  const walk = (set: SelectionSetNode): void => {
    for (const sel of set.selections) {
      if (sel.kind === Kind.FIELD) {
        for (const a of sel.arguments ?? []) {
          if (PAGE_ARGS.has(a.name.value) && a.value.kind === Kind.VARIABLE) found = true;
        }
      }
      if ('selectionSet' in sel && sel.selectionSet) walk(sel.selectionSet);
    }
  };
  for (const def of doc.definitions) {
    if (def.kind === Kind.OPERATION_DEFINITION || def.kind === Kind.FRAGMENT_DEFINITION)
      walk(def.selectionSet);
  }
  return found;
}

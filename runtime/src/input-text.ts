/**
 * Text a client sends that PostgreSQL cannot store is refused before any resolver runs, with BAD_USER_INPUT naming
 * the argument path (`extensions.field`, and `argument` as coordination calls it, e.g. "input.displayName"), never
 * echoing the value. One check for every
 * subgraph's every argument, on `/graphql` and `/graphql/stream` alike (subgraph-server.ts calls it):
 *
 * - U+0000 (NUL): PostgreSQL's text cannot hold it (22021 "invalid byte sequence for encoding UTF8: 0x00"), and
 *   jsonb refuses its escape; it reached the database and came back as a 500.
 * - unpaired UTF-16 surrogates (e.g. JSON's "\ud800" without its low half): not Unicode text at all; the drivers
 *   encode them as U+FFFD, so the value stored would silently differ from the value sent.
 *
 * What is checked: every argument of every field the operation selects (fragments and nested fields included), as
 * coerced from literals, variables and defaults, walked along its input type (input objects, lists; String and ID
 * values; a custom scalar's value in full, keys included). Enums, numbers and booleans cannot carry text.
 *
 * Cost: a request whose variables hold no such character and whose document has no such literal (remembered per
 * parsed document) pays one scan of its variables; only a request that has one is walked to find the argument.
 */
import {
  BREAK,
  getArgumentValues,
  getNamedType,
  getOperationAST,
  getVariableValues,
  isEnumType,
  isInputObjectType,
  isInterfaceType,
  isListType,
  isNonNullType,
  isObjectType,
  Kind,
  visit,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLInputType,
  type GraphQLNamedType,
  type GraphQLSchema,
  type SelectionSetNode,
} from 'graphql';
import { badInput, type AppError } from './errors.js';

/** A NUL, or a surrogate code unit that is not half of a pair (with the `u` flag a pair is one code point). */
// eslint-disable-next-line no-control-regex -- U+0000 is what this looks for
const UNSTORABLE = /[\u0000\p{Cs}]/u;

type Problem = 'nul' | 'surrogate';

function problemOf(text: string): Problem | null {
  const m = UNSTORABLE.exec(text);
  return m ? (m[0] === '\u0000' ? 'nul' : 'surrogate') : null;
}

/** Whether any string in a JSON-like value (keys included) is unstorable. Iterative: variables may nest deeply. */
export function holdsUnstorableText(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length) {
    const v = stack.pop();
    if (typeof v === 'string') {
      if (UNSTORABLE.test(v)) return true;
    } else if (Array.isArray(v)) {
      for (const item of v) stack.push(item);
    } else if (v !== null && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) {
      for (const [k, item] of Object.entries(v)) {
        if (UNSTORABLE.test(k)) return true;
        stack.push(item);
      }
    }
  }
  return false;
}

/** Per parsed document (the servers cache documents by query text): does any string literal hold such text? */
const literalVerdicts = new WeakMap<DocumentNode, boolean>();

function hasUnstorableLiteral(document: DocumentNode): boolean {
  let verdict = literalVerdicts.get(document);
  if (verdict === undefined) {
    verdict = false;
    visit(document, {
      StringValue(node) {
        if (!UNSTORABLE.test(node.value)) return undefined;
        verdict = true;
        return BREAK;
      },
    });
    literalVerdicts.set(document, verdict);
  }
  return verdict;
}

function refusal(field: string, problem: Problem): AppError {
  const what =
    problem === 'nul'
      ? 'a NUL character (U+0000), which cannot be stored'
      : 'an unpaired UTF-16 surrogate, which is not Unicode text';
  // `field` as identity, memory, catalog and the console name it; `argument` as coordination does.
  return badInput(`${field} contains ${what}. Remove it and send the request again.`, {
    field,
    argument: field,
  });
}

/** The first unstorable string in a value of `type`, as [path, problem]. */
function findInValue(value: unknown, type: GraphQLInputType, path: string): [string, Problem] | null {
  if (value === null || value === undefined) return null;
  if (isNonNullType(type)) return findInValue(value, type.ofType, path);
  if (isListType(type)) {
    const items = Array.isArray(value) ? value : [value];
    for (let i = 0; i < items.length; i++) {
      const found = findInValue(items[i], type.ofType, `${path}.${i}`);
      if (found) return found;
    }
    return null;
  }
  if (isInputObjectType(type)) {
    const fields = type.getFields();
    for (const [name, v] of Object.entries(value as Record<string, unknown>)) {
      const field = fields[name];
      const found = field ? findInValue(v, field.type, `${path}.${name}`) : null;
      if (found) return found;
    }
    return null;
  }
  if (isEnumType(type)) return null;
  return findInAny(value, path);
}

/** A scalar's value: a string, or (custom scalars) anything JSON-like, keys included. */
function findInAny(value: unknown, path: string): [string, Problem] | null {
  if (typeof value === 'string') {
    const problem = problemOf(value);
    return problem ? [path, problem] : null;
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findInAny(value[i], `${path}.${i}`);
      if (found) return found;
    }
    return null;
  }
  if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    for (const [k, v] of Object.entries(value)) {
      // A bad key is named by the object that holds it: the path must not carry the key itself.
      const keyProblem = problemOf(k);
      if (keyProblem) return [path, keyProblem];
      const found = findInAny(v, `${path}.${k}`);
      if (found) return found;
    }
  }
  return null;
}

/**
 * BAD_USER_INPUT naming the first argument path (e.g. "input.displayName") whose text the database cannot store, or
 * null. A request whose variables do not coerce is left to execution, which refuses it with its own message.
 */
export function checkInputText(
  schema: GraphQLSchema,
  document: DocumentNode,
  operationName: string | null | undefined,
  variables: Record<string, unknown> | null | undefined,
): AppError | null {
  if (!hasUnstorableLiteral(document) && !(variables && holdsUnstorableText(variables))) return null;
  const operation = getOperationAST(document, operationName);
  if (!operation) return null;
  const coercion = getVariableValues(schema, operation.variableDefinitions ?? [], variables ?? {});
  if (coercion.errors) return null;
  const coerced = coercion.coerced;
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const d of document.definitions)
    if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
  const walked = new Set<string>();

  const walk = (selectionSet: SelectionSetNode, parent: GraphQLNamedType | undefined): AppError | null => {
    for (const selection of selectionSet.selections) {
      if (selection.kind === Kind.FIELD) {
        if (!parent || !(isObjectType(parent) || isInterfaceType(parent))) continue;
        const def = parent.getFields()[selection.name.value];
        if (!def) continue; // __typename and introspection fields: nothing of theirs is stored
        if (def.args.length && selection.arguments?.length) {
          let args: Record<string, unknown>;
          try {
            args = getArgumentValues(def, selection, coerced);
          } catch {
            continue; // execution refuses it with its own message
          }
          for (const arg of def.args) {
            const found = findInValue(args[arg.name], arg.type, arg.name);
            if (found) return refusal(...found);
          }
        }
        if (selection.selectionSet) {
          const bad = walk(selection.selectionSet, getNamedType(def.type));
          if (bad) return bad;
        }
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        const type = selection.typeCondition ? schema.getType(selection.typeCondition.name.value) : parent;
        const bad = walk(selection.selectionSet, type ?? undefined);
        if (bad) return bad;
      } else {
        const name = selection.name.value;
        const fragment = fragments.get(name);
        if (!fragment || walked.has(name)) continue;
        walked.add(name);
        const bad = walk(
          fragment.selectionSet,
          schema.getType(fragment.typeCondition.name.value) ?? undefined,
        );
        if (bad) return bad;
      }
    }
    return null;
  };
  return walk(operation.selectionSet, schema.getRootType(operation.operation) ?? undefined);
}

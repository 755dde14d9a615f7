/**
 * Operation documents: parsing the curated files, checking them against the schema, and printing the exact text
 * the SDK sends. That text is the one canonical form of an operation: graphql-js `print`'s tokens and spacing on
 * one line (comments and formatting of the source file do not matter), then the fragments it uses, by name. Its SHA-256 is the APQ hash
 * and the manifest entry, so a change of whitespace in a curated file changes nothing the server sees.
 */
import {
  type ArgumentNode,
  type ConstValueNode,
  type DefinitionNode,
  type DirectiveNode,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLError,
  Kind,
  type OperationDefinitionNode,
  parse,
  print,
  type SelectionNode,
  type SelectionSetNode,
  type GraphQLSchema,
  TokenKind,
  validate,
  type ValueNode,
  type VariableDefinitionNode,
  visit,
} from 'graphql';

export interface ParsedOperation {
  name: string;
  kind: 'query' | 'mutation' | 'subscription';
  node: OperationDefinitionNode;
  /** The fragments the operation uses, directly or through other fragments, by name. */
  fragments: FragmentDefinitionNode[];
  /** Where it came from, for messages: `schemas/operations/x.graphql:12`. */
  where: string;
  /** The `#` comment lines right above the operation, if any. */
  comment?: string;
}

function locationOf(file: string, node: { loc?: { startToken: { line: number } } | undefined }): string {
  return node.loc ? `${file}:${node.loc.startToken.line}` : file;
}

/** The `#` comment block that ends on the line right above a definition. */
function leadingComment(node: DefinitionNode): string | undefined {
  const lines: string[] = [];
  let token = node.loc?.startToken.prev ?? null;
  let line = node.loc?.startToken.line ?? 0;
  while (token && token.kind === TokenKind.COMMENT && token.line === line - 1) {
    lines.unshift((token.value ?? '').trim());
    line = token.line;
    token = token.prev;
  }
  const text = lines.join('\n').trim();
  return text ? text : undefined;
}

function fragmentNamesIn(set: SelectionSetNode): string[] {
  const names: string[] = [];
  visit(set, {
    FragmentSpread(node) {
      names.push(node.name.value);
    },
  });
  return names;
}

/** Fragments used by a selection set, transitively, sorted by name. */
export function usedFragments(
  set: SelectionSetNode,
  all: ReadonlyMap<string, FragmentDefinitionNode>,
  where: string,
): FragmentDefinitionNode[] {
  const found = new Map<string, FragmentDefinitionNode>();
  const queue = fragmentNamesIn(set);
  while (queue.length > 0) {
    const name = queue.shift()!;
    if (found.has(name)) continue;
    const fragment = all.get(name);
    if (!fragment)
      throw new Error(`${where}: fragment ${name} is used but not defined in schemas/operations/.`);
    found.set(name, fragment);
    queue.push(...fragmentNamesIn(fragment.selectionSet));
  }
  return [...found.values()].sort((a, b) =>
    a.name.value < b.name.value ? -1 : a.name.value > b.name.value ? 1 : 0,
  );
}

type Printable =
  | OperationDefinitionNode
  | FragmentDefinitionNode
  | SelectionSetNode
  | SelectionNode
  | DirectiveNode
  | VariableDefinitionNode;

const joined = (parts: ReadonlyArray<string | undefined>, sep = ' ') => parts.filter((p) => p).join(sep);
const argsOf = (args: readonly ArgumentNode[] | undefined) =>
  args && args.length > 0 ? `(${args.map((a) => `${a.name.value}: ${printValue(a.value)}`).join(', ')})` : '';
const dirsOf = (dirs: readonly DirectiveNode[] | undefined) => (dirs ?? []).map(printOneLine).join(' ');

/** A value as graphql-js prints it, block strings turned into ordinary strings (so no newline survives). */
function printValue(value: ValueNode | ConstValueNode): string {
  return print(
    visit(value, {
      StringValue(node) {
        return node.block ? { ...node, block: false } : undefined;
      },
    }),
  );
}

/**
 * graphql-js `print`, on one line: the same tokens and spacing, but arguments never wrap (print breaks long
 * argument lists onto lines of their own, which would put a line length into the canonical text).
 */
function printOneLine(node: Printable): string {
  switch (node.kind) {
    case Kind.OPERATION_DEFINITION: {
      const vars = node.variableDefinitions?.length
        ? `(${node.variableDefinitions.map(printOneLine).join(', ')})`
        : '';
      return joined([
        node.operation,
        joined([node.name?.value, vars], ''),
        dirsOf(node.directives),
        printOneLine(node.selectionSet),
      ]);
    }
    case Kind.FRAGMENT_DEFINITION:
      return joined([
        `fragment ${node.name.value} on ${node.typeCondition.name.value}`,
        dirsOf(node.directives),
        printOneLine(node.selectionSet),
      ]);
    case Kind.VARIABLE_DEFINITION:
      return joined([
        `$${node.variable.name.value}: ${print(node.type)}`,
        node.defaultValue ? `= ${printValue(node.defaultValue)}` : undefined,
        dirsOf(node.directives),
      ]);
    case Kind.SELECTION_SET:
      return `{ ${node.selections.map(printOneLine).join(' ')} }`;
    case Kind.FIELD:
      return joined([
        `${node.alias ? `${node.alias.value}: ` : ''}${node.name.value}${argsOf(node.arguments)}`,
        dirsOf(node.directives),
        node.selectionSet ? printOneLine(node.selectionSet) : undefined,
      ]);
    case Kind.FRAGMENT_SPREAD:
      return joined([`...${node.name.value}`, dirsOf(node.directives)]);
    case Kind.INLINE_FRAGMENT:
      return joined([
        '...',
        node.typeCondition ? `on ${node.typeCondition.name.value}` : undefined,
        dirsOf(node.directives),
        printOneLine(node.selectionSet),
      ]);
    case Kind.DIRECTIVE:
      return `@${node.name.value}${argsOf(node.arguments)}`;
  }
}

/** The exact document the SDK sends for an operation: the operation, then its fragments by name, one line. */
export function documentText(
  op: OperationDefinitionNode,
  fragments: readonly FragmentDefinitionNode[],
): string {
  return [op, ...fragments].map(printOneLine).join(' ');
}

function formatErrors(where: string, errors: readonly GraphQLError[]): string {
  return errors
    .map((e) => {
      const loc = e.locations?.[0];
      return `${where}${loc ? ` (line ${loc.line} of the operation)` : ''}: ${e.message}`;
    })
    .join('\n');
}

/** Checks one operation (with its fragments) against the schema; throws every problem at once. */
export function validateOperation(schema: GraphQLSchema, op: ParsedOperation): void {
  const doc: DocumentNode = { kind: Kind.DOCUMENT, definitions: [op.node, ...op.fragments] };
  const errors = validate(schema, doc);
  if (errors.length > 0) {
    throw new Error(
      `Operation ${op.name} does not validate against schemas/api.graphql:\n${formatErrors(op.where, errors)}\n` +
        `Fix the document (or the schema), then run npm run codegen again.`,
    );
  }
}

/**
 * Parses the curated files. Every definition must be a named operation or a fragment; names are unique across
 * all files (operations and fragments separately).
 */
export function parseOperationFiles(files: ReadonlyArray<{ path: string; text: string }>): {
  operations: ParsedOperation[];
  fragments: ReadonlyMap<string, FragmentDefinitionNode>;
} {
  const operations: Array<{ node: OperationDefinitionNode; where: string; comment?: string }> = [];
  const fragments = new Map<string, FragmentDefinitionNode>();
  const fragmentWhere = new Map<string, string>();
  const opWhere = new Map<string, string>();
  for (const file of files) {
    let doc: DocumentNode;
    try {
      doc = parse(file.text);
    } catch (err) {
      throw new Error(`${file.path}: ${(err as Error).message}`, { cause: err });
    }
    for (const def of doc.definitions) {
      const where = locationOf(file.path, def);
      if (def.kind === Kind.FRAGMENT_DEFINITION) {
        const seen = fragmentWhere.get(def.name.value);
        if (seen) throw new Error(`${where}: fragment ${def.name.value} is also defined at ${seen}.`);
        fragments.set(def.name.value, def);
        fragmentWhere.set(def.name.value, where);
      } else if (def.kind === Kind.OPERATION_DEFINITION) {
        if (!def.name) {
          throw new Error(
            `${where}: an operation without a name. Name it (the name becomes the SDK method).`,
          );
        }
        const seen = opWhere.get(def.name.value);
        if (seen) throw new Error(`${where}: operation ${def.name.value} is also defined at ${seen}.`);
        opWhere.set(def.name.value, where);
        const comment = leadingComment(def);
        operations.push({ node: def, where, ...(comment ? { comment } : {}) });
      } else {
        throw new Error(
          `${where}: only operations and fragments belong in schemas/operations/ (found ${def.kind}).`,
        );
      }
    }
  }
  return {
    operations: operations.map(({ node, where, comment }) => ({
      name: node.name!.value,
      kind: node.operation,
      node,
      fragments: usedFragments(node.selectionSet, fragments, where),
      where,
      ...(comment ? { comment } : {}),
    })),
    fragments,
  };
}

/** Parses a generated (default) operation's source: one named operation, no fragments. */
export function parseGenerated(source: string, where: string): ParsedOperation {
  const doc = parse(source);
  const node = doc.definitions[0] as OperationDefinitionNode;
  return { name: node.name!.value, kind: node.operation, node, fragments: [], where };
}

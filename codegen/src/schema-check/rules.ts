/**
 * Our schema conventions (docs/architecture.md#schema-conventions, schemas/README.md), checked on each subgraph SDL, where `@key` and
 * `@privacy` are written. Each violation names its subgraph, rule and schema coordinate.
 */
import {
  Kind,
  parse,
  type DefinitionNode,
  type DocumentNode,
  type FieldDefinitionNode,
  type InputValueDefinitionNode,
  type TypeNode,
} from 'graphql';

export type RuleName =
  | 'idempotency-key'
  | 'connection'
  | 'privacy'
  | 'entity-key'
  | 'naming'
  | 'composition'
  | 'stale'
  | 'operation'
  | 'allowlist';

export interface Violation {
  rule: RuleName;
  /** A schema coordinate (`Type.field.arg`), a file path, or the subgraph name. */
  coordinate: string;
  message: string;
  subgraph?: string;
}

const PASCAL = /^[A-Z][A-Za-z0-9]*$/;
const CAMEL = /^[a-z][A-Za-z0-9]*$/;
const SCREAMING = /^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$/;
const PAGING_ARGS = new Set(['first', 'after', 'last', 'before']);
const ROOTS = new Set(['Query', 'Mutation', 'Subscription']);

const named = (t: TypeNode): string => (t.kind === Kind.NAMED_TYPE ? t.name.value : named(t.type));
const isList = (t: TypeNode): boolean =>
  t.kind === Kind.LIST_TYPE || (t.kind === Kind.NON_NULL_TYPE && isList(t.type));
const isNonNullId = (t: TypeNode) =>
  t.kind === Kind.NON_NULL_TYPE && t.type.kind === Kind.NAMED_TYPE && t.type.name.value === 'ID';
const hasDirective = (node: { directives?: readonly { name: { value: string } }[] }, name: string) =>
  (node.directives ?? []).some((d) => d.name.value === name);

type ObjectLike = Extract<DefinitionNode, { kind: Kind.OBJECT_TYPE_DEFINITION | Kind.OBJECT_TYPE_EXTENSION }>;

function objectTypes(doc: DocumentNode): ObjectLike[] {
  return doc.definitions.filter(
    (d): d is ObjectLike => d.kind === Kind.OBJECT_TYPE_DEFINITION || d.kind === Kind.OBJECT_TYPE_EXTENSION,
  );
}

/** Checks one subgraph SDL; a parse error is itself one violation. */
export function lintSubgraph(subgraph: string, sdl: string): Violation[] {
  let doc: DocumentNode;
  try {
    doc = parse(sdl);
  } catch (err) {
    return [{ rule: 'composition', coordinate: subgraph, subgraph, message: (err as Error).message }];
  }
  const out: Violation[] = [];
  const add = (rule: RuleName, coordinate: string, message: string) =>
    out.push({ rule, coordinate, message, subgraph });

  const compositeNames = new Set(
    doc.definitions
      .filter((d) =>
        [Kind.OBJECT_TYPE_DEFINITION, Kind.INTERFACE_TYPE_DEFINITION, Kind.UNION_TYPE_DEFINITION].includes(
          d.kind,
        ),
      )
      .map((d) => ('name' in d && d.name ? d.name.value : '')),
  );

  for (const def of doc.definitions) {
    if (!('name' in def) || !def.name) continue;
    const typeName = def.name.value;
    const isTypeDef = def.kind !== Kind.DIRECTIVE_DEFINITION && def.kind !== Kind.OPERATION_DEFINITION;
    if (isTypeDef && def.kind !== Kind.FRAGMENT_DEFINITION && !PASCAL.test(typeName))
      add('naming', typeName, `type ${typeName} is not PascalCase`);
    if (def.kind === Kind.ENUM_TYPE_DEFINITION || def.kind === Kind.ENUM_TYPE_EXTENSION) {
      for (const v of def.values ?? [])
        if (!SCREAMING.test(v.name.value))
          add(
            'naming',
            `${typeName}.${v.name.value}`,
            `enum value ${v.name.value} is not SCREAMING_SNAKE_CASE`,
          );
    }
    if (def.kind === Kind.INPUT_OBJECT_TYPE_DEFINITION || def.kind === Kind.INPUT_OBJECT_TYPE_EXTENSION) {
      if (!typeName.endsWith('Input'))
        add('naming', typeName, `input type ${typeName} does not end in Input`);
      for (const f of def.fields ?? []) checkInputValue(typeName, f, 'input field', add);
    }
  }

  for (const def of objectTypes(doc)) {
    const typeName = def.name.value;
    const fields = def.fields ?? [];
    const isEntityShaped =
      !ROOTS.has(typeName) &&
      !/(Payload|Edge|Connection)$/.test(typeName) &&
      fields.some((f) => f.name.value === 'id' && isNonNullId(f.type));
    if (def.kind === Kind.OBJECT_TYPE_DEFINITION && isEntityShaped && !hasDirective(def, 'key'))
      add('entity-key', typeName, `${typeName} has id: ID! but no @key: entities carry @key(fields: "id")`);
    for (const f of fields) checkField(typeName, f, compositeNames, add);
  }
  return out;
}

function checkField(
  typeName: string,
  f: FieldDefinitionNode,
  compositeNames: Set<string>,
  add: (rule: RuleName, coordinate: string, message: string) => void,
): void {
  const coord = `${typeName}.${f.name.value}`;
  if (!f.name.value.startsWith('_') && !CAMEL.test(f.name.value))
    add('naming', coord, `field ${f.name.value} is not camelCase`);
  const resultType = named(f.type);
  if (typeName === 'Mutation') {
    const key = f.arguments?.find((a) => a.name.value === 'idempotencyKey');
    if (!key) add('idempotency-key', coord, `mutation ${f.name.value} does not take idempotencyKey: ID!`);
    else if (!isNonNullId(key.type))
      add(
        'idempotency-key',
        `${coord}.idempotencyKey`,
        `idempotencyKey must be ID! (non-null), not another type`,
      );
    if (!resultType.endsWith('Payload'))
      add('naming', coord, `mutation ${f.name.value} returns ${resultType}; mutation results end in Payload`);
  }
  if (isList(f.type) && compositeNames.has(resultType) && f.name.value !== 'edges')
    add(
      'connection',
      coord,
      `${coord} is a plain list of ${resultType}: a list that can grow is a connection`,
    );
  if (resultType.endsWith('Connection') && typeName !== 'Subscription') {
    const first = f.arguments?.find((a) => a.name.value === 'first');
    const after = f.arguments?.find((a) => a.name.value.startsWith('after'));
    if (!first || named(first.type) !== 'Int' || first.type.kind === Kind.NON_NULL_TYPE)
      add('connection', coord, `connection ${coord} needs first: Int (optional; the server caps it)`);
    if (!after)
      add('connection', coord, `connection ${coord} needs a cursor argument (after: String, or after…)`);
  }
  for (const a of f.arguments ?? []) {
    if (!CAMEL.test(a.name.value))
      add('naming', `${coord}.${a.name.value}`, `argument ${a.name.value} is not camelCase`);
    // Today's convention: free-text (String) arguments carry @privacy, as input fields do; ids, numbers,
    // paging cursors and input objects (whose fields carry it) do not.
    if (a.name.value === 'idempotencyKey' || PAGING_ARGS.has(a.name.value)) continue;
    if (named(a.type) === 'String' && !hasDirective(a, 'privacy'))
      add('privacy', `${coord}.${a.name.value}`, `String argument ${a.name.value} has no @privacy(class: …)`);
  }
}

function checkInputValue(
  typeName: string,
  f: InputValueDefinitionNode,
  what: string,
  add: (rule: RuleName, coordinate: string, message: string) => void,
): void {
  const coord = `${typeName}.${f.name.value}`;
  if (!CAMEL.test(f.name.value)) add('naming', coord, `${what} ${f.name.value} is not camelCase`);
  if (f.name.value !== 'idempotencyKey' && !hasDirective(f, 'privacy'))
    add(
      'privacy',
      coord,
      `${what} ${coord} has no @privacy(class: …): every input field declares its data class`,
    );
}

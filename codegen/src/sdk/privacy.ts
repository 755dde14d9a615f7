/**
 * The privacy table of an operation (docs/architecture.md#schema-conventions, #sdks): for every variable path that reaches an argument or input
 * field carrying `@privacy(class:)`, the class and whether the value is required (a non-null type, no default).
 *
 * A variable gets the class of the position it is passed to: an argument (`body: $body`), or an input field inside
 * an object literal (`input: { body: $body }`). Then the variable's own type is expanded: each input-object field
 * with a class gets `<path>.<field>`, each list level `[]` (`items[].note`). A variable used in two positions with
 * different classes keeps the stricter class. Paths use the runtime's syntax (sdk-templates privacy-types.ts).
 */
import {
  type ArgumentNode,
  type FragmentDefinitionNode,
  getNullableType,
  type GraphQLInputType,
  type GraphQLSchema,
  isInputObjectType,
  isListType,
  isNonNullType,
  Kind,
  type OperationDefinitionNode,
  typeFromAST,
  TypeInfo,
  type ValueNode,
  visit,
  visitWithTypeInfo,
} from 'graphql';
import { DATA_CLASS_ORDER, type DataClass, type PrivacyRule, type PrivacyTable } from './ir.js';
import { privacyOf } from './schema-info.js';

function stricter(a: DataClass | undefined, b: DataClass | undefined): DataClass | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return DATA_CLASS_ORDER.indexOf(a) >= DATA_CLASS_ORDER.indexOf(b) ? a : b;
}

function add(table: Map<string, PrivacyRule>, path: string, rule: PrivacyRule): void {
  const seen = table.get(path);
  if (!seen) table.set(path, rule);
  else
    table.set(path, { class: stricter(seen.class, rule.class)!, required: seen.required || rule.required });
}

/** Rules for the input fields inside a value of `type` at `path` (not the path itself). */
function expand(
  type: GraphQLInputType,
  path: string,
  table: Map<string, PrivacyRule>,
  stack: readonly string[] = [],
): void {
  const inner = getNullableType(type);
  if (isListType(inner)) {
    const element = inner.ofType as GraphQLInputType;
    expand(element, `${path}[]`, table, stack);
    return;
  }
  if (!isInputObjectType(inner)) return;
  if (stack.includes(inner.name)) {
    throw new Error(
      `Input type ${inner.name} contains itself (${[...stack, inner.name].join(' → ')}): a privacy table cannot ` +
        `list every path of a recursive input. Make the recursion explicit with a bounded type instead.`,
    );
  }
  for (const field of Object.values(inner.getFields())) {
    const fieldPath = `${path}.${field.name}`;
    const cls = privacyOf(field);
    if (cls) add(table, fieldPath, { class: cls, required: isNonNullType(field.type) });
    expand(field.type, fieldPath, table, [...stack, inner.name]);
  }
}

interface VariableUse {
  name: string;
  cls: DataClass | undefined;
}

/** Variables inside an argument value, each with the class of the position it sits in. */
function usesIn(
  value: ValueNode,
  type: GraphQLInputType,
  inherited: DataClass | undefined,
  out: VariableUse[],
) {
  if (value.kind === Kind.VARIABLE) {
    out.push({ name: value.name.value, cls: inherited });
    return;
  }
  const inner = getNullableType(type);
  if (value.kind === Kind.LIST && isListType(inner)) {
    for (const item of value.values) usesIn(item, inner.ofType as GraphQLInputType, inherited, out);
    return;
  }
  if (value.kind === Kind.OBJECT && isInputObjectType(inner)) {
    const fields = inner.getFields();
    for (const f of value.fields) {
      const def = fields[f.name.value];
      if (def) usesIn(f.value, def.type, privacyOf(def) ?? inherited, out);
    }
  }
}

export function privacyTable(
  schema: GraphQLSchema,
  op: OperationDefinitionNode,
  fragments: readonly FragmentDefinitionNode[],
): PrivacyTable {
  const uses: VariableUse[] = [];
  for (const definition of [op, ...fragments]) {
    const typeInfo = new TypeInfo(schema);
    visit(
      definition,
      visitWithTypeInfo(typeInfo, {
        Argument(node: ArgumentNode) {
          const arg = typeInfo.getArgument();
          // Directive arguments (@include(if:)) carry no data class.
          if (!arg || typeInfo.getDirective()) return;
          usesIn(node.value, arg.type, privacyOf(arg), uses);
        },
      }),
    );
  }

  const table = new Map<string, PrivacyRule>();
  for (const def of op.variableDefinitions ?? []) {
    const name = def.variable.name.value;
    const type = typeFromAST(schema, def.type) as GraphQLInputType | undefined;
    if (!type) throw new Error(`Variable $${name} has unknown type.`);
    const cls = uses
      .filter((u) => u.name === name)
      .reduce<DataClass | undefined>((c, u) => stricter(c, u.cls), undefined);
    if (cls) add(table, name, { class: cls, required: isNonNullType(type) && !def.defaultValue });
    expand(type, name, table);
  }
  return Object.fromEntries([...table].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

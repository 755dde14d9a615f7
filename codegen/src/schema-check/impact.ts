/**
 * Which SDK methods and operations a change touches, from the SDK generator's IR: every operation's document is
 * walked with the schema it was generated against, collecting the coordinates it uses (types, `Type.field`,
 * `Type.field.arg`, input fields through its variables, enum values of the enums it reads or sends).
 */
import {
  getNamedType,
  isEnumType,
  isInputObjectType,
  parse,
  TypeInfo,
  typeFromAST,
  visit,
  visitWithTypeInfo,
  type GraphQLNamedType,
  type GraphQLSchema,
} from 'graphql';
import type { IR, OperationIR } from '../sdk/ir.js';
import { methodName } from '../sdk/typescript/names.js';

export interface Touched {
  operation: string;
  kind: OperationIR['kind'];
  /** The TypeScript SDK's method (`postMessage`); subscriptions have none. */
  sdkMethod?: string;
  origin: string;
}

export interface OperationUsage {
  op: Touched;
  coordinates: Set<string>;
}

function addNamed(
  schema: GraphQLSchema,
  type: GraphQLNamedType,
  into: Set<string>,
  seen = new Set<string>(),
) {
  if (seen.has(type.name)) return;
  seen.add(type.name);
  into.add(type.name);
  if (isEnumType(type)) for (const v of type.getValues()) into.add(`${type.name}.${v.name}`);
  if (isInputObjectType(type))
    for (const f of Object.values(type.getFields())) {
      into.add(`${type.name}.${f.name}`);
      addNamed(schema, getNamedType(f.type), into, seen);
    }
}

export function usagesOf(ir: IR, schema: GraphQLSchema): OperationUsage[] {
  return ir.operations.map((op) => {
    const coords = new Set<string>();
    const info = new TypeInfo(schema);
    visit(
      parse(op.document),
      visitWithTypeInfo(info, {
        Field() {
          const parent = info.getParentType();
          const field = info.getFieldDef();
          if (!parent || !field) return;
          coords.add(`${parent.name}.${field.name}`);
          addNamed(schema, getNamedType(field.type), coords);
        },
        Argument() {
          const parent = info.getParentType();
          const field = info.getFieldDef();
          const arg = info.getArgument();
          if (parent && field && arg) coords.add(`${parent.name}.${field.name}.${arg.name}`);
        },
        VariableDefinition(node) {
          const t = typeFromAST(schema, node.type as Parameters<typeof typeFromAST>[1]);
          if (t) addNamed(schema, getNamedType(t), coords);
        },
      }),
    );
    const origin = op.origin.kind === 'curated' ? op.origin.file : `default for ${op.origin.field}`;
    return {
      op: {
        operation: op.name,
        kind: op.kind,
        sdkMethod: op.kind === 'subscription' ? undefined : methodName(op),
        origin,
      },
      coordinates: coords,
    };
  });
}

/**
 * Operations a change at `path` touches: the coordinate itself, else its parent field for an argument change
 * (`Query.foo.newArg` → `Query.foo`), else the enum or union for a value or member change.
 */
export function touchedBy(
  path: string | undefined,
  changeType: string,
  usages: readonly OperationUsage[],
): Touched[] {
  if (!path) return [];
  const parts = path.split('.').filter((p) => !p.startsWith('@'));
  const candidates = [parts.join('.')];
  if (parts.length === 3) candidates.push(parts.slice(0, 2).join('.'));
  if (parts.length === 2 && /^(ENUM_VALUE|UNION_MEMBER)/.test(changeType)) candidates.push(parts[0]!);
  const hits = new Map<string, Touched>();
  for (const u of usages) {
    if (candidates.some((c) => u.coordinates.has(c))) hits.set(u.op.operation, u.op);
  }
  return [...hits.values()].sort((a, b) => a.operation.localeCompare(b.operation));
}

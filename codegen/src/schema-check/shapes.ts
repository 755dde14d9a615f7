/** The shape of a schema coordinate in one schema, as SDL text for the report (`putMemory(id: ID!, …): X!`). */
import {
  isEnumType,
  isInputObjectType,
  isInterfaceType,
  isObjectType,
  isUnionType,
  print,
  astFromValue,
  type GraphQLArgument,
  type GraphQLInputField,
  type GraphQLSchema,
} from 'graphql';

const dep = (reason: string | null | undefined) =>
  reason ? ` @deprecated(reason: ${JSON.stringify(reason)})` : '';

function inputValue(v: GraphQLArgument | GraphQLInputField): string {
  const def = v.defaultValue === undefined ? undefined : astFromValue(v.defaultValue, v.type);
  return `${v.name}: ${String(v.type)}${def ? ` = ${print(def)}` : ''}${dep(v.deprecationReason)}`;
}

export function shapeOf(
  schema: GraphQLSchema | undefined,
  coordinate: string | undefined,
): string | undefined {
  if (!schema || !coordinate) return undefined;
  const [typeName, member, arg] = coordinate.split('.').filter((p) => !p.startsWith('@'));
  const type = typeName ? schema.getType(typeName) : undefined;
  if (!type) return undefined;
  if (!member) {
    if (isUnionType(type)) return `union ${type.name} = ${type.getTypes().join(' | ')}`;
    if (isEnumType(type))
      return `enum ${type.name} { ${type
        .getValues()
        .map((v) => v.name)
        .join(' ')} }`;
    const kind = isInputObjectType(type)
      ? 'input'
      : isInterfaceType(type)
        ? 'interface'
        : isObjectType(type)
          ? 'type'
          : 'scalar';
    return `${kind} ${type.name}`;
  }
  if (isEnumType(type)) {
    const v = type.getValue(member);
    return v ? `${type.name}.${v.name}${dep(v.deprecationReason)}` : undefined;
  }
  if (isInputObjectType(type)) {
    const f = type.getFields()[member];
    return f ? `${type.name}.${inputValue(f)}` : undefined;
  }
  if (isObjectType(type) || isInterfaceType(type)) {
    const f = type.getFields()[member];
    if (!f) return undefined;
    if (arg) {
      const a = f.args.find((x) => x.name === arg);
      return a ? `${type.name}.${f.name}(${inputValue(a)})` : undefined;
    }
    const args = f.args.length ? `(${f.args.map(inputValue).join(', ')})` : '';
    return `${type.name}.${f.name}${args}: ${String(f.type)}${dep(f.deprecationReason)}`;
  }
  return undefined;
}

/** Whether the coordinate is deprecated in the schema (a field, argument, input field or enum value). */
export function isDeprecated(schema: GraphQLSchema | undefined, coordinate: string | undefined): boolean {
  if (!schema || !coordinate) return false;
  const [typeName, member, arg] = coordinate.split('.');
  const type = typeName ? schema.getType(typeName) : undefined;
  if (!type || !member) return false;
  if (isEnumType(type)) return Boolean(type.getValue(member)?.deprecationReason);
  if (isInputObjectType(type)) return Boolean(type.getFields()[member]?.deprecationReason);
  if (isObjectType(type) || isInterfaceType(type)) {
    const f = type.getFields()[member];
    if (!f) return false;
    return Boolean(arg ? f.args.find((a) => a.name === arg)?.deprecationReason : f.deprecationReason);
  }
  return false;
}

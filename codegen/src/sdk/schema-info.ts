/**
 * Small questions about the schema that several IR builders ask: the data class of an argument or input field
 * (`@privacy`), type references as plain data, Relay connection shape, descriptions.
 */
import {
  getNamedType,
  getNullableType,
  type GraphQLArgument,
  type GraphQLInputField,
  type GraphQLInputType,
  type GraphQLNamedType,
  type GraphQLObjectType,
  type GraphQLSchema,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
  Kind,
  type ConstDirectiveNode,
} from 'graphql';
import type { DataClass, InputTypeRef } from './ir.js';

const DATA_CLASSES = new Set<string>(['PUBLIC', 'INTERNAL', 'PERSONAL', 'SECRET', 'BIOMETRIC']);

/** The `@privacy(class:)` of an argument or input field, from its SDL node (the API schema keeps it). */
export function privacyOf(def: GraphQLArgument | GraphQLInputField): DataClass | undefined {
  const directive = def.astNode?.directives?.find((d: ConstDirectiveNode) => d.name.value === 'privacy');
  if (!directive) return undefined;
  const arg = directive.arguments?.find((a) => a.name.value === 'class');
  if (!arg || arg.value.kind !== Kind.ENUM || !DATA_CLASSES.has(arg.value.value)) {
    throw new Error(
      `@privacy on ${def.name} has no valid class (expected one of ${[...DATA_CLASSES].join(', ')}).`,
    );
  }
  return arg.value.value as DataClass;
}

export function inputTypeRef(type: GraphQLInputType): InputTypeRef {
  if (isNonNullType(type)) return { kind: 'NON_NULL', ofType: inputTypeRef(type.ofType) };
  if (isListType(type)) return { kind: 'LIST', ofType: inputTypeRef(type.ofType as GraphQLInputType) };
  if (isScalarType(type)) return { kind: 'SCALAR', name: type.name };
  if (isEnumType(type)) return { kind: 'ENUM', name: type.name };
  if (isInputObjectType(type)) return { kind: 'INPUT_OBJECT', name: type.name };
  throw new Error(`Unexpected input type ${String(type)}.`);
}

/** A description as one trimmed string, or undefined when there is none. */
export function descriptionOf(def: { description?: string | null | undefined }): string | undefined {
  const text = def.description?.trim();
  return text ? text : undefined;
}

export function deprecationOf(def: { deprecationReason?: string | null | undefined }): string | undefined {
  const reason = def.deprecationReason;
  return reason === undefined || reason === null ? undefined : reason || 'Deprecated.';
}

/**
 * A Relay connection type: `edges: [Edge]` whose edge has `node` (and `cursor`), and `pageInfo` with
 * `hasNextPage` and `endCursor` (docs/architecture.md#schema-conventions). Structural, not by name.
 */
export function isConnectionType(type: GraphQLNamedType): type is GraphQLObjectType {
  if (!isObjectType(type)) return false;
  const fields = type.getFields();
  const edges = fields['edges'];
  const pageInfo = fields['pageInfo'];
  if (!edges || !pageInfo) return false;
  if (!isListType(getNullableType(edges.type))) return false;
  const edge = getNamedType(edges.type);
  const info = getNamedType(pageInfo.type);
  if (!isObjectType(edge) || !isObjectType(info)) return false;
  const edgeFields = edge.getFields();
  const infoFields = info.getFields();
  return Boolean(
    edgeFields['node'] && edgeFields['cursor'] && infoFields['hasNextPage'] && infoFields['endCursor'],
  );
}

/** The node type of a connection type. */
export function connectionNodeType(connection: GraphQLObjectType): GraphQLNamedType {
  const edge = getNamedType(connection.getFields()['edges']!.type) as GraphQLObjectType;
  return getNamedType(edge.getFields()['node']!.type);
}

export function rootTypeOf(schema: GraphQLSchema, kind: 'query' | 'mutation' | 'subscription') {
  return kind === 'query'
    ? schema.getQueryType()
    : kind === 'mutation'
      ? schema.getMutationType()
      : schema.getSubscriptionType();
}

/**
 * A default operation for a root field that no curated document selects, so every field of the API is reachable
 * from every SDK. The rules, chosen to be predictable rather than clever:
 *
 * - the root field's arguments become variables of the same name and type;
 * - the selection takes every scalar and enum field, and object fields down to DEFAULT_DEPTH levels (the root
 *   field's own fields are level 1); fields that take arguments and deprecated fields are left out below the root
 *   (they need choices a generator cannot make: write a curated operation for them);
 * - a connection is `edges { cursor node { … } } pageInfo { hasNextPage endCursor }`, the node at the
 *   connection's level;
 * - an object type with nothing selectable left gets `__typename`, so the selection is never empty;
 * - in a subscription, a nested object with an `id: ID!` (an entity, which another subgraph may own) is selected as
 *   `{ id }` only: a stream is served by the one subgraph that owns the subscription field, so its events can carry
 *   only that subgraph's fields and references to other entities (fetch the rest with a query).
 */
import {
  type GraphQLField,
  getNamedType,
  type GraphQLNamedType,
  isAbstractType,
  isInterfaceType,
  isLeafType,
  isObjectType,
} from 'graphql';
import { connectionNodeType, isConnectionType } from './schema-info.js';

export const DEFAULT_DEPTH = 3;

function objectSelection(type: GraphQLNamedType, depth: number, stream: boolean): string {
  if (isConnectionType(type)) {
    const node = selectionOf(connectionNodeType(type), depth, stream);
    return `{ edges { cursor node ${node} } pageInfo { hasNextPage endCursor } }`;
  }
  return selectionOf(type, depth, stream);
}

function isEntityLike(type: GraphQLNamedType): boolean {
  if (!isObjectType(type) && !isInterfaceType(type)) return false;
  const id = type.getFields()['id'];
  return id !== undefined && String(id.type) === 'ID!';
}

function selectionOf(type: GraphQLNamedType, depth: number, stream: boolean): string {
  if (!isObjectType(type) && !isInterfaceType(type)) return '{ __typename }';
  if (stream && depth > 1 && isEntityLike(type)) return '{ id }';
  const parts: string[] = [];
  if (isAbstractType(type)) parts.push('__typename');
  for (const field of Object.values(type.getFields())) {
    if (field.args.length > 0 || field.deprecationReason != null) continue;
    const named = getNamedType(field.type);
    if (isLeafType(named)) parts.push(field.name);
    else if (depth < DEFAULT_DEPTH) parts.push(`${field.name} ${objectSelection(named, depth + 1, stream)}`);
  }
  if (parts.length === 0) parts.push('__typename');
  return `{ ${parts.join(' ')} }`;
}

/** The GraphQL source of the default operation `name` for root field `field` of the `kind` root type. */
export function defaultOperationSource(
  kind: 'query' | 'mutation' | 'subscription',
  name: string,
  field: GraphQLField<unknown, unknown>,
): string {
  // No variable defaults: an argument's schema default applies by itself when its variable is not sent.
  const vars = field.args.map((a) => `$${a.name}: ${String(a.type)}`);
  const args = field.args.map((a) => `${a.name}: $${a.name}`);
  const named = getNamedType(field.type);
  const selection = isLeafType(named) ? '' : ` ${objectSelection(named, 1, kind === 'subscription')}`;
  return (
    `${kind} ${name}${vars.length ? `(${vars.join(', ')})` : ''} ` +
    `{ ${field.name}${args.length ? `(${args.join(', ')})` : ''}${selection} }`
  );
}

/**
 * The connections an operation can page through automatically: a Relay connection field reached from the root
 * through objects only (no list on the way: one cursor per call), whose `after` argument is a variable, and whose
 * selection has `edges { node }` and `pageInfo { hasNextPage endCursor }` under their own names (the runtime's
 * paginator reads exactly those keys).
 */
import {
  type FragmentDefinitionNode,
  getNamedType,
  getNullableType,
  type GraphQLObjectType,
  isListType,
  isNonNullType,
  isObjectType,
  Kind,
  type SelectionSetNode,
} from 'graphql';
import type { ConnectionIR, OutputTypeRef, ResultShape } from './ir.js';
import { connectionNodeType, isConnectionType } from './schema-info.js';

function shapeIn(type: OutputTypeRef): ResultShape | undefined {
  if (type.kind === 'NON_NULL') return shapeIn(type.ofType);
  return type.kind === 'OBJECT' ? type.shape : undefined;
}

function isList(type: OutputTypeRef): boolean {
  return type.kind === 'LIST' || (type.kind === 'NON_NULL' && type.ofType.kind === 'LIST');
}

function field(shape: ResultShape | undefined, name: string) {
  return shape?.fields.find((f) => f.responseName === name && f.fieldName === name && !f.optional);
}

/** Whether the selected connection has what the paginator reads. */
function selectsPageable(connection: ResultShape | undefined): boolean {
  const edges = field(connection, 'edges');
  if (!edges || !isList(edges.type)) return false;
  const edge = edges.type.kind === 'NON_NULL' ? edges.type.ofType : edges.type;
  const edgeShape = edge.kind === 'LIST' ? shapeIn(edge.ofType) : undefined;
  const pageInfo = shapeIn(field(connection, 'pageInfo')?.type ?? { kind: 'SCALAR', name: '' });
  return Boolean(field(edgeShape, 'node') && field(pageInfo, 'hasNextPage') && field(pageInfo, 'endCursor'));
}

export function connectionsOf(
  root: GraphQLObjectType,
  selectionSet: SelectionSetNode,
  result: ResultShape,
  fragments: ReadonlyMap<string, FragmentDefinitionNode>,
): ConnectionIR[] {
  const found: ConnectionIR[] = [];
  const seen = new Set<string>();

  const walk = (
    parent: GraphQLObjectType,
    sets: readonly SelectionSetNode[],
    shape: ResultShape | undefined,
    path: string[],
    nullable: boolean[],
  ) => {
    for (const set of sets) {
      for (const sel of set.selections) {
        if (sel.kind !== Kind.FIELD) {
          const fragment = sel.kind === Kind.FRAGMENT_SPREAD ? fragments.get(sel.name.value) : sel;
          const condition = fragment?.typeCondition?.name.value;
          if (fragment && (condition === undefined || condition === parent.name)) {
            walk(parent, [fragment.selectionSet], shape, path, nullable);
          }
          continue;
        }
        const key = sel.alias?.value ?? sel.name.value;
        const def = parent.getFields()[sel.name.value];
        const selected = shape?.fields.find((f) => f.responseName === key);
        if (!def || !selected || selected.optional || !sel.selectionSet) continue;
        if (isListType(getNullableType(def.type))) continue;
        const named = getNamedType(def.type);
        if (!isObjectType(named)) continue;
        const here = [...path, key];
        const nulls = [...nullable, !isNonNullType(def.type)];
        const after = sel.arguments?.find((a) => a.name.value === 'after');
        if (
          isConnectionType(named) &&
          after?.value.kind === Kind.VARIABLE &&
          selectsPageable(shapeIn(selected.type)) &&
          !seen.has(here.join('.'))
        ) {
          seen.add(here.join('.'));
          const first = sel.arguments?.find((a) => a.name.value === 'first');
          found.push({
            path: here,
            nullable: nulls,
            afterVariable: after.value.name.value,
            ...(first?.value.kind === Kind.VARIABLE ? { firstVariable: first.value.name.value } : {}),
            nodeTypeName: connectionNodeType(named).name,
          });
          continue;
        }
        walk(named, [sel.selectionSet], shapeIn(selected.type), here, nulls);
      }
    }
  };
  walk(root, [selectionSet], result, [], []);
  return found;
}

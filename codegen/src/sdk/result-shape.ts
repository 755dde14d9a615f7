/**
 * The shape of an operation's result: which keys the response has, with which types, following aliases,
 * fragments, inline fragments and @skip/@include. Targets turn it into result types (a TS type literal, a C#
 * record, a Python TypedDict) without reading the schema again.
 */
import {
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLCompositeType,
  type GraphQLField,
  getNamedType,
  type GraphQLObjectType,
  type GraphQLOutputType,
  type GraphQLSchema,
  isAbstractType,
  isCompositeType,
  isEnumType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
  Kind,
  type SelectionSetNode,
  type DirectiveNode,
} from 'graphql';
import type { OutputTypeRef, ResultField, ResultShape } from './ir.js';
import { deprecationOf, descriptionOf } from './schema-info.js';

interface Collected {
  fieldName: string;
  nodes: FieldNode[];
  /** Every occurrence is conditional. */
  optional: boolean;
}

function conditional(directives: readonly DirectiveNode[] | undefined): boolean {
  return (directives ?? []).some((d) => d.name.value === 'skip' || d.name.value === 'include');
}

export class ResultShaper {
  constructor(
    private readonly schema: GraphQLSchema,
    private readonly fragments: ReadonlyMap<string, FragmentDefinitionNode>,
  ) {}

  shapeOf(parent: GraphQLCompositeType, sets: readonly SelectionSetNode[]): ResultShape {
    if (isObjectType(parent)) {
      return { typeName: parent.name, fields: this.fieldsOf(parent, this.collect(parent, parent, sets)) };
    }
    const possible = [...this.schema.getPossibleTypes(parent)].sort((a, b) =>
      a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
    );
    if (!this.narrows(parent, sets)) {
      return { typeName: parent.name, fields: this.fieldsOf(parent, this.collect(parent, undefined, sets)) };
    }
    return {
      typeName: parent.name,
      fields: [],
      variants: possible.map((t) => ({
        typeName: t.name,
        fields: this.fieldsOf(t, this.collect(t, t, sets)),
      })),
    };
  }

  /** Whether a selection on an abstract type has fragments for narrower types (then it needs variants). */
  private narrows(parent: GraphQLCompositeType, sets: readonly SelectionSetNode[]): boolean {
    for (const set of sets) {
      for (const sel of set.selections) {
        if (sel.kind === Kind.FIELD) continue;
        const fragment = sel.kind === Kind.FRAGMENT_SPREAD ? this.fragments.get(sel.name.value) : sel;
        const condition = fragment?.typeCondition?.name.value;
        if (condition !== undefined && condition !== parent.name) return true;
        if (fragment && this.narrows(parent, [fragment.selectionSet])) return true;
      }
    }
    return false;
  }

  private applies(
    condition: string | undefined,
    parent: GraphQLCompositeType,
    runtime: GraphQLObjectType | undefined,
  ) {
    if (condition === undefined || condition === parent.name) return true;
    if (!runtime) return false;
    if (condition === runtime.name) return true;
    const type = this.schema.getType(condition);
    return type !== undefined && isAbstractType(type) && this.schema.isSubType(type, runtime);
  }

  private collect(
    parent: GraphQLCompositeType,
    runtime: GraphQLObjectType | undefined,
    sets: readonly SelectionSetNode[],
    inConditional = false,
    out = new Map<string, Collected>(),
  ): Map<string, Collected> {
    for (const set of sets) {
      for (const sel of set.selections) {
        if (sel.kind === Kind.FIELD) {
          const key = sel.alias?.value ?? sel.name.value;
          const optional = inConditional || conditional(sel.directives);
          const seen = out.get(key);
          if (seen) {
            seen.nodes.push(sel);
            seen.optional &&= optional;
          } else out.set(key, { fieldName: sel.name.value, nodes: [sel], optional });
          continue;
        }
        const fragment = sel.kind === Kind.FRAGMENT_SPREAD ? this.fragments.get(sel.name.value) : sel;
        if (!fragment)
          throw new Error(
            `Fragment ${sel.kind === Kind.FRAGMENT_SPREAD ? sel.name.value : ''} is not defined.`,
          );
        if (!this.applies(fragment.typeCondition?.name.value, parent, runtime)) continue;
        this.collect(
          parent,
          runtime,
          [fragment.selectionSet],
          inConditional || conditional(sel.directives),
          out,
        );
      }
    }
    return out;
  }

  private fieldsOf(owner: GraphQLCompositeType, collected: Map<string, Collected>): ResultField[] {
    const fields: ResultField[] = [];
    for (const [responseName, { fieldName, nodes, optional }] of collected) {
      if (fieldName === '__typename') {
        const names = isObjectType(owner)
          ? [owner.name]
          : [...this.schema.getPossibleTypes(owner)].map((t) => t.name).sort();
        fields.push({
          responseName,
          fieldName,
          type: { kind: 'NON_NULL', ofType: { kind: 'TYPENAME', names } },
          optional,
        });
        continue;
      }
      const def = 'getFields' in owner ? owner.getFields()[fieldName] : undefined;
      if (!def) throw new Error(`${owner.name} has no field ${fieldName}.`);
      const sub = nodes.flatMap((n) => (n.selectionSet ? [n.selectionSet] : []));
      const description = descriptionOf(def);
      const deprecationReason = deprecationOf(def as GraphQLField<unknown, unknown>);
      fields.push({
        responseName,
        fieldName,
        type: this.outputRef(def.type, sub),
        optional,
        ...(description ? { description } : {}),
        ...(deprecationReason ? { deprecationReason } : {}),
      });
    }
    return fields;
  }

  private outputRef(type: GraphQLOutputType, sub: readonly SelectionSetNode[]): OutputTypeRef {
    if (isNonNullType(type)) return { kind: 'NON_NULL', ofType: this.outputRef(type.ofType, sub) };
    if (isListType(type))
      return { kind: 'LIST', ofType: this.outputRef(type.ofType as GraphQLOutputType, sub) };
    if (isScalarType(type)) return { kind: 'SCALAR', name: type.name };
    if (isEnumType(type)) return { kind: 'ENUM', name: type.name };
    const named = getNamedType(type);
    if (isCompositeType(named)) return { kind: 'OBJECT', shape: this.shapeOf(named, sub) };
    throw new Error(`Unexpected output type ${String(type)}.`);
  }
}

/**
 * The API schema that @apollo/composition derives drops custom directive applications, but clients need the
 * @privacy class of every input field and argument (docs/architecture.md#schema-conventions: kept through composition). This copies the
 * directive definition and its applications from the supergraph into the API schema document.
 */
import {
  Kind,
  parse,
  print,
  visit,
  type ConstDirectiveNode,
  type DefinitionNode,
  type DocumentNode,
} from 'graphql';

const PRIVACY = 'privacy';

function collect(supergraph: DocumentNode): {
  definitions: DefinitionNode[];
  byCoordinate: Map<string, ConstDirectiveNode>;
} {
  const byCoordinate = new Map<string, ConstDirectiveNode>();
  const definitions: DefinitionNode[] = [];
  for (const def of supergraph.definitions) {
    if (def.kind === Kind.DIRECTIVE_DEFINITION && def.name.value === PRIVACY) definitions.push(def);
    if (def.kind === Kind.INPUT_OBJECT_TYPE_DEFINITION) {
      for (const f of def.fields ?? []) {
        const d = f.directives?.find((x) => x.name.value === PRIVACY);
        if (d) byCoordinate.set(`${def.name.value}.${f.name.value}`, d);
      }
    }
    if (def.kind === Kind.OBJECT_TYPE_DEFINITION) {
      for (const f of def.fields ?? []) {
        for (const a of f.arguments ?? []) {
          const d = a.directives?.find((x) => x.name.value === PRIVACY);
          if (d) byCoordinate.set(`${def.name.value}.${f.name.value}(${a.name.value}:)`, d);
        }
      }
    }
  }
  return { definitions, byCoordinate };
}

export function addPrivacyToApiSchema(apiSdl: string, supergraphSdl: string): string {
  const { definitions, byCoordinate } = collect(parse(supergraphSdl));
  const api = visit(parse(apiSdl), {
    InputValueDefinition(node, _key, _parent, _path, ancestors) {
      type Named = { kind: Kind; name: { value: string } };
      const owners = (ancestors as readonly unknown[]).filter(
        (a): a is Named => !Array.isArray(a) && typeof a === 'object' && a !== null && 'name' in a,
      );
      const owner = owners.at(-1);
      if (!owner) return undefined;
      const coordinate =
        owner.kind === Kind.FIELD_DEFINITION
          ? `${owners.at(-2)?.name.value}.${owner.name.value}(${node.name.value}:)`
          : `${owner.name.value}.${node.name.value}`;
      const d = byCoordinate.get(coordinate);
      if (!d || node.directives?.some((x) => x.name.value === PRIVACY)) return undefined;
      return { ...node, directives: [...(node.directives ?? []), d] };
    },
  });
  return print({ ...api, definitions: [...definitions, ...api.definitions] });
}

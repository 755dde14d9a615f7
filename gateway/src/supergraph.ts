/**
 * What the gateway reads from the composed supergraph besides what @apollo/gateway does with it: which subgraph owns
 * each root Subscription field (from the join__type / join__field directives), and each subgraph's own schema (from
 * its SDL in schemas/<name>.graphql) so a forwarded subscription can be checked against what the owner can resolve.
 */
import { readFileSync } from 'node:fs';
import { buildSubgraphSchema } from '@apollo/subgraph';
import { schemaFileOf, type SubgraphName } from '@agentgraph/runtime';
import {
  Kind,
  parse,
  type ConstDirectiveNode,
  type DocumentNode,
  type GraphQLSchema,
  type ObjectTypeDefinitionNode,
} from 'graphql';

export const SUPERGRAPH_FILE = new URL('../../schemas/supergraph.graphql', import.meta.url).pathname;

export function readSupergraphSdl(file = SUPERGRAPH_FILE): string {
  return readFileSync(file, 'utf8');
}

function enumArg(directive: ConstDirectiveNode, name: string): string | undefined {
  const arg = directive.arguments?.find((a) => a.name.value === name);
  return arg?.value.kind === Kind.ENUM ? arg.value.value : undefined;
}

function stringArg(directive: ConstDirectiveNode, name: string): string | undefined {
  const arg = directive.arguments?.find((a) => a.name.value === name);
  return arg?.value.kind === Kind.STRING ? arg.value.value : undefined;
}

/**
 * Root Subscription field name → name of the subgraph that resolves it. A field's own @join__field(graph:) wins; a
 * field without one belongs to the single graph its type is joined to.
 */
export function subscriptionOwners(supergraphSdl: string | DocumentNode): Map<string, string> {
  const doc = typeof supergraphSdl === 'string' ? parse(supergraphSdl) : supergraphSdl;
  const graphNames = new Map<string, string>();
  let subscriptionType = 'Subscription';
  const objects = new Map<string, ObjectTypeDefinitionNode>();
  for (const def of doc.definitions) {
    if (def.kind === Kind.ENUM_TYPE_DEFINITION && def.name.value === 'join__Graph') {
      for (const value of def.values ?? []) {
        const d = value.directives?.find((x) => x.name.value === 'join__graph');
        const name = d && stringArg(d, 'name');
        if (name) graphNames.set(value.name.value, name);
      }
    } else if (def.kind === Kind.SCHEMA_DEFINITION) {
      const op = def.operationTypes.find((o) => o.operation === 'subscription');
      if (op) subscriptionType = op.type.name.value;
    } else if (def.kind === Kind.OBJECT_TYPE_DEFINITION) {
      objects.set(def.name.value, def);
    }
  }
  const owners = new Map<string, string>();
  const type = objects.get(subscriptionType);
  if (!type) return owners;
  const typeGraphs = (type.directives ?? [])
    .filter((d) => d.name.value === 'join__type')
    .map((d) => enumArg(d, 'graph'))
    .filter((g): g is string => !!g);
  for (const field of type.fields ?? []) {
    const fieldGraphs = (field.directives ?? [])
      .filter((d) => d.name.value === 'join__field')
      .map((d) => enumArg(d, 'graph'))
      .filter((g): g is string => !!g);
    const graphs = fieldGraphs.length ? fieldGraphs : typeGraphs;
    const graph = graphs[0];
    if (graphs.length !== 1 || !graph) continue; // a subscription field resolved by several graphs is not forwardable
    const name = graphNames.get(graph);
    if (name) owners.set(field.name.value, name);
  }
  return owners;
}

/** The subgraph's own schema (federation directives understood), built from schemas/<name>.graphql without resolvers. */
export function subgraphSchemaOf(name: SubgraphName, file = schemaFileOf(name)): GraphQLSchema {
  return buildSubgraphSchema({ typeDefs: parse(readFileSync(file, 'utf8')) });
}

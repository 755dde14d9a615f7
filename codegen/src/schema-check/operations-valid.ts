/** Every curated operation in schemas/operations/ still validates against the composed API schema. */
import { Kind, NoUnusedFragmentsRule, parse, specifiedRules, validate, type GraphQLSchema } from 'graphql';
import type { FragmentDefinitionNode } from 'graphql';
import type { OperationFile } from '../sdk/inputs.js';
import type { Violation } from './rules.js';

export function validateOperations(schema: GraphQLSchema, files: readonly OperationFile[]): Violation[] {
  const out: Violation[] = [];
  const parsed = files.map((f) => {
    try {
      return { file: f, doc: parse(f.text) };
    } catch (err) {
      out.push({
        rule: 'operation',
        coordinate: f.path,
        message: `does not parse: ${(err as Error).message}`,
      });
      return undefined;
    }
  });
  const fragments = parsed.flatMap((p) =>
    (p?.doc.definitions ?? []).filter(
      (d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION,
    ),
  );
  const rules = specifiedRules.filter((r) => r !== NoUnusedFragmentsRule);
  for (const p of parsed) {
    if (!p) continue;
    const own = new Set(
      p.doc.definitions.filter((d) => d.kind === Kind.FRAGMENT_DEFINITION).map((d) => d.name.value),
    );
    const doc = {
      ...p.doc,
      definitions: [...p.doc.definitions, ...fragments.filter((f) => !own.has(f.name.value))],
    };
    for (const e of validate(schema, doc, rules)) {
      const loc = e.locations?.[0];
      out.push({
        rule: 'operation',
        coordinate: loc ? `${p.file.path}:${loc.line}` : p.file.path,
        message: `no longer validates: ${e.message}`,
      });
    }
  }
  return out;
}

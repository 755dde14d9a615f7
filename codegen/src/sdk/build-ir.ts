/**
 * Builds the IR: parse and validate the curated operations, add a default operation for every root field none of
 * them selects, then describe each operation (document text, variables, result shape, privacy table, connections,
 * idempotency) and the enums, input objects and scalars the operations use.
 */
import {
  buildSchema,
  type FragmentDefinitionNode,
  getNamedType,
  type GraphQLInputType,
  type GraphQLNamedType,
  type GraphQLSchema,
  isEnumType,
  isInputObjectType,
  isNonNullType,
  isScalarType,
  isSpecifiedScalarType,
  Kind,
  print,
  typeFromAST,
} from 'graphql';
import { connectionsOf } from './connections.js';
import { defaultOperationSource } from './default-operations.js';
import {
  documentText,
  parseGenerated,
  parseOperationFiles,
  type ParsedOperation,
  validateOperation,
} from './documents.js';
import { schemaVersionOf, type SdkInputs } from './inputs.js';
import type {
  EnumIR,
  InputObjectIR,
  IR,
  OperationIR,
  OperationKind,
  OutputTypeRef,
  ResultShape,
  ScalarIR,
  VariableIR,
} from './ir.js';
import { privacyTable } from './privacy.js';
import { ResultShaper } from './result-shape.js';
import { deprecationOf, descriptionOf, inputTypeRef, privacyOf, rootTypeOf } from './schema-info.js';

const KINDS: readonly OperationKind[] = ['query', 'mutation', 'subscription'];

/** The variable every mutation of the schema declares for its idempotency key (docs/architecture.md#schema-conventions). */
export const IDEMPOTENCY_KEY = 'idempotencyKey';

const byName = <T extends { name: string }>(a: T, b: T) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

function pascal(name: string): string {
  return name[0]!.toUpperCase() + name.slice(1);
}

function rootOf(schema: GraphQLSchema, kind: OperationKind) {
  const root = rootTypeOf(schema, kind);
  if (!root) throw new Error(`The schema has no ${kind} type, but an operation is a ${kind}.`);
  return root;
}

/** Root fields a mutation passes no `$idempotencyKey` to, though the field takes one. */
function checkIdempotencyKey(schema: GraphQLSchema, op: ParsedOperation): void {
  if (op.kind !== 'mutation') return;
  const root = rootOf(schema, 'mutation');
  for (const sel of op.node.selectionSet.selections) {
    if (sel.kind !== Kind.FIELD) continue;
    const def = root.getFields()[sel.name.value];
    if (!def?.args.some((a) => a.name === IDEMPOTENCY_KEY)) continue;
    const arg = sel.arguments?.find((a) => a.name.value === IDEMPOTENCY_KEY);
    if (arg?.value.kind !== Kind.VARIABLE || arg.value.name.value !== IDEMPOTENCY_KEY) {
      throw new Error(
        `${op.where}: ${op.name} must pass \`${IDEMPOTENCY_KEY}: $${IDEMPOTENCY_KEY}\` to ${sel.name.value} ` +
          `(declare \`$${IDEMPOTENCY_KEY}: ID!\`): the SDK makes one key per call in that variable and reuses it ` +
          `on retries.`,
      );
    }
  }
}

class TypeCollector {
  readonly enums = new Map<string, EnumIR>();
  readonly inputs = new Map<string, InputObjectIR>();
  readonly scalars = new Map<string, ScalarIR>();

  constructor(private readonly schema: GraphQLSchema) {}

  named(type: GraphQLNamedType): void {
    if (isScalarType(type)) {
      if (!isSpecifiedScalarType(type) && !this.scalars.has(type.name)) {
        const description = descriptionOf(type);
        this.scalars.set(type.name, { name: type.name, ...(description ? { description } : {}) });
      }
    } else if (isEnumType(type)) {
      if (this.enums.has(type.name)) return;
      const description = descriptionOf(type);
      this.enums.set(type.name, {
        name: type.name,
        ...(description ? { description } : {}),
        values: type.getValues().map((v) => {
          const d = descriptionOf(v);
          const dep = deprecationOf(v);
          return {
            name: v.name,
            ...(d ? { description: d } : {}),
            ...(dep ? { deprecationReason: dep } : {}),
          };
        }),
      });
    } else if (isInputObjectType(type)) {
      if (this.inputs.has(type.name)) return;
      const description = descriptionOf(type);
      const entry: InputObjectIR = { name: type.name, ...(description ? { description } : {}), fields: [] };
      this.inputs.set(type.name, entry);
      for (const f of Object.values(type.getFields())) {
        const d = descriptionOf(f);
        const cls = privacyOf(f);
        const dep = deprecationOf(f);
        const defaultValue = f.astNode?.defaultValue ? print(f.astNode.defaultValue) : undefined;
        entry.fields.push({
          name: f.name,
          type: inputTypeRef(f.type),
          ...(d ? { description: d } : {}),
          ...(cls ? { privacy: cls } : {}),
          ...(defaultValue !== undefined ? { defaultValue } : {}),
          ...(dep ? { deprecationReason: dep } : {}),
        });
        this.named(getNamedType(f.type));
      }
    }
  }

  output(type: OutputTypeRef): void {
    if (type.kind === 'NON_NULL' || type.kind === 'LIST') this.output(type.ofType);
    else if (type.kind === 'SCALAR' || type.kind === 'ENUM') this.named(this.schema.getType(type.name)!);
    else if (type.kind === 'OBJECT') this.shape(type.shape);
  }

  shape(shape: ResultShape): void {
    for (const f of shape.fields) this.output(f.type);
    for (const v of shape.variants ?? []) for (const f of v.fields) this.output(f.type);
  }
}

export function buildIR(inputs: SdkInputs): IR {
  const schema = buildSchema(inputs.apiSdl);
  const { operations: curated, fragments } = parseOperationFiles(inputs.operationFiles);
  const shaper = new ResultShaper(schema, fragments);

  const covered = new Set<string>();
  for (const op of curated) {
    validateOperation(schema, op);
    checkIdempotencyKey(schema, op);
    const root = rootOf(schema, op.kind);
    for (const f of shaper.shapeOf(root, [op.node.selectionSet]).fields)
      covered.add(`${op.kind}.${f.fieldName}`);
  }

  const taken = new Set(curated.map((op) => op.name));
  const all: Array<ParsedOperation & { defaultFor?: string }> = [...curated];
  for (const kind of KINDS) {
    const root = rootTypeOf(schema, kind);
    if (!root) continue;
    for (const field of Object.values(root.getFields())) {
      if (covered.has(`${kind}.${field.name}`)) continue;
      let name = pascal(field.name);
      if (taken.has(name)) name += pascal(kind);
      if (taken.has(name)) {
        throw new Error(
          `No name is left for the default ${kind} operation of ${root.name}.${field.name} (${pascal(field.name)} ` +
            `and ${name} are taken): write a curated operation for it in schemas/operations/.`,
        );
      }
      taken.add(name);
      const op = parseGenerated(defaultOperationSource(kind, name, field), `default operation ${name}`);
      validateOperation(schema, op); // a generator bug if it fails: say which document
      all.push({ ...op, defaultFor: `${root.name}.${field.name}` });
    }
  }
  all.sort(byName);

  const types = new TypeCollector(schema);
  const operations = all.map((op): OperationIR => {
    const root = rootOf(schema, op.kind);
    const result = shaper.shapeOf(root, [op.node.selectionSet]);
    types.shape(result);
    const rootFields = [...new Set(result.fields.map((f) => f.fieldName))].filter((f) => f !== '__typename');
    const rootDefs = rootFields.map((f) => root.getFields()[f]!);
    const idempotent =
      op.kind === 'mutation' &&
      (op.node.variableDefinitions ?? []).some((v) => v.variable.name.value === IDEMPOTENCY_KEY);
    const variables = (op.node.variableDefinitions ?? []).map((def): VariableIR => {
      const name = def.variable.name.value;
      const type = typeFromAST(schema, def.type) as GraphQLInputType;
      types.named(getNamedType(type));
      const defaultValue = def.defaultValue ? print(def.defaultValue) : undefined;
      return {
        name,
        type: inputTypeRef(type),
        typeText: print(def.type),
        ...(defaultValue !== undefined ? { defaultValue } : {}),
        required:
          isNonNullType(type) && defaultValue === undefined && !(idempotent && name === IDEMPOTENCY_KEY),
      };
    });
    const description = op.comment ?? (rootDefs.length === 1 ? descriptionOf(rootDefs[0]!) : undefined);
    const reasons = rootDefs.map((d) => deprecationOf(d));
    const deprecationReason =
      reasons.length > 0 && reasons.every((r) => r !== undefined) ? reasons[0] : undefined;
    const fragmentMap = new Map<string, FragmentDefinitionNode>(op.fragments.map((f) => [f.name.value, f]));
    return {
      name: op.name,
      kind: op.kind,
      document: documentText(op.node, op.fragments),
      origin: op.defaultFor
        ? { kind: 'default', field: op.defaultFor }
        : { kind: 'curated', file: op.where.replace(/:\d+$/, '') },
      ...(description ? { description } : {}),
      ...(deprecationReason ? { deprecationReason } : {}),
      rootFields,
      variables,
      result,
      idempotent,
      privacy: privacyTable(schema, op.node, op.fragments),
      connections: connectionsOf(root, op.node.selectionSet, result, fragmentMap),
    };
  });

  return {
    schemaVersion: schemaVersionOf(inputs.apiSdl),
    scalars: [...types.scalars.values()].sort(byName),
    enums: [...types.enums.values()].sort(byName),
    inputs: [...types.inputs.values()].sort(byName),
    operations,
    errors: inputs.errorTable.codes.map((c) => ({ ...c })),
  };
}

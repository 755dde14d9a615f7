/**
 * src/types.ts: the schema's custom scalars, enums and input objects that operations use, then per operation its
 * variables, its result, and the node type of each connection it pages through.
 */
import type { InputTypeRef, IR, OperationIR, OutputTypeRef, ResultField, ResultShape } from '../ir.js';
import { dataType, HEADER, jsdoc, key, nodeType, str, variablesType } from './names.js';

/** How custom scalars look in TypeScript; one not listed here is `unknown` until it is added. */
const CUSTOM_SCALARS: Readonly<Record<string, string>> = { DateTime: 'string' };
const BUILT_IN: Readonly<Record<string, string>> = {
  ID: 'string',
  String: 'string',
  Int: 'number',
  Float: 'number',
  Boolean: 'boolean',
};

function scalar(name: string): string {
  return BUILT_IN[name] ?? name; // custom scalars are exported aliases
}

export function inputType(type: InputTypeRef, nullable = true): string {
  if (type.kind === 'NON_NULL') return inputType(type.ofType, false);
  const base =
    type.kind === 'LIST'
      ? `Array<${inputType(type.ofType)}>`
      : type.kind === 'SCALAR'
        ? scalar(type.name)
        : type.name;
  return nullable ? `${base} | null` : base;
}

function outputType(type: OutputTypeRef, nullable = true): string {
  if (type.kind === 'NON_NULL') return outputType(type.ofType, false);
  let base: string;
  switch (type.kind) {
    case 'LIST':
      base = `Array<${outputType(type.ofType)}>`;
      break;
    case 'SCALAR':
      base = scalar(type.name);
      break;
    case 'ENUM':
      base = type.name;
      break;
    case 'TYPENAME':
      base = type.names.map(str).join(' | ');
      break;
    case 'OBJECT':
      base = shapeType(type.shape);
      break;
  }
  return nullable ? `${base} | null` : base;
}

function fieldsType(fields: readonly ResultField[]): string {
  if (fields.length === 0) return 'Record<string, never>';
  const props = fields.map(
    (f) =>
      jsdoc([f.description, f.deprecationReason ? `@deprecated ${f.deprecationReason}` : undefined]) +
      `${key(f.responseName)}${f.optional ? '?' : ''}: ${outputType(f.type)};`,
  );
  return `{\n${props.join('\n')}\n}`;
}

function shapeType(shape: ResultShape): string {
  if (!shape.variants) return fieldsType(shape.fields);
  return shape.variants.map((v) => fieldsType(v.fields)).join(' | ');
}

function isOptionalInput(type: InputTypeRef, defaultValue: string | undefined): boolean {
  return type.kind !== 'NON_NULL' || defaultValue !== undefined;
}

/** `DevicesData['tenant']['devices']['edges'][number]['node']`, NonNullable where a step may be null. */
function nodeTypeExpression(op: OperationIR, index: number): string {
  const c = op.connections[index]!;
  let expr = dataType(op);
  c.path.forEach((step, i) => {
    expr = `${expr}[${str(step)}]`;
    if (c.nullable[i]) expr = `NonNullable<${expr}>`;
  });
  return `NonNullable<NonNullable<${expr}['edges']>[number]>['node']`;
}

function variablesTypeOf(op: OperationIR): string {
  if (op.variables.length === 0) return 'Record<string, never>';
  const props = op.variables.map((v) => {
    const optional = !v.required;
    const type = inputType(v.type);
    const doc =
      op.idempotent && v.name === 'idempotencyKey'
        ? jsdoc(['Made by the SDK once per call when absent (or pass `options.idempotencyKey`).'])
        : '';
    return `${doc}${key(v.name)}${optional ? '?' : ''}: ${type};`;
  });
  return `{\n${props.join('\n')}\n}`;
}

export function renderTypes(ir: IR): string {
  const out: string[] = [HEADER, ''];
  for (const s of ir.scalars) {
    out.push(jsdoc([s.description]) + `export type ${s.name} = ${CUSTOM_SCALARS[s.name] ?? 'unknown'};`, '');
  }
  for (const e of ir.enums) {
    const values = e.values.map((v) => str(v.name)).join(' | ');
    out.push(jsdoc([e.description]) + `export type ${e.name} = ${values};`, '');
    out.push(`export const ${e.name}Values = [${e.values.map((v) => str(v.name)).join(', ')}] as const;`, '');
  }
  for (const input of ir.inputs) {
    const props = input.fields.map((f) => {
      const doc = jsdoc([
        f.description,
        f.privacy ? `Data class: ${f.privacy}.` : undefined,
        f.defaultValue !== undefined ? `@defaultValue ${f.defaultValue}` : undefined,
        f.deprecationReason ? `@deprecated ${f.deprecationReason}` : undefined,
      ]);
      const optional = isOptionalInput(f.type, f.defaultValue);
      return `${doc}${key(f.name)}${optional ? '?' : ''}: ${inputType(f.type)};`;
    });
    out.push(jsdoc([input.description]) + `export type ${input.name} = {\n${props.join('\n')}\n};`, '');
  }
  for (const op of ir.operations) {
    out.push(
      jsdoc([`Variables of the ${op.kind} ${op.name}.`]) +
        `export type ${variablesType(op)} = ${variablesTypeOf(op)};`,
      '',
    );
    out.push(
      jsdoc([`Result of the ${op.kind} ${op.name}.`]) +
        `export type ${dataType(op)} = ${shapeType(op.result)};`,
      '',
    );
    op.connections.forEach((c, i) => {
      out.push(
        jsdoc([`A node of ${op.name}'s connection ${c.path.join('.')}.`]) +
          `export type ${nodeType(op, c)} = ${nodeTypeExpression(op, i)};`,
        '',
      );
    });
  }
  return out.join('\n');
}

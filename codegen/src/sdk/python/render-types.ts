/**
 * agentgraph/types.py: custom scalars (aliases), enums (str Enums), input objects (dataclasses), and per operation
 * its result as dataclasses, one per object selection, named after the path from the operation
 * (`RoomsData`, `RoomsDataRooms`, ...). A selection on an abstract type with type conditions stays a dict.
 */
import type { InputTypeRef, IR, OperationIR, OutputTypeRef, ResultField, ResultShape } from '../ir.js';
import { doc, HEADER, identifier, pyName, str, uniquePyNames, upperFirst } from './names.js';

const BUILT_IN: Readonly<Record<string, string>> = {
  ID: 'str',
  String: 'str',
  Int: 'int',
  Float: 'float',
  Boolean: 'bool',
};

const scalar = (name: string) => BUILT_IN[name] ?? name;

export function inputType(type: InputTypeRef, nullable = true): string {
  if (type.kind === 'NON_NULL') return inputType(type.ofType, false);
  const base =
    type.kind === 'LIST'
      ? `List[${inputType(type.ofType)}]`
      : type.kind === 'SCALAR'
        ? scalar(type.name)
        : `"${type.name}"`;
  return nullable ? `Optional[${base}]` : base;
}

function field(name: string, type: string, optional: boolean): string {
  const id = pyName(name);
  const meta = id === name ? '' : `metadata={"graphql": ${str(name)}}`;
  // dataclasses.field as _field: a GraphQL field named `field` (PutMemoriesError.field) would shadow it.
  if (optional) return `    ${id}: ${type} = _field(default=None${meta ? `, ${meta}` : ''})\n`;
  return meta ? `    ${id}: ${type} = _field(${meta})\n` : `    ${id}: ${type}\n`;
}

function enums(ir: IR): string[] {
  return ir.enums.map(
    (e) =>
      `class ${e.name}(str, Enum):\n` +
      doc([e.description ?? `The ${e.name} enum.`], '    ') +
      e.values.map((v) => `    ${identifier(v.name)} = ${str(v.name)}\n`).join('') +
      '\n',
  );
}

function inputs(ir: IR): string[] {
  return ir.inputs.map((input) => {
    uniquePyNames(
      input.fields.map((f) => f.name),
      `input ${input.name}`,
    );
    const required = input.fields.filter((f) => f.type.kind === 'NON_NULL' && f.defaultValue === undefined);
    const optional = input.fields.filter((f) => !required.includes(f));
    const lines = [
      ...required.map((f) => field(f.name, inputType(f.type), false)),
      ...optional.map((f) =>
        field(f.name, inputType(f.type).replace(/^(?!Optional)(.*)$/, 'Optional[$1]'), true),
      ),
    ];
    const privacy = input.fields
      .filter((f) => f.privacy)
      .map((f) => `${f.name}: ${f.privacy}`)
      .join(', ');
    return (
      '@dataclass\n' +
      `class ${input.name}:\n` +
      doc(
        [
          input.description ?? `The ${input.name} input.`,
          privacy ? `Privacy classes: ${privacy}.` : undefined,
        ],
        '    ',
      ) +
      (lines.length ? lines.join('') : '    pass\n') +
      '\n'
    );
  });
}

function outputType(type: OutputTypeRef, name: string, out: string[], nullable = true): string {
  let base: string;
  switch (type.kind) {
    case 'NON_NULL':
      return outputType(type.ofType, name, out, false);
    case 'LIST':
      base = `List[${outputType(type.ofType, name, out)}]`;
      break;
    case 'SCALAR':
      base = scalar(type.name);
      break;
    case 'ENUM':
      base = `"${type.name}"`;
      break;
    case 'TYPENAME':
      base = 'str';
      break;
    case 'OBJECT':
      if (type.shape.variants) base = 'Dict[str, Any]';
      else {
        base = `"${name}"`;
        out.push(model(name, type.shape, out));
      }
      break;
  }
  return nullable ? `Optional[${base}]` : base;
}

function model(name: string, shape: ResultShape, out: string[]): string {
  uniquePyNames(
    shape.fields.map((f) => f.responseName),
    `result type ${name}`,
  );
  const fields = shape.fields.map((f: ResultField) => {
    let type = outputType(f.type, `${name}${upperFirst(f.responseName)}`, out);
    if ((f.optional || f.deprecationReason) && !type.startsWith('Optional[')) type = `Optional[${type}]`;
    return field(f.responseName, type, type.startsWith('Optional['));
  });
  // Required fields first (a dataclass rule); the JSON decoder fills every field by name.
  const sorted = [
    ...fields.filter((f) => !f.includes('= _field(default')),
    ...fields.filter((f) => f.includes('= _field(default')),
  ];
  return (
    '@dataclass\n' +
    `class ${name}:\n` +
    doc([`A ${shape.typeName} as ${name} selects it.`], '    ') +
    (sorted.length ? sorted.join('') : '    pass\n') +
    '\n'
  );
}

/**
 * The Python type of the nodes of a connection: the dataclass the result types name after the path
 * (`RoomsDataRoomsEdgesNode`), or `Dict[str, Any]` for a node selected with type conditions.
 */
export function connectionNodeType(op: OperationIR, path: readonly string[]): string {
  let name = `${op.name}Data`;
  let shape: ResultShape = op.result;
  for (const key of [...path, 'edges', 'node']) {
    const f = shape.fields.find((x) => x.responseName === key);
    let type = f?.type;
    while (type && (type.kind === 'NON_NULL' || type.kind === 'LIST')) type = type.ofType;
    if (!f || !type || type.kind !== 'OBJECT')
      throw new Error(`${op.name}: no object selection at ${[...path, 'edges', 'node'].join('.')}`);
    if (type.shape.variants) return 'Dict[str, Any]';
    name = `${name}${upperFirst(f.responseName)}`;
    shape = type.shape;
  }
  return name;
}

function results(op: OperationIR): string[] {
  const out: string[] = [];
  out.push(model(`${op.name}Data`, op.result, out));
  return out.reverse();
}

export function renderTypes(ir: IR): string {
  return [
    HEADER,
    '"""Enums, inputs and operation results of the AgentGraph API, as dataclasses."""',
    'from __future__ import annotations',
    '',
    'from dataclasses import dataclass, field as _field',
    'from enum import Enum',
    'from typing import Any, Dict, List, Optional',
    '',
    ...ir.scalars.map(
      (s) => `${s.name} = str\n${s.description ? `"""${s.description.replace(/"""/g, '')}"""\n` : ''}`,
    ),
    '',
    ...enums(ir),
    ...inputs(ir),
    ...ir.operations.flatMap(results),
  ].join('\n');
}

/**
 * Generated/Types.g.cs: enums and input records used by the operations' variables, and per operation a record
 * tree for its result (`<Op>Data`, nested records named by their path). Selections on abstract types with
 * type-conditioned variants are kept as JsonNode (the caller reads `__typename`).
 */
import type { InputTypeRef, IR, OperationIR, OutputTypeRef, ResultField, ResultShape } from '../ir.js';
import { enumMember, HEADER, NAMESPACE, str, summary, upperFirst } from './names.js';

const SCALARS: Readonly<Record<string, string>> = {
  ID: 'string',
  String: 'string',
  Int: 'int',
  Float: 'double',
  Boolean: 'bool',
  DateTime: 'string',
};

function scalar(name: string): string {
  return SCALARS[name] ?? 'JsonNode';
}

/** The C# type of an input position. */
export function inputType(type: InputTypeRef, nullable = true): string {
  if (type.kind === 'NON_NULL') return inputType(type.ofType, false);
  const base =
    type.kind === 'LIST'
      ? `IReadOnlyList<${inputType(type.ofType)}>`
      : type.kind === 'SCALAR'
        ? scalar(type.name)
        : type.name;
  return nullable ? `${base}?` : base;
}

/**
 * Enums: PascalCase members (`DataClass.Public`, `IN_PROGRESS` → `InProgress`) with the schema's names kept on the
 * wire by a generated converter (an exact switch both ways: works on net8.0, where JsonStringEnumMemberName does not
 * exist, and round-trips every value; an unknown name is a JsonException naming the enum and the value), and one
 * `WireName()` per enum in `AgentGraphEnums` for code that compares results (enum fields of results stay strings, so
 * a value the server adds later never breaks an older client).
 */
function enums(ir: IR): string[] {
  const types = ir.enums.map((e) => {
    const members = e.values.map((v) => ({ ...v, member: enumMember(v.name) }));
    const known = members.map((m) => m.name).join(', ');
    const converter =
      summary([`Reads and writes ${e.name} as the schema's names (${known}).`]) +
      `public sealed class ${e.name}JsonConverter : JsonConverter<${e.name}>\n{\n` +
      summary(['The member of a schema name.'], '    ') +
      `    public override ${e.name} Read(ref Utf8JsonReader reader, Type typeToConvert, JsonSerializerOptions options) => reader.GetString() switch\n    {\n` +
      members.map((m) => `        ${str(m.name)} => ${e.name}.${m.member},\n`).join('') +
      `        var other => throw new JsonException($"Unknown ${e.name} value \\"{other}\\" (known: ${known}): the server may be newer than this SDK; update AgentGraph.Sdk."),\n    };\n\n` +
      summary(['The schema name of a member.'], '    ') +
      `    public override void Write(Utf8JsonWriter writer, ${e.name} value, JsonSerializerOptions options)\n    {\n` +
      '        ArgumentNullException.ThrowIfNull(writer);\n' +
      '        writer.WriteStringValue(value.WireName());\n    }\n}\n';
    return (
      summary([e.description], '', `The ${e.name} enum.`) +
      `[JsonConverter(typeof(${e.name}JsonConverter))]\n` +
      `public enum ${e.name}\n{\n` +
      members
        .map(
          (v) =>
            summary([v.description, `Wire name: ${v.name}.`], '    ', v.name) +
            (v.deprecationReason ? `    [Obsolete(${JSON.stringify(v.deprecationReason)})]\n` : '') +
            `    ${v.member},\n`,
        )
        .join('') +
      '}\n\n' +
      converter
    );
  });
  const wireNames =
    summary(["The schema's name of each generated enum member (what the server sends and expects)."]) +
    'public static class AgentGraphEnums\n{\n' +
    ir.enums
      .map(
        (e) =>
          summary([`The schema name of a ${e.name}, e.g. ${e.values[0]?.name ?? ''}.`], '    ') +
          `    public static string WireName(this ${e.name} value) => value switch\n    {\n` +
          e.values.map((v) => `        ${e.name}.${enumMember(v.name)} => ${str(v.name)},\n`).join('') +
          `        _ => throw new ArgumentOutOfRangeException(nameof(value), value, "Not a ${e.name}."),\n    };\n`,
      )
      .join('\n') +
    '}\n';
  return ir.enums.length ? [...types, wireNames] : [];
}

function inputs(ir: IR): string[] {
  return ir.inputs.map((input) => {
    const props = input.fields.map((f) => {
      const type = inputType(f.type);
      const required = f.type.kind === 'NON_NULL' && f.defaultValue === undefined;
      return (
        summary([f.description, f.privacy ? `Privacy class: ${f.privacy}.` : undefined], '    ', f.name) +
        `    [JsonPropertyName(${JSON.stringify(f.name)})]\n` +
        (required ? '' : '    [JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)]\n') +
        `    public ${required ? 'required ' : ''}${required ? inputType(f.type) : type} ${upperFirst(f.name)} { get; init; }\n`
      );
    });
    return (
      summary([input.description], '', `The ${input.name} input.`) +
      `public sealed record ${input.name}\n{\n${props.join('\n')}}\n`
    );
  });
}

/** Result records: one per object selection, named after its path from the operation. */
function outputType(type: OutputTypeRef, name: string, out: string[], nullable = true): string {
  let base: string;
  switch (type.kind) {
    case 'NON_NULL':
      return outputType(type.ofType, name, out, false);
    case 'LIST':
      base = `IReadOnlyList<${outputType(type.ofType, name, out)}>`;
      break;
    case 'SCALAR':
      base = scalar(type.name);
      break;
    case 'ENUM':
      base = 'string';
      break;
    case 'TYPENAME':
      base = 'string';
      break;
    case 'OBJECT':
      base = type.shape.variants ? 'JsonNode' : name;
      if (!type.shape.variants) out.push(record(name, type.shape, out));
      break;
  }
  return nullable ? `${base}?` : base;
}

function record(name: string, shape: ResultShape, out: string[]): string {
  const props = shape.fields.map((f: ResultField) => {
    let type = outputType(f.type, `${name}${upperFirst(f.responseName)}`, out);
    // Optional (skip/include) and deprecated fields may be absent: nullable, not `required`.
    if ((f.optional || f.deprecationReason) && !type.endsWith('?')) type = `${type}?`;
    const required = type.endsWith('?') ? '' : 'required ';
    return (
      summary([f.description], '    ', f.fieldName) +
      (f.deprecationReason ? `    [Obsolete(${JSON.stringify(f.deprecationReason)})]\n` : '') +
      `    [JsonPropertyName(${JSON.stringify(f.responseName)})]\n` +
      `    public ${required}${type} ${upperFirst(f.responseName)} { get; init; }\n`
    );
  });
  return (
    summary([], '', `A ${shape.typeName} as ${name} selects it.`) +
    `public sealed record ${name}\n{\n${props.join('\n')}}\n`
  );
}

function results(op: OperationIR): string[] {
  const out: string[] = [];
  out.push(record(`${op.name}Data`, op.result, out));
  return out.reverse();
}

export function renderTypes(ir: IR): string {
  return [
    HEADER,
    '#nullable enable',
    '#pragma warning disable CS0618 // generated code mentions deprecated members',
    'using System.Text.Json;',
    'using System.Text.Json.Nodes;',
    'using System.Text.Json.Serialization;',
    '',
    `namespace ${NAMESPACE};`,
    '',
    ...enums(ir),
    ...inputs(ir),
    ...ir.operations.flatMap(results),
  ].join('\n');
}

/**
 * Generated/Operations.g.cs: every operation as the runtime takes it (name, document, kind, idempotent, privacy
 * table). The documents are the exact text the TypeScript SDK sends, so the manifest hashes match.
 */
import type { IR, OperationIR } from '../ir.js';
import { enumMember, HEADER, NAMESPACE, str, summary } from './names.js';

const KIND = { query: 'Query', mutation: 'Mutation', subscription: 'Subscription' } as const;

function privacy(op: OperationIR): string {
  const entries = Object.entries(op.privacy);
  if (entries.length === 0) return 'new Dictionary<string, PrivacyRule>()';
  return (
    'new Dictionary<string, PrivacyRule>\n        {\n' +
    entries
      .map(
        ([path, rule]) =>
          `            [${str(path)}] = new(DataClass.${enumMember(rule.class)}, ${rule.required}),`,
      )
      .join('\n') +
    '\n        }'
  );
}

function entry(op: OperationIR): string {
  const origin =
    op.origin.kind === 'curated'
      ? `From ${op.origin.file}.`
      : `Default operation for ${op.origin.field} (no curated operation selects it).`;
  return (
    summary([op.description, origin], '    ') +
    `    public static OperationSpec ${op.name} { get; } = new(\n` +
    `        ${str(op.name)},\n        ${str(op.document)},\n        OperationKind.${KIND[op.kind]},\n` +
    `        ${op.kind === 'mutation' && op.idempotent},\n        ${privacy(op)});\n`
  );
}

export function renderOperations(ir: IR): string {
  return [
    HEADER,
    '#nullable enable',
    `namespace ${NAMESPACE};`,
    '',
    summary(['Every operation, by name (the outbox looks entries up by name with ByName).']) +
      'public static class AgentGraphOperations\n{',
    summary(
      ['The schema version (capabilities.schemaVersion) these operations were generated from.'],
      '    ',
    ) + `    public const string SchemaVersion = ${str(ir.schemaVersion)};`,
    '',
    ...ir.operations.map(entry),
    summary(['Every operation by name.'], '    ') +
      '    public static IReadOnlyDictionary<string, OperationSpec> ByName { get; } = new Dictionary<string, OperationSpec>\n    {',
    ...ir.operations.map((op) => `        [${str(op.name)}] = ${op.name},`),
    '    };',
    '}',
    '',
  ].join('\n');
}

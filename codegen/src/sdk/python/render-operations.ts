/**
 * agentgraph/operations.py: every operation as the runtime takes it (name, document, kind, idempotent, privacy
 * table). The documents are the exact text the TypeScript SDK sends, so the manifest hashes match.
 */
import type { IR, OperationIR } from '../ir.js';
import { HEADER, str } from './names.js';

function privacy(op: OperationIR): string {
  const entries = Object.entries(op.privacy);
  if (entries.length === 0) return '{}';
  return `{\n${entries
    .map(
      ([path, rule]) =>
        `        ${str(path)}: PrivacyRule(${str(rule.class)}, ${rule.required ? 'True' : 'False'}),\n`,
    )
    .join('')}    }`;
}

function entry(op: OperationIR): string {
  const origin =
    op.origin.kind === 'curated'
      ? `From ${op.origin.file}.`
      : `Default operation for ${op.origin.field} (no curated operation selects it).`;
  return (
    `# ${origin}\n` +
    `${op.name} = OperationSpec(\n    ${str(op.name)},\n    ${str(op.document)},\n    ${str(op.kind)},\n` +
    `    ${op.kind === 'mutation' && op.idempotent ? 'True' : 'False'},\n    ${privacy(op)},\n)\n`
  );
}

export function renderOperations(ir: IR): string {
  return [
    HEADER,
    '"""Every operation, by name (the outbox looks entries up by name in BY_NAME)."""',
    'from typing import Dict',
    '',
    'from agentgraph_runtime.client import OperationSpec',
    'from agentgraph_runtime.privacy import PrivacyRule',
    '',
    '#: The schema version (capabilities.schemaVersion) these operations were generated from.',
    `SCHEMA_VERSION = ${str(ir.schemaVersion)}`,
    '',
    ...ir.operations.map(entry),
    'BY_NAME: Dict[str, OperationSpec] = {',
    ...ir.operations.map((op) => `    ${str(op.name)}: ${op.name},`),
    '}',
    '',
  ].join('\n');
}

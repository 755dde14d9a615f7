/**
 * src/operations.ts: every operation as the runtime takes it (name, document, kind, idempotent, privacy table).
 * The documents are the exact text sent, whose SHA-256 is in schemas/operations.manifest.json.
 */
import type { IR, OperationIR } from '../ir.js';
import { HEADER, jsdoc, key, str } from './names.js';

function origin(op: OperationIR): string {
  return op.origin.kind === 'curated'
    ? `From ${op.origin.file}.`
    : `Default operation for ${op.origin.field} (no curated operation selects it).`;
}

function privacyLiteral(op: OperationIR): string {
  const entries = Object.entries(op.privacy).map(
    ([path, rule]) => `${key(path)}: { class: ${str(rule.class)}, required: ${rule.required} },`,
  );
  return entries.length === 0 ? '{}' : `{\n${entries.join('\n')}\n}`;
}

function entry(op: OperationIR): string {
  return (
    jsdoc([op.description, '', origin(op)]) +
    `${op.name}: {\n` +
    `name: ${str(op.name)},\n` +
    `kind: ${str(op.kind)},\n` +
    (op.kind === 'subscription' ? '' : `idempotent: ${op.idempotent},\n`) +
    `document: ${str(op.document)},\n` +
    `privacy: ${privacyLiteral(op)},\n` +
    `},`
  );
}

export function renderOperations(ir: IR): string {
  const requests = ir.operations.filter((op) => op.kind !== 'subscription');
  const streams = ir.operations.filter((op) => op.kind === 'subscription');
  return [
    HEADER,
    "import type { OperationSpec, SubscriptionSpec } from '@agentgraph/sdk-runtime';",
    '',
    `/** The schema version (capabilities.schemaVersion) these operations were generated from. */`,
    `export const SCHEMA_VERSION = ${str(ir.schemaVersion)};`,
    '',
    jsdoc([
      'Every query and mutation, by name, as AgentGraphClient.execute takes them (and sendWithClient, for the',
      'outbox: entries name their operation).',
    ]) +
      `export const operations = {\n${requests.map(entry).join('\n')}\n} as const satisfies Readonly<Record<string, OperationSpec>>;`,
    '',
    "/** Every subscription, by name, for the runtime's stream client (createSubscriptions(client).subscribe). */",
    `export const subscriptions = {\n${streams.map(entry).join('\n')}\n} as const satisfies Readonly<Record<string, SubscriptionSpec>>;`,
    '',
    'export type OperationName = keyof typeof operations;',
    'export type SubscriptionName = keyof typeof subscriptions;',
    '',
  ].join('\n');
}

/**
 * schemas/operations.manifest.json: every operation's exact document and its SHA-256, for persisted operations
 * (the APQ hash, `extensions.persistedQuery.sha256Hash`) and the gateway's trusted-documents mode.
 */
import { createHash } from 'node:crypto';
import type { IR, OperationKind } from './ir.js';

export const MANIFEST_PATH = 'schemas/operations.manifest.json';

export interface Manifest {
  version: 1;
  schemaVersion: string;
  operations: Array<{ name: string; kind: OperationKind; sha256: string; document: string }>;
}

export const sha256Hex = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

export function buildManifest(ir: IR): Manifest {
  return {
    version: 1,
    schemaVersion: ir.schemaVersion,
    operations: ir.operations
      .map((op) => ({ name: op.name, kind: op.kind, sha256: sha256Hex(op.document), document: op.document }))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
  };
}

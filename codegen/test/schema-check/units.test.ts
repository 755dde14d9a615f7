import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllowlist } from '../../src/schema-check/allowlist.js';
import { runSchemaCheck } from '../../src/schema-check/check.js';
import { touchedBy, type OperationUsage } from '../../src/schema-check/impact.js';
import { baseSpec } from '../../src/schema-check/sources.js';

const REPO = resolve(new URL('../../..', import.meta.url).pathname);

describe('schema check parts', () => {
  it('the allowlist needs a coordinate and a reason of at least 10 characters', () => {
    expect(
      parseAllowlist('allow:\n  - coordinate: Note.body\n    reason: removed in 0.4 after a release\n'),
    ).toEqual([{ coordinate: 'Note.body', reason: 'removed in 0.4 after a release' }]);
    expect(parseAllowlist('allow: []\n')).toEqual([]);
    expect(parseAllowlist(undefined)).toEqual([]);
    expect(() => parseAllowlist('allow:\n  - coordinate: Note.body\n    reason: why\n')).toThrow(
      /say why clients/,
    );
    expect(() =>
      parseAllowlist('allow:\n  - coordinate: "not a coordinate"\n    reason: long enough reason\n'),
    ).toThrow(/schema coordinate/);
  });

  it('the committed allowlist parses', async () => {
    const { readAllowlist } = await import('../../src/schema-check/allowlist.js');
    expect(Array.isArray(readAllowlist(join(REPO, 'schemas/schema-allowlist.yaml')))).toBe(true);
  });

  it('--base is a schema file when it ends in .graphql, else a git ref', () => {
    expect(baseSpec('HEAD~1', REPO)).toEqual({ kind: 'git', ref: 'HEAD~1', cwd: REPO });
    expect(baseSpec('schemas/api.graphql', REPO)).toEqual({
      kind: 'file',
      path: join(REPO, 'schemas/api.graphql'),
    });
  });

  it('an unknown git ref fails with what to pass instead', async () => {
    await expect(
      runSchemaCheck({ root: REPO, base: { kind: 'git', ref: 'no-such-ref-h12', cwd: REPO } }),
    ).rejects.toThrow(/no-such-ref-h12 is not a commit .*pass a git ref/);
  });

  it('a missing base file fails with its path', async () => {
    const missing = join(mkdtempSync(join(tmpdir(), 'schema-check-')), 'old.graphql');
    await expect(runSchemaCheck({ root: REPO, base: { kind: 'file', path: missing } })).rejects.toThrow(
      missing,
    );
  });

  it('a change touches operations using the coordinate, its field for an argument, its enum for a new value', () => {
    const usages: OperationUsage[] = [
      {
        op: { operation: 'GetNote', kind: 'query', sdkMethod: 'getNote', origin: 'x.graphql' },
        coordinates: new Set([
          'Query.note',
          'Query.note.id',
          'Note',
          'Note.title',
          'NoteStatus',
          'NoteStatus.DRAFT',
        ]),
      },
      {
        op: { operation: 'Other', kind: 'query', sdkMethod: 'other', origin: 'x.graphql' },
        coordinates: new Set(['Query.other']),
      },
    ];
    const names = (path: string, type: string) => touchedBy(path, type, usages).map((t) => t.operation);
    expect(names('Note.title', 'FIELD_REMOVED')).toEqual(['GetNote']);
    expect(names('Query.note.revision', 'FIELD_ARGUMENT_ADDED')).toEqual(['GetNote']);
    expect(names('NoteStatus.ARCHIVED', 'ENUM_VALUE_ADDED')).toEqual(['GetNote']);
    expect(names('Note.summary', 'FIELD_ADDED')).toEqual([]);
    expect(names('Query.unused', 'FIELD_REMOVED')).toEqual([]);
  });
});

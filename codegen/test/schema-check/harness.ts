/** Writes a fixture case's base and head as two small repositories and runs the check on them. */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { runSchemaCheck, type SchemaCheckResult } from '../../src/schema-check/check.js';
import { BASE_OPERATIONS, BASE_SDL, type Edit, type FixtureCase } from './fixtures.js';

const REPO = resolve(new URL('../../..', import.meta.url).pathname);
const ERRORS_JSON = readFileSync(join(REPO, 'schemas/errors.json'), 'utf8');

export function applyEdits(sdl: string, edits: readonly Edit[] = []): string {
  let out = sdl;
  for (const [from, to] of edits) {
    if (!out.includes(from)) throw new Error(`fixture edit does not apply: ${JSON.stringify(from)}`);
    out = out.replace(from, to);
  }
  return out;
}

function write(root: string, rel: string, text: string) {
  mkdirSync(dirname(join(root, rel)), { recursive: true });
  writeFileSync(join(root, rel), text);
}

export function writeRepo(
  root: string,
  subgraphs: Record<string, string>,
  operations: string,
  allowlist?: string,
) {
  const yaml = Object.keys(subgraphs)
    .map(
      (n, i) =>
        `  ${n}:\n    routing_url: http://127.0.0.1:${4200 + i}/graphql\n    schema:\n      file: ./schemas/${n}.graphql\n`,
    )
    .join('');
  write(root, 'supergraph.yaml', `federation_version: =2.7.0\nsubgraphs:\n${yaml}`);
  for (const [n, sdl] of Object.entries(subgraphs)) write(root, `schemas/${n}.graphql`, sdl);
  write(root, 'schemas/operations/notes.graphql', operations);
  write(root, 'schemas/errors.json', ERRORS_JSON);
  if (allowlist !== undefined) write(root, 'schemas/schema-allowlist.yaml', allowlist);
}

const made: string[] = [];

/** Removes the fixture folders runCase made (call in afterAll). */
export function removeFixtureDirs(): void {
  for (const d of made.splice(0)) rmSync(d, { recursive: true, force: true });
}

export async function runCase(c: FixtureCase): Promise<SchemaCheckResult> {
  const dir = mkdtempSync(join(tmpdir(), 'schema-check-'));
  made.push(dir);
  const base = join(dir, 'base');
  const head = join(dir, 'head');
  writeRepo(base, { main: applyEdits(BASE_SDL, c.base) }, BASE_OPERATIONS);
  writeRepo(
    head,
    { main: applyEdits(BASE_SDL, c.head), ...c.headSubgraphs },
    c.headOperations ?? BASE_OPERATIONS,
    c.allowlist,
  );
  return runSchemaCheck({ root: head, base: { kind: 'tree', root: base, label: 'base' }, staleness: false });
}

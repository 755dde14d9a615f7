/**
 * One side of a schema check, read without a checkout: from the working tree (`tree`), from a git ref
 * (`git show <ref>:<path>`) or from a single API schema file (`file`: no subgraphs, nothing to compose).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { isAbsolute, join, posix, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import type { OperationFile } from '../sdk/inputs.js';

export type SideSpec =
  /** A folder laid out like the repository (the working tree, or a test's fixture). */
  | { kind: 'tree'; root: string; label?: string }
  | { kind: 'git'; ref: string; cwd: string }
  | { kind: 'file'; path: string };

export interface SubgraphSdl {
  name: string;
  url: string;
  /** Path relative to the repository root, e.g. `schemas/memory.graphql`. */
  file: string;
  sdl: string;
}

export interface SideSources {
  label: string;
  /** Empty for a `file` side. */
  subgraphs: SubgraphSdl[];
  /** Set for a `file` side: the API schema to diff against. */
  apiSdl?: string;
  operationFiles: OperationFile[];
  /** schemas/errors.json as text, when the side has one. */
  errorsJson?: string;
}

const SupergraphYaml = z.object({
  subgraphs: z.record(
    z.string(),
    z.object({ routing_url: z.string(), schema: z.object({ file: z.string() }) }),
  ),
});

interface FileReader {
  read(path: string): string | undefined;
  list(dir: string): string[];
}

function treeReader(root: string): FileReader {
  return {
    read: (p) => (existsSync(join(root, p)) ? readFileSync(join(root, p), 'utf8') : undefined),
    list: (dir) => (existsSync(join(root, dir)) ? readdirSync(join(root, dir)).sort() : []),
  };
}

function git(cwd: string, args: string[]): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, stdio: 'pipe' });
}

function gitReader(ref: string, cwd: string): FileReader {
  try {
    git(cwd, ['rev-parse', '--verify', '--quiet', `${ref}^{commit}`]);
  } catch {
    throw new Error(
      `--base ${ref} is not a commit in ${cwd}: pass a git ref (HEAD~1, origin/main) or a file.`,
    );
  }
  const names = new Set(git(cwd, ['ls-tree', '-r', '--name-only', ref]).split('\n').filter(Boolean));
  return {
    read: (p) => (names.has(p) ? git(cwd, ['show', `${ref}:${p}`]) : undefined),
    list: (dir) =>
      [...names]
        .filter((n) => posix.dirname(n) === dir)
        .map((n) => posix.basename(n))
        .sort(),
  };
}

export function readSide(spec: SideSpec): SideSources {
  if (spec.kind === 'file') {
    if (!existsSync(spec.path)) throw new Error(`--base ${spec.path}: no such file or git ref.`);
    return { label: spec.path, subgraphs: [], apiSdl: readFileSync(spec.path, 'utf8'), operationFiles: [] };
  }
  const reader = spec.kind === 'tree' ? treeReader(spec.root) : gitReader(spec.ref, spec.cwd);
  const label = spec.kind === 'tree' ? (spec.label ?? 'working tree') : spec.ref;
  const yamlText = reader.read('supergraph.yaml');
  if (yamlText === undefined) throw new Error(`${label} has no supergraph.yaml.`);
  const cfg = SupergraphYaml.parse(parseYaml(yamlText));
  const subgraphs = Object.entries(cfg.subgraphs).map(([name, s]) => {
    const file = posix.normalize(s.schema.file.replace(/^\.\//, ''));
    const sdl = reader.read(file);
    if (sdl === undefined)
      throw new Error(`${label}: supergraph.yaml names ${file} for ${name}, which is missing.`);
    return { name, url: s.routing_url, file, sdl };
  });
  const operationFiles = reader
    .list('schemas/operations')
    .filter((n) => n.endsWith('.graphql'))
    .map((n) => ({ path: `schemas/operations/${n}`, text: reader.read(`schemas/operations/${n}`)! }));
  return { label, subgraphs, operationFiles, errorsJson: reader.read('schemas/errors.json') };
}

/** `--base` is an API schema file when it ends in .graphql (resolved from cwd, else the root), else a git ref. */
export function baseSpec(base: string, root: string): SideSpec {
  if (/\.(graphqls?|gql)$/.test(base)) {
    const path = isAbsolute(base) ? base : existsSync(base) ? resolve(base) : join(root, base);
    return { kind: 'file', path };
  }
  return { kind: 'git', ref: base, cwd: root };
}

/**
 * `npm run schema:check`: base and head (the working tree at `root`) composed from supergraph.yaml, diffed (API
 * and each subgraph), linted, checked for stale generated files and invalid curated operations; each change
 * annotated with its old and new shapes and the SDK methods and operations it touches.
 */
import { performance } from 'node:perf_hooks';
import { join } from 'node:path';
import type { GraphQLSchema } from 'graphql';
import { buildIR } from '../sdk/build-ir.js';
import { ErrorTableSchema, type SdkInputs } from '../sdk/inputs.js';
import type { IR } from '../sdk/ir.js';
import { ALLOWLIST_PATH, readAllowlist, type AllowEntry } from './allowlist.js';
import { apiFile, composeSubgraphs, supergraphFile } from './compose-side.js';
import { buildLoose, diffSchemas, type SchemaChange } from './diff.js';
import { touchedBy, usagesOf, type OperationUsage, type Touched } from './impact.js';
import { validateOperations } from './operations-valid.js';
import { lintSubgraph, type Violation } from './rules.js';
import { isDeprecated, shapeOf } from './shapes.js';
import { checkStaleness } from './staleness.js';
import { readSide, type SideSources, type SideSpec } from './sources.js';

export interface Finding extends SchemaChange {
  oldShape?: string;
  newShape?: string;
  touches: Touched[];
  /** A breaking removal let through: deprecated in the base and listed in the allowlist with this reason. */
  allowedBecause?: string;
}

export interface SchemaCheckResult {
  base: string;
  head: string;
  breaking: Finding[];
  dangerous: Finding[];
  safe: Finding[];
  violations: Violation[];
  /** False on any breaking change or violation: the exit status. */
  ok: boolean;
  ms: number;
}

export interface SchemaCheckOptions {
  /** The repository (working tree) checked as the head side. */
  root: string;
  base: SideSpec;
  /** Defaults to `<root>/schemas/schema-allowlist.yaml`. */
  allowlistPath?: string;
  /** Skip the stale-files check (tests of the diff alone). */
  staleness?: boolean;
}

const REMOVALS = /_REMOVED$|_CHANGED$|TYPE_CHANGED|KIND_CHANGED/;

function irOf(side: SideSources, apiSdl: string, ops: SideSources['operationFiles'], errorsJson?: string) {
  try {
    const errorTable = ErrorTableSchema.parse(JSON.parse(errorsJson ?? ''));
    return buildIR({ apiSdl, operationFiles: ops, errorTable });
  } catch {
    return undefined; // the head's IR failing is reported by the operations and staleness checks
  }
}

function tryBuild(sdl: string | undefined): GraphQLSchema | undefined {
  try {
    return sdl === undefined ? undefined : buildLoose(sdl);
  } catch {
    return undefined;
  }
}

export async function runSchemaCheck(options: SchemaCheckOptions): Promise<SchemaCheckResult> {
  const start = performance.now();
  const base = readSide(options.base);
  const head = readSide({ kind: 'tree', root: options.root });
  const allow: AllowEntry[] = readAllowlist(options.allowlistPath ?? join(options.root, ALLOWLIST_PATH));
  const violations: Violation[] = [];

  const headComposed = composeSubgraphs(head.subgraphs);
  if (!headComposed.ok)
    for (const e of headComposed.errors)
      violations.push({
        rule: 'composition',
        coordinate: 'supergraph.yaml',
        message: `head does not compose: ${e}`,
      });
  let baseApiSdl = base.apiSdl;
  if (base.subgraphs.length) {
    const c = composeSubgraphs(base.subgraphs);
    if (c.ok) baseApiSdl = c.apiSdl;
  }
  const headApiSdl = headComposed.ok ? headComposed.apiSdl : undefined;
  const baseSchema = tryBuild(baseApiSdl);
  const headSchema = tryBuild(headApiSdl);

  for (const sg of head.subgraphs) violations.push(...lintSubgraph(sg.name, sg.sdl));

  // Diffs: the API decides breaking. Subgraph changes are listed only when the API does not show them (e.g. a
  // field moving between subgraphs); such a breaking change does not break clients, so it is dangerous (deploy
  // order matters).
  const changes: Array<SchemaChange & { shapes: [GraphQLSchema | undefined, GraphQLSchema | undefined] }> =
    [];
  if (baseSchema && headSchema)
    for (const c of await diffSchemas('api', baseSchema, headSchema))
      changes.push({ ...c, shapes: [baseSchema, headSchema] });
  const inApi = new Set(changes.map((c) => `${c.type} ${c.coordinate}`));
  for (const sg of head.subgraphs) {
    const old = base.subgraphs.find((b) => b.name === sg.name);
    if (!old) continue;
    const [o, n] = [tryBuild(old.sdl), tryBuild(sg.sdl)];
    if (!o || !n) continue;
    for (const c of await diffSchemas(`subgraph ${sg.name}`, o, n)) {
      if (inApi.has(`${c.type} ${c.coordinate}`)) continue;
      changes.push({ ...c, level: c.level === 'breaking' ? 'dangerous' : c.level, shapes: [o, n] });
    }
  }

  // Which operations each change touches: the base's operations on the base schema, the head's on the head's.
  const usages: OperationUsage[] = [];
  const baseIR: IR | undefined =
    baseApiSdl && baseSchema
      ? irOf(
          base,
          apiFile(baseApiSdl),
          base.subgraphs.length ? base.operationFiles : head.operationFiles,
          base.errorsJson ?? head.errorsJson,
        )
      : undefined;
  if (baseIR && baseSchema) usages.push(...usagesOf(baseIR, baseSchema));
  const headIR =
    headApiSdl && headSchema
      ? irOf(head, apiFile(headApiSdl), head.operationFiles, head.errorsJson)
      : undefined;
  if (headIR && headSchema) usages.push(...usagesOf(headIR, headSchema));

  const findings: Finding[] = changes.map(({ shapes: [before, after], ...c }) => {
    const f: Finding = {
      ...c,
      oldShape: shapeAround(before, c.coordinate, c.type),
      newShape: shapeAround(after, c.coordinate, c.type),
      touches: c.scope === 'api' ? touchedBy(c.coordinate, c.type, usages) : [],
    };
    if (c.level !== 'breaking' || !REMOVALS.test(c.type)) return f;
    const entry = allow.find((a) => a.coordinate === c.coordinate);
    if (!entry) return f;
    if (!isDeprecated(baseSchema, c.coordinate)) {
      violations.push({
        rule: 'allowlist',
        coordinate: c.coordinate!,
        message: `is in ${ALLOWLIST_PATH} but was not deprecated in the base: deprecate it for a release first`,
      });
      return f;
    }
    return { ...f, level: 'safe', allowedBecause: entry.reason };
  });

  if (headSchema) violations.push(...validateOperations(headSchema, head.operationFiles));
  if (options.staleness !== false && headComposed.ok) {
    const inputs = headInputs(head, apiFile(headComposed.apiSdl));
    if (inputs)
      violations.push(
        ...(await checkStaleness(
          options.root,
          {
            supergraphFile: supergraphFile(headComposed.supergraphSdl),
            apiFile: apiFile(headComposed.apiSdl),
          },
          inputs,
        )),
      );
  }

  const by = (level: Finding['level']) => findings.filter((f) => f.level === level);
  const breaking = by('breaking');
  return {
    base: base.label,
    head: head.label,
    breaking,
    dangerous: by('dangerous'),
    safe: by('safe'),
    violations,
    ok: breaking.length === 0 && violations.length === 0,
    ms: performance.now() - start,
  };
}

/**
 * The coordinate's shape; for an argument or enum value that exists on one side only, its field's or enum's shape
 * there (so an added argument shows the field before and after).
 */
function shapeAround(schema: GraphQLSchema | undefined, coordinate: string | undefined, type: string) {
  const own = shapeOf(schema, coordinate);
  if (own !== undefined || !coordinate) return own;
  const parts = coordinate.split('.').filter((p) => !p.startsWith('@'));
  if (parts.length === 3 || (parts.length === 2 && type.startsWith('ENUM_VALUE')))
    return shapeOf(schema, parts.slice(0, -1).join('.'));
  return undefined;
}

function headInputs(head: SideSources, apiSdl: string): SdkInputs | undefined {
  try {
    return {
      apiSdl,
      operationFiles: head.operationFiles,
      errorTable: ErrorTableSchema.parse(JSON.parse(head.errorsJson ?? '')),
    };
  } catch {
    return undefined;
  }
}

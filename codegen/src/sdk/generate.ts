/**
 * The SDK step of `npm run codegen`: inputs → IR → every target's files and the operations manifest, in memory,
 * timed; then `writeSdks` puts them on disk. Split so tests and the bench can generate without writing, or write
 * into a temporary folder.
 */
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { buildIR } from './build-ir.js';
import { prettierFormatter } from './format.js';
import { loadInputs, type SdkInputs } from './inputs.js';
import type { IR } from './ir.js';
import { buildManifest, MANIFEST_PATH } from './manifest.js';
import type { GeneratedFile, Target } from './target.js';
import { TARGETS } from './targets.js';
import { writeTarget, type WriteReport } from './write-target.js';
import { writeIfChanged } from '../write-if-changed.js';

export interface TargetResult {
  target: Target;
  files: GeneratedFile[];
  /** Time to generate this target's files (rendering and formatting), in milliseconds. */
  ms: number;
}

export interface GenerateResult {
  ir: IR;
  /** Time to read the inputs and build the IR, in milliseconds. */
  irMs: number;
  /** schemas/operations.manifest.json, formatted. */
  manifest: string;
  targets: TargetResult[];
}

/** `inputs` replaces what is read from `root` (tests generate from a schema of their own). */
export async function generateSdks(
  root: string,
  options: { targets?: readonly Target[]; inputs?: SdkInputs } = {},
): Promise<GenerateResult> {
  const start = performance.now();
  const ir = buildIR(options.inputs ?? loadInputs(root));
  const irMs = performance.now() - start;
  const format = await prettierFormatter(root);
  const manifest = await format(MANIFEST_PATH, JSON.stringify(buildManifest(ir), null, 2));
  const targets: TargetResult[] = [];
  for (const target of options.targets ?? TARGETS) {
    const t0 = performance.now();
    const files = await target.generate(ir, { root, format });
    targets.push({ target, files, ms: performance.now() - t0 });
  }
  return { ir, irMs, manifest, targets };
}

/**
 * Writes the manifest and every target under `outRoot` (the repository root, or a temporary folder).
 */
export function writeSdks(
  result: GenerateResult,
  outRoot: string,
): { manifestChanged: boolean; reports: Array<{ target: Target; report: WriteReport }> } {
  const manifestChanged = writeIfChanged(join(outRoot, MANIFEST_PATH), result.manifest);
  const reports = result.targets.map(({ target, files }) => ({
    target,
    report: writeTarget(join(outRoot, target.outDir), files, target.handWritten),
  }));
  return { manifestChanged, reports };
}

/**
 * The plugin point of the SDK generator: a target turns the IR into the files of one SDK. `npm run codegen` runs
 * every registered target; a target that is not implemented yet writes nothing (and says so).
 */
import type { IR } from './ir.js';

export interface GeneratedFile {
  /** Relative to the target's output folder, with `/`. */
  path: string;
  content: string;
}

export interface TargetContext {
  /** The repository root (targets read their runtime template from `sdk-templates/<lang>/`). */
  root: string;
  /** Formats a file with prettier and the repository's config, by its extension. */
  format(path: string, content: string): Promise<string>;
}

export interface Target {
  /** `typescript`, `csharp`, `python`. */
  name: string;
  /** Output folder relative to the repository root, e.g. `sdks/typescript`. */
  outDir: string;
  /** False for a registered target whose generator is still to come: it generates nothing. */
  implemented: boolean;
  /** Where the target is planned, for a target that is not implemented. */
  plannedIn?: string;
  generate(ir: IR, ctx: TargetContext): Promise<GeneratedFile[]>;
}

/** A registered target whose generator comes with a later issue: it writes nothing. */
export function notYetImplemented(name: string, outDir: string, plannedIn: string): Target {
  return { name, outDir, implemented: false, plannedIn, generate: () => Promise.resolve([]) };
}

/**
 * The plugin point of the SDK generator: a target turns the IR into the files of one SDK. `npm run codegen` runs
 * every registered target.
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
  generate(ir: IR, ctx: TargetContext): Promise<GeneratedFile[]>;
}

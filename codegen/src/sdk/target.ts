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
  /**
   * Folders inside `outDir` written by hand (e.g. `samples/`, programs that use the generated SDK and build with it):
   * never generated, never deleted, not stale. The generator may read them (a README quoting a sample).
   */
  handWritten?: readonly string[];
  generate(ir: IR, ctx: TargetContext): Promise<GeneratedFile[]>;
}

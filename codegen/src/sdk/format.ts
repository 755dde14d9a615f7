/**
 * Formatting of generated files with prettier's API and the repository's own config (.prettierrc.json,
 * .editorconfig), so generated code reads like hand-written code and is stable byte for byte.
 */
import { join } from 'node:path';
import * as prettier from 'prettier';

const FORMATTED = /\.(ts|js|mjs|json|md|graphql)$/;

export async function prettierFormatter(
  root: string,
): Promise<(path: string, content: string) => Promise<string>> {
  // Resolve once, for a file at the root: every generated file shares the root config.
  const config = (await prettier.resolveConfig(join(root, 'package.json'), { editorconfig: true })) ?? {};
  return async (path, content) => {
    if (!FORMATTED.test(path)) return content;
    return prettier.format(content, { ...config, filepath: path });
  };
}

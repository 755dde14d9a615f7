/**
 * The generator's inputs, read from the repository and checked at the boundary: the API schema, the curated
 * operation documents and the error-code table. Nothing else is read to build the IR, so the same three inputs
 * always give the same IR.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { z } from 'zod';

export interface OperationFile {
  /** Path relative to the repository root, with `/`, e.g. `schemas/operations/identity.graphql`. */
  path: string;
  text: string;
}

export const ErrorTableSchema = z.object({
  codes: z
    .array(
      z.object({
        code: z.string().regex(/^[A-Z][A-Z0-9_]*$/, 'codes are UPPER_SNAKE_CASE'),
        http: z.number().int().min(100).max(599),
        retry: z.string().min(1),
        description: z.string(),
      }),
    )
    .min(1),
});

export type ErrorTableJson = z.infer<typeof ErrorTableSchema>;

export interface SdkInputs {
  /** The exact text of schemas/api.graphql (its hash is the schema version). */
  apiSdl: string;
  /** schemas/operations/*.graphql, sorted by path. */
  operationFiles: OperationFile[];
  errorTable: ErrorTableJson;
}

/** As capabilities.schemaVersion: the first 12 hex digits of SHA-256 of the committed API schema file. */
export function schemaVersionOf(apiSdl: string): string {
  return createHash('sha256').update(apiSdl).digest('hex').slice(0, 12);
}

export function loadInputs(root: string): SdkInputs {
  const apiPath = join(root, 'schemas/api.graphql');
  if (!existsSync(apiPath)) {
    throw new Error(`${apiPath} is missing: run \`npm run compose\` first (npm run codegen composes too).`);
  }
  const errorsPath = join(root, 'schemas/errors.json');
  let errorsJson: unknown;
  try {
    errorsJson = JSON.parse(readFileSync(errorsPath, 'utf8'));
  } catch (err) {
    throw new Error(`${errorsPath} is not readable JSON: ${(err as Error).message}`, { cause: err });
  }
  const parsed = ErrorTableSchema.safeParse(errorsJson);
  if (!parsed.success) {
    throw new Error(
      `${errorsPath} does not have the error table's shape ({ codes: [{ code, http, retry, description }] }): ` +
        z.prettifyError(parsed.error),
    );
  }
  const opsDir = join(root, 'schemas/operations');
  const operationFiles = existsSync(opsDir)
    ? readdirSync(opsDir)
        .filter((name) => name.endsWith('.graphql'))
        .sort()
        .map((name) => ({
          path: relative(root, join(opsDir, name)).split('\\').join('/'),
          text: readFileSync(join(opsDir, name), 'utf8'),
        }))
    : [];
  return { apiSdl: readFileSync(apiPath, 'utf8'), operationFiles, errorTable: parsed.data };
}

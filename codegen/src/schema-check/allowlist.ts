/**
 * schemas/schema-allowlist.yaml: reviewed removals. A breaking removal or retype passes only when the coordinate
 * was deprecated in the base and is listed here with a reason.
 */
import { existsSync, readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';

export const ALLOWLIST_PATH = 'schemas/schema-allowlist.yaml';

export const AllowlistSchema = z.object({
  allow: z
    .array(
      z.object({
        coordinate: z
          .string()
          .regex(/^[A-Za-z_][\w]*(\.[A-Za-z_]\w*){0,2}$/, 'a schema coordinate: Type.field'),
        reason: z.string().min(10, 'say why clients no longer need it (at least 10 characters)'),
      }),
    )
    .nullish()
    .transform((a) => a ?? []),
});

export type AllowEntry = z.infer<typeof AllowlistSchema>['allow'][number];

export function parseAllowlist(text: string | undefined, where = ALLOWLIST_PATH): AllowEntry[] {
  if (text === undefined) return [];
  const parsed = AllowlistSchema.safeParse(parseYaml(text) ?? {});
  if (!parsed.success)
    throw new Error(`${where} is not { allow: [{ coordinate, reason }] }: ${z.prettifyError(parsed.error)}`);
  return parsed.data.allow;
}

export function readAllowlist(path: string): AllowEntry[] {
  return existsSync(path) ? parseAllowlist(readFileSync(path, 'utf8'), path) : [];
}

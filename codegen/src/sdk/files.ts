import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Every file under `dir`, relative to it with `/`, sorted by code unit (the order does not depend on the file
 * system or the locale). Folders named in `skip` (e.g. node_modules) are not entered.
 */
export function listFiles(dir: string, skip: ReadonlySet<string> = new Set(), prefix = ''): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const full = join(dir, name);
      const rel = prefix ? `${prefix}/${name}` : name;
      if (!statSync(full).isDirectory()) return [rel];
      return skip.has(name) ? [] : listFiles(full, skip, rel);
    });
}

/**
 * Test packages: zips built with yazl, plus byte-level edits for what yazl refuses to write (absolute paths and
 * `..`): an entry is added under a same-length placeholder name, then its name is replaced in the local header and
 * the central directory (the CRC covers the data, not the name, so the archive stays valid).
 */
import yazl from 'yazl';

export interface Entry {
  name: string;
  data: string | Buffer;
  /** Unix mode, e.g. 0o120777 for a symbolic link. */
  mode?: number;
  compress?: boolean;
}

export async function zip(entries: Entry[]): Promise<Buffer> {
  const z = new yazl.ZipFile();
  for (const e of entries) {
    z.addBuffer(typeof e.data === 'string' ? Buffer.from(e.data) : e.data, e.name, {
      ...(e.mode !== undefined ? { mode: e.mode } : {}),
      compress: e.compress ?? true,
    });
  }
  z.end();
  const chunks: Buffer[] = [];
  for await (const chunk of z.outputStream as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/** Replaces every occurrence of `from` by `to` (same byte length) in the archive. */
export function renameEntry(archive: Buffer, from: string, to: string): Buffer {
  const a = Buffer.from(from);
  const b = Buffer.from(to);
  if (a.length !== b.length) throw new Error('names must have the same length');
  const out = Buffer.from(archive);
  let i = out.indexOf(a);
  let n = 0;
  while (i >= 0) {
    b.copy(out, i);
    n++;
    i = out.indexOf(a, i + a.length);
  }
  if (n < 2) throw new Error(`expected the name in the local header and the central directory, found ${n}`);
  return out;
}

export function manifest(plugin: string, version: string, extra: Record<string, unknown> = {}): Entry {
  return {
    name: 'manifest.json',
    data: JSON.stringify({ name: plugin, version, main: 'index.js', capabilities: [], ...extra }),
  };
}

/** A package that passes analysis. */
export function goodPackage(
  plugin: string,
  version: string,
  code = 'export function run() { return 42; }\n',
) {
  return zip([manifest(plugin, version), { name: 'index.js', data: code }]);
}

// @ts-check
/**
 * Unpacks a zip held in memory, with limits, never touching the file system: entry count, per-entry and total
 * uncompressed size, compression ratio; refuses absolute paths, `..`, backslashes, symbolic links and device,
 * FIFO or socket entries (Unix mode in the external attributes), and encrypted entries. Sizes are checked from the
 * central directory before inflating, and yauzl's validateEntrySizes stops an entry whose data is bigger than it
 * claims, so a lying header cannot inflate past the limits either.
 */
import yauzl from 'yauzl';

/** @typedef {{ rule: string, path?: string, message: string }} Finding */
/** @typedef {{ maxEntries: number, maxEntryBytes: number, maxTotalBytes: number, maxRatio: number }} UnpackLimits */

const S_IFMT = 0o170000;
const KINDS = new Map([
  [0o120000, 'symlink'],
  [0o020000, 'device'],
  [0o060000, 'device'],
  [0o010000, 'fifo'],
  [0o140000, 'socket'],
]);

/** @param {string} name @returns {string | null} why the path is unsafe, or null */
export function unsafePath(name) {
  if (name.length === 0) return 'empty path';
  if (name.includes('\0')) return 'NUL in path';
  if (name.includes('\\')) return 'backslash in path';
  if (name.startsWith('/') || /^[A-Za-z]:/.test(name)) return 'absolute path';
  if (name.split('/').some((part) => part === '..')) return 'path traversal (..)';
  return null;
}

/**
 * @param {Buffer} zip
 * @param {UnpackLimits} limits
 * @returns {Promise<{ files: Map<string, Buffer>, findings: Finding[] }>}
 */
export async function unpack(zip, limits) {
  /** @type {Finding[]} */
  const findings = [];
  /** @type {Map<string, Buffer>} */
  const files = new Map();
  let zipfile;
  try {
    zipfile = await yauzl.fromBufferPromise(zip, {
      decodeStrings: false,
      validateEntrySizes: true,
      autoClose: false,
    });
  } catch (err) {
    findings.push({
      rule: 'not-a-zip',
      message: `not a readable zip archive: ${/** @type {Error} */ (err).message}`,
    });
    return { files, findings };
  }
  try {
    if (zipfile.entryCount > limits.maxEntries) {
      findings.push({
        rule: 'too-many-entries',
        message: `${zipfile.entryCount} entries, more than the limit of ${limits.maxEntries}`,
      });
      return { files, findings };
    }
    /** @type {any[]} */
    const entries = [];
    let declaredTotal = 0;
    for await (const entry of zipfile.eachEntry()) {
      const name = yauzl.getFileNameLowLevel(
        entry.generalPurposeBitFlag,
        entry.fileNameRaw,
        entry.extraFields,
        true,
      );
      const unsafe = unsafePath(name);
      if (unsafe) {
        findings.push({
          rule:
            unsafe === 'absolute path'
              ? 'absolute-path'
              : unsafe.startsWith('path traversal')
                ? 'path-traversal'
                : 'bad-path',
          path: name,
          message: unsafe,
        });
        continue;
      }
      const madeOnUnix = entry.versionMadeBy >> 8 === 3;
      const mode = (entry.externalFileAttributes >>> 16) & 0xffff;
      const kind = madeOnUnix ? KINDS.get(mode & S_IFMT) : undefined;
      if (kind) {
        findings.push({
          rule: kind === 'symlink' ? 'symlink' : 'special-file',
          path: name,
          message: `${kind} entries are not allowed`,
        });
        continue;
      }
      if (entry.isEncrypted()) {
        findings.push({ rule: 'encrypted', path: name, message: 'encrypted entries cannot be analysed' });
        continue;
      }
      if (name.endsWith('/')) continue; // a directory
      if (files.has(name) || entries.some((e) => e.name === name)) {
        findings.push({ rule: 'duplicate-entry', path: name, message: 'the archive holds this path twice' });
        continue;
      }
      if (entry.uncompressedSize > limits.maxEntryBytes) {
        findings.push({
          rule: 'zip-bomb',
          path: name,
          message: `entry inflates to ${entry.uncompressedSize} bytes, more than the per-entry limit of ${limits.maxEntryBytes}`,
        });
        continue;
      }
      const ratio = entry.uncompressedSize / Math.max(1, entry.compressedSize);
      if (ratio > limits.maxRatio) {
        findings.push({
          rule: 'zip-bomb',
          path: name,
          message: `compression ratio ${Math.round(ratio)}:1 is over the limit of ${limits.maxRatio}:1`,
        });
        continue;
      }
      declaredTotal += entry.uncompressedSize;
      if (declaredTotal > limits.maxTotalBytes) {
        findings.push({
          rule: 'zip-bomb',
          message: `the entries inflate to more than the total limit of ${limits.maxTotalBytes} bytes`,
        });
        return { files, findings };
      }
      entries.push({ name, entry });
    }
    if (findings.length) return { files, findings };
    for (const { name, entry } of entries) {
      const stream = await zipfile.openReadStreamPromise(entry);
      /** @type {Buffer[]} */
      const chunks = [];
      let size = 0;
      try {
        for await (const chunk of stream) {
          size += chunk.length;
          if (size > limits.maxEntryBytes) throw new Error(`entry inflates past the per-entry limit`);
          chunks.push(chunk);
        }
      } catch (err) {
        findings.push({
          rule: 'zip-bomb',
          path: name,
          message: `entry data is not what the archive declares: ${/** @type {Error} */ (err).message}`,
        });
        return { files, findings };
      }
      files.set(name, Buffer.concat(chunks));
    }
    return { files, findings };
  } catch (err) {
    findings.push({
      rule: 'corrupt-zip',
      message: `the archive is corrupt: ${/** @type {Error} */ (err).message}`,
    });
    return { files, findings };
  } finally {
    zipfile.close();
  }
}

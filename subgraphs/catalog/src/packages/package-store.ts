/**
 * Where package bytes live. `PackageStore` is the interface (a directory here; an object store would implement
 * the same four calls); keys are opaque ids the catalog chooses (`<tenant>/<uuid>.zip`).
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rm, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

export interface PackageStore {
  /** Writes the stream under the key; rejects (and leaves nothing behind) if the stream fails. */
  put(key: string, data: Readable): Promise<void>;
  /** The bytes under the key, or null when there are none. */
  get(key: string): Promise<Readable | null>;
  delete(key: string): Promise<void>;
  /** A local file holding the bytes, when the store has one (the analyzer reads it under the permission model). */
  localPath?(key: string): string;
}

const KEY = /^[0-9a-f-]{36}\/[0-9a-f-]{36}\.zip$/;

export class DirectoryPackageStore implements PackageStore {
  readonly root: string;
  constructor(root: string) {
    this.root = resolve(root);
  }

  localPath(key: string): string {
    if (!KEY.test(key)) throw new Error(`invalid package key ${JSON.stringify(key)}`);
    return join(this.root, key);
  }

  async put(key: string, data: Readable): Promise<void> {
    const path = this.localPath(key);
    await mkdir(dirname(path), { recursive: true });
    try {
      await pipeline(data, createWriteStream(path, { flags: 'wx', mode: 0o600 }));
    } catch (err) {
      await rm(path, { force: true });
      throw err;
    }
  }

  async get(key: string): Promise<Readable | null> {
    const path = this.localPath(key);
    try {
      await stat(path);
    } catch {
      return null;
    }
    return createReadStream(path);
  }

  async delete(key: string): Promise<void> {
    await rm(this.localPath(key), { force: true });
  }
}

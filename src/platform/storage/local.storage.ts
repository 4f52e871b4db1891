import { createReadStream } from 'node:fs';
import { copyFile, mkdir, rename, rm, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { BlobStorage } from './storage.js';
import { propertyOf } from '../errors.js';

/** Files under one folder; keys are relative paths of safe characters only. */
export class LocalDiskStorage implements BlobStorage {
  readonly name = 'local';

  constructor(private readonly root: string) {}

  private file(key: string): string {
    if (!/^[A-Za-z0-9._/-]+$/.test(key) || key.includes('..')) throw new Error(`unsafe storage key ${key}`);
    return path.join(this.root, key);
  }

  async putFile(key: string, source: string): Promise<void> {
    const target = this.file(key);
    await mkdir(path.dirname(target), { recursive: true });
    try {
      await rename(source, target);
    } catch (error) {
      // Another file system: copy, then drop the staged file.
      if (propertyOf(error, 'code') !== 'EXDEV') throw error;
      await copyFile(source, target);
      await unlink(source);
    }
  }

  async read(key: string, range?: { start: number; end: number }): Promise<Readable> {
    return createReadStream(this.file(key), range);
  }

  async size(key: string): Promise<number | null> {
    try {
      return (await stat(this.file(key))).size;
    } catch {
      return null;
    }
  }

  async download(key: string, target: string): Promise<void> {
    await copyFile(this.file(key), target);
  }

  async delete(key: string): Promise<void> {
    await rm(this.file(key), { force: true });
  }
}

import type { Readable } from 'node:stream';

/** Where attachment bytes live: local disk for one machine, an S3-compatible bucket for many. */
export interface BlobStorage {
  readonly name: string;
  /** Stores a local file under `key` (moving it when the storage is on the same disk). */
  putFile(key: string, path: string, contentType: string): Promise<void>;
  /** A readable stream of the object, from `start` to `end` inclusive when given. */
  read(key: string, range?: { start: number; end: number }): Promise<Readable>;
  size(key: string): Promise<number | null>;
  /** Copies the object to a local file (for the media tools). */
  download(key: string, path: string): Promise<void>;
  delete(key: string): Promise<void>;
}

import type { Config } from '../config.js';
import { LocalDiskStorage } from './local.storage.js';
import { S3Storage } from './s3.storage.js';
import type { BlobStorage } from './storage.js';

/** The configured blob storage: files under STORAGE_DIR, or an S3-compatible bucket. */
export function blobStorage(config: Config): BlobStorage {
  if (config.STORAGE_PROVIDER === 's3') {
    return new S3Storage({
      endpoint: config.S3_ENDPOINT ?? '',
      region: config.S3_REGION,
      bucket: config.S3_BUCKET ?? '',
      accessKeyId: config.S3_ACCESS_KEY_ID ?? '',
      secretAccessKey: config.S3_SECRET_ACCESS_KEY ?? '',
      pathStyle: config.S3_PATH_STYLE,
    });
  }
  return new LocalDiskStorage(config.STORAGE_DIR);
}

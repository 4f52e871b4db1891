import { createWriteStream } from 'node:fs';
import { mkdir, unlink } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/**
 * Where uploads wait while their limits are checked (attachments, profile pictures, encrypted
 * uploads, voice notes): every area that takes a file stages it here before it is stored.
 */
export const uploadStagingDir = (config: { UPLOAD_STAGING_DIR?: string }) => config.UPLOAD_STAGING_DIR ?? path.join(os.tmpdir(), 'chat-uploads');

/** Streams an upload to a staging file; past `limit` bytes it stops, removes the file and throws `tooLarge()`. */
export async function stageCapped(stream: Readable, stagingDir: string, limit: number, tooLarge: () => Error): Promise<{ path: string; size: number }> {
  await mkdir(stagingDir, { recursive: true });
  const target = path.join(stagingDir, randomUUID());
  let size = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      size += chunk.length;
      if (size > limit) return done(tooLarge());
      done(null, chunk);
    },
  });
  try {
    await pipeline(stream, counter, createWriteStream(target));
  } catch (error) {
    await unlink(target).catch(() => undefined);
    // Drain the rest of this part so the request can still be answered.
    stream.resume();
    throw error;
  }
  return { path: target, size };
}

import path from 'node:path';
import type { Readable } from 'node:stream';
import { stageCapped } from '../platform/storage/upload-staging.js';
import { AttachmentsErrors } from './attachments.errors.js';
import { cleanFileName, sniffFile } from './content-sniffer.js';

/** One megabyte in the spec's limits: 1,048,576 bytes. */
export const MB = 1024 * 1024;
export const MAX_FILES_PER_UPLOAD = 10;
export const MAX_PROCESSING_PER_USER = 20;

export type AttachmentKind = 'IMAGE' | 'AUDIO' | 'VIDEO' | 'OTHER';

/** Size limits by file extension class (spec, "Limits"). */
export const SIZE_LIMITS: Record<AttachmentKind, number> = { IMAGE: 25 * MB, AUDIO: 50 * MB, VIDEO: 250 * MB, OTHER: 100 * MB };

const SIZE_ERRORS = {
  IMAGE: AttachmentsErrors.LIMIT_FILE_SIZE_IMAGE,
  AUDIO: AttachmentsErrors.LIMIT_FILE_SIZE_AUDIO,
  VIDEO: AttachmentsErrors.LIMIT_FILE_SIZE_VIDEO,
  OTHER: AttachmentsErrors.LIMIT_FILE_SIZE_OTHER,
} satisfies Record<AttachmentKind, unknown>;

const EXTENSIONS: Record<Exclude<AttachmentKind, 'OTHER'>, string[]> = {
  IMAGE: ['jpg', 'jpeg', 'png', 'gif', 'webp', 'heic', 'heif', 'bmp', 'tif', 'tiff', 'avif'],
  AUDIO: ['mp3', 'm4a', 'aac', 'wav', 'ogg', 'oga', 'opus', 'flac', 'amr', 'weba'],
  VIDEO: ['mp4', 'm4v', 'mov', 'avi', 'mkv', 'webm', '3gp', 'mpeg', 'mpg', 'wmv'],
};

export function kindOf(filename: string): AttachmentKind {
  const extension = path.extname(filename).slice(1).toLowerCase();
  // Cast: Object.entries loses the literal keys of EXTENSIONS.
  for (const [kind, list] of Object.entries(EXTENSIONS) as [Exclude<AttachmentKind, 'OTHER'>, string[]][]) {
    if (list.includes(extension)) return kind;
  }
  return 'OTHER';
}

export interface StagedFile {
  path: string;
  filename: string;
  contentType: string;
  kind: AttachmentKind;
  size: number;
}

/**
 * Streams one uploaded file to a staging file, counting bytes, and stops with a 400 naming the limit
 * as soon as it passes its class's size: nothing is held whole in memory, and nothing is stored.
 * The file's type is what its first bytes prove (content-sniffer.ts), never what the upload
 * declared; its name is cleaned of control characters.
 */
export async function stageFile(stream: Readable, givenName: string, stagingDir: string): Promise<StagedFile> {
  const filename = cleanFileName(givenName);
  const kind = kindOf(filename);
  const limit = SIZE_LIMITS[kind];
  const tooLarge = () => SIZE_ERRORS[kind]({ message: `${kind.toLowerCase()} files may be at most ${limit / MB} MB (${limit} bytes): ${filename}`, details: [{ file: filename, limit }] });
  const staged = await stageCapped(stream, stagingDir, limit, tooLarge);
  return { ...staged, filename, contentType: await sniffFile(staged.path), kind };
}

import type { MultipartFile } from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import { CommonErrors } from '../src/platform/common.errors.js';

const BOUNDARY = /;\s*boundary=("[^"]+"|[^;\s]+)/i;

/** A multipart upload route's first check: multipart/form-data (else 415) with a boundary (else 400). */
export function assertMultipart(request: FastifyRequest): void {
  if (!request.isMultipart()) throw CommonErrors.UNSUPPORTED_MEDIA_TYPE({ message: 'Send multipart/form-data' });
  // Without a boundary the parser cannot split the parts (it used to end in a 500).
  if (!BOUNDARY.test(request.headers['content-type'] ?? '')) throw CommonErrors.MULTIPART_INVALID({ message: 'A multipart/form-data body needs a boundary parameter in Content-Type' });
}

/**
 * Whether an error is the multipart parser (busboy) refusing a malformed body. It raises plain
 * Errors without a code, so its messages are the only handle; each one seen is listed here.
 */
export function isMalformedMultipart(error: Error): boolean {
  return /^(Unexpected end of multipart data|Multipart: Boundary not found|Malformed part header)|terminated early due to unexpected end of multipart data$/.test(error.message);
}

/**
 * The one file of an upload route registered with `files: 1`, read by `read`; null without one.
 * Every part is read, so a second file is refused (LIMIT_FILES_PER_UPLOAD) instead of ignored, which
 * `request.file()` alone would do.
 */
export async function onlyFile<T>(request: FastifyRequest, read: (part: MultipartFile) => Promise<T>): Promise<T | null> {
  let result: T | null = null;
  for await (const part of request.parts()) if (part.type === 'file') result = await read(part);
  return result;
}

import type { FastifyRequest } from 'fastify';
import { CommonErrors } from '../src/platform/common.errors.js';

const BOUNDARY = /;\s*boundary=("[^"]+"|[^;\s]+)/i;

/** A multipart upload route's first check: multipart/form-data (else 415) with a boundary (else 400). */
export function assertMultipart(request: FastifyRequest): void {
  if (!request.isMultipart()) throw CommonErrors.UNSUPPORTED_MEDIA_TYPE({ message: 'Send multipart/form-data' });
  // Without a boundary the parser cannot split the parts (it used to end in a 500).
  if (!BOUNDARY.test(request.headers['content-type'] ?? '')) throw CommonErrors.MULTIPART_INVALID();
}

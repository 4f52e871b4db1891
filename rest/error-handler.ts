import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { AppError } from '../src/platform/errors.js';
import type { ErrorResponse } from '../src/platform/common.schemas.js';

function body(request: FastifyRequest, status: number, code: string, message: string, details?: unknown[]): ErrorResponse {
  return {
    status,
    code,
    message,
    ...(details && details.length > 0 ? { details } : {}),
    path: request.url.split('?')[0] ?? request.url,
    timestamp: new Date().toISOString(),
  };
}

export function sendError(request: FastifyRequest, reply: FastifyReply, status: number, code: string, message: string, details?: unknown[], extra?: Record<string, string>) {
  return reply.code(status).type('application/json; charset=utf-8').send({ ...body(request, status, code, message, details), ...extra });
}

/** Fastify's own request errors, mapped to codes of the ErrorResponse. */
const FASTIFY_CODES: Record<string, { status: number; code: string; message: string }> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { status: 415, code: 'UNSUPPORTED_MEDIA_TYPE', message: 'Unsupported content type; send application/json' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { status: 400, code: 'INVALID_CONTENT_LENGTH', message: 'Content-Length does not match the body' },
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, code: 'PAYLOAD_TOO_LARGE', message: 'The request body is too large' },
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, code: 'MALFORMED_JSON', message: 'The body is not valid JSON' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { status: 400, code: 'MALFORMED_JSON', message: 'The body is empty' },
  // @fastify/multipart
  FST_FILES_LIMIT: { status: 400, code: 'LIMIT_FILES_PER_UPLOAD', message: 'At most 10 files per upload' },
  FST_REQ_FILE_TOO_LARGE: { status: 400, code: 'LIMIT_FILE_SIZE', message: 'A file is larger than any upload allows (250 MB)' },
  FST_PARTS_LIMIT: { status: 400, code: 'LIMIT_PARTS', message: 'Too many parts in the upload' },
  FST_FIELDS_LIMIT: { status: 400, code: 'LIMIT_FIELDS', message: 'Too many fields in the upload' },
  FST_INVALID_MULTIPART_CONTENT_TYPE: { status: 415, code: 'UNSUPPORTED_MEDIA_TYPE', message: 'Send multipart/form-data' },
  FST_MP_PREMATURE_CLOSE: { status: 400, code: 'UPLOAD_INCOMPLETE', message: 'The upload ended early' },
};

export function installErrorHandling(app: FastifyInstance): void {
  app.setNotFoundHandler((request, reply) => sendError(request, reply, 404, 'NOT_FOUND', `No route ${request.method} ${request.url.split('?')[0]}`));

  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof AppError) {
      if (error.status >= 500) request.log.error({ err: error.cause ?? error, code: error.code }, 'dependency failure');
      if (error.headers) reply.headers(error.headers);
      return sendError(request, reply, error.status, error.code, error.message, error.details, (error as AppError & { extra?: Record<string, string> }).extra);
    }
    if (hasZodFastifySchemaValidationErrors(error)) {
      const details = error.validation.map((issue) => ({
        in: error.validationContext,
        field: issue.instancePath.replace(/^\//, '').replaceAll('/', '.') || (issue.params as { issue?: { path?: unknown[] } }).issue?.path?.join('.') || '',
        message: issue.message,
      }));
      return sendError(request, reply, 400, 'VALIDATION_FAILED', `Invalid ${error.validationContext ?? 'request'}`, details);
    }
    const known = error.code ? FASTIFY_CODES[error.code] : undefined;
    if (known) return sendError(request, reply, known.status, known.code, known.message);
    if (error.validation) {
      return sendError(request, reply, 400, 'VALIDATION_FAILED', error.message);
    }
    if (typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500) {
      return sendError(request, reply, error.statusCode, 'BAD_REQUEST', error.message);
    }
    request.log.error({ err: error }, 'unhandled error');
    return sendError(request, reply, 500, 'INTERNAL_ERROR', 'Unexpected server error');
  });
}

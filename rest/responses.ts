import type { z } from 'zod';
import { AuthErrors } from '../src/auth/auth.errors.js';
import { DevicesErrors } from '../src/devices/devices.errors.js';
import { AttachmentsErrors } from '../src/attachments/attachments.errors.js';
import { CommonErrors } from '../src/platform/common.errors.js';
import type { CodedError } from '../src/platform/errors.js';
import { ErrorResponseSchema } from '../src/platform/common.schemas.js';

const DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid request, or the referenced entity does not exist or is not accessible',
  401: 'Access token missing, expired, invalid or revoked',
  403: 'Forbidden',
  404: 'Not found',
  409: 'Conflict',
  413: 'Request body too large',
  415: 'Unsupported content type',
  416: 'Range not satisfiable',
  429: 'Too many requests; see the Retry-After header',
  500: 'Unexpected server error',
  503: 'A dependency is unavailable; try again shortly (see Retry-After when given)',
};

/** Codes any operation may answer: validation and the framework's own refusals, the 500, and the 503s while MongoDB or Redis is away (rest/dependencies.ts). */
const ALWAYS = [CommonErrors.VALIDATION_FAILED, CommonErrors.BAD_URL, CommonErrors.BAD_REQUEST, CommonErrors.INTERNAL_ERROR, CommonErrors.DATABASE_UNAVAILABLE, CommonErrors.REDIS_UNAVAILABLE];
/** Codes of a route behind the access token. */
const AUTHED = [CommonErrors.UNAUTHORIZED, AuthErrors.TOKEN_EXPIRED, DevicesErrors.DEVICE_REVOKED];
/** Codes of a route that takes a JSON body. */
export const BODY_ERRORS = [CommonErrors.MALFORMED_JSON, CommonErrors.INVALID_CONTENT_LENGTH, CommonErrors.PAYLOAD_TOO_LARGE, CommonErrors.UNSUPPORTED_MEDIA_TYPE] as const;

/** Codes of a multipart upload route: the parser's limits and refusals (each route adds its own size codes). */
export const MULTIPART_ERRORS = [
  AttachmentsErrors.LIMIT_FILES_PER_UPLOAD,
  AttachmentsErrors.LIMIT_PARTS,
  AttachmentsErrors.LIMIT_FIELDS,
  AttachmentsErrors.UPLOAD_INCOMPLETE,
  CommonErrors.PAYLOAD_TOO_LARGE,
  CommonErrors.UNSUPPORTED_MEDIA_TYPE,
  CommonErrors.MULTIPART_INVALID,
] as const;

/** The codes documented by each response schema this module made: what `sendError` checks in tests. */
const documented = new WeakMap<object, ReadonlySet<string>>();

/** The error codes an operation documents for a status, when its schema came from here. */
export function documentedCodes(schema: unknown): ReadonlySet<string> | undefined {
  return typeof schema === 'object' && schema !== null ? documented.get(schema) : undefined;
}

/**
 * ErrorResponse answers for a route's OpenAPI entry, one per status, each naming the codes the
 * operation can answer with it: the ones given, and those every operation may answer.
 */
export function errorResponses(...codes: CodedError[]): Record<number, z.ZodType> {
  const byStatus = new Map<number, Set<string>>();
  for (const error of [...ALWAYS, ...codes]) {
    const set = byStatus.get(error.status) ?? new Set<string>();
    set.add(error.code);
    byStatus.set(error.status, set);
  }
  const entries = [...byStatus.entries()].sort(([a], [b]) => a - b);
  return Object.fromEntries(
    entries.map(([status, set]) => {
      const schema = ErrorResponseSchema.describe(`${DESCRIPTIONS[status] ?? 'Error'}. Codes: ${[...set].sort().join(', ')}.`);
      documented.set(schema, set);
      return [status, schema];
    }),
  );
}

/** Errors of a route behind the access token. */
export function authedErrors(...codes: CodedError[]) {
  return errorResponses(...AUTHED, ...codes);
}

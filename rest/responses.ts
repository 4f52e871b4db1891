import { ErrorResponseSchema } from '../src/platform/common.schemas.js';

const DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid request, or the referenced entity does not exist or is not accessible',
  401: 'Access token missing, expired, invalid or revoked',
  403: 'Forbidden',
  409: 'Conflict',
  413: 'Request body too large',
  415: 'Unsupported content type (send application/json)',
  429: 'Too many requests; see the Retry-After header',
  500: 'Unexpected server error',
  503: 'A dependency (such as the SMS provider) is unavailable; try again shortly',
};

/**
 * ErrorResponse answers for a route's OpenAPI entry: 400 and 500 always (the spec lets every endpoint
 * answer them), plus the statuses given.
 */
export function errorResponses(...statuses: number[]) {
  const all = [...new Set([400, 500, ...statuses])].sort();
  return Object.fromEntries(all.map((status) => [status, ErrorResponseSchema.describe(DESCRIPTIONS[status] ?? 'Error')]));
}

/** Errors of a route behind the access token, with a JSON body when `withBody`. */
export function authedErrors(...statuses: number[]) {
  return errorResponses(401, ...statuses);
}

export const BODY_ERRORS = [413, 415] as const;

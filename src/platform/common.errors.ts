import { defineErrors } from './errors.js';

/** Codes of the HTTP layer and of inputs every area shares. */
export const CommonErrors = defineErrors('common', {
  VALIDATION_FAILED: { status: 400, message: 'Invalid request' },
  IDEMPOTENCY_KEY_INVALID: { status: 400, message: 'An Idempotency-Key has 1 to 255 visible ASCII characters' },
  IDEMPOTENCY_KEY_REUSED: { status: 400, message: 'This Idempotency-Key was used for another request' },
  IDEMPOTENCY_KEY_IN_USE: { status: 409, message: 'The first request with this Idempotency-Key is still running; try again shortly' },
  IDEMPOTENCY_ANSWER_NOT_KEPT: { status: 409, message: 'The first answer under this Idempotency-Key showed a secret, which is shown once and never kept: look up what it made instead' },
  MALFORMED_JSON: { status: 400, message: 'The body is not valid JSON' },
  INVALID_CONTENT_LENGTH: { status: 400, message: 'Content-Length does not match the body' },
  BAD_URL: { status: 400, message: 'The request URL is not valid' },
  BAD_REQUEST: { status: 400, message: 'The request is not valid' },
  MULTIPART_INVALID: { status: 400, message: 'The multipart/form-data body is malformed' },
  PHONE_INVALID: { status: 400, message: 'Expected a valid phone number in international format, such as +14155550123' },
  UNAUTHORIZED: { status: 401, message: 'A valid access token is required' },
  NOT_FOUND: { status: 404, message: 'No such route' },
  METHOD_NOT_ALLOWED: { status: 405, message: 'The path does not take this method' },
  PAYLOAD_TOO_LARGE: { status: 413, message: 'The request body is too large' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, message: 'Unsupported content type; send application/json' },
  INTERNAL_ERROR: { status: 500, message: 'Unexpected server error' },
  PHONE_COUNTRY_NOT_ALLOWED: { status: 400, message: 'Texts cannot be sent to this number' },
  BUSY: { status: 503, message: 'The service is busy; try again shortly' },
  TOO_MANY_CODES: { status: 429, message: 'Too many codes were requested for this number; try again later' },
  SMS_UNAVAILABLE: { status: 503, message: 'The text message could not be sent right now; try again shortly' },
  DATABASE_UNAVAILABLE: { status: 503, message: 'The database does not answer right now; try again shortly' },
  REDIS_UNAVAILABLE: { status: 503, message: 'The service\'s shared memory (Redis) does not answer right now; try again shortly' },
  NOT_READY: { status: 503, message: 'A dependency does not answer' },
});

/** One entry of an error body's `details` (VALIDATION_FAILED names the field; other codes add fields of their own). */
export interface ErrorDetail {
  field?: string;
  message?: string;
  [more: string]: unknown;
}

/**
 * The service refused a request: `status` is the HTTP status, `code` the stable code of the error
 * catalogue (`VALIDATION_FAILED`, `ROOM_NOT_FOUND`, …; docs/reference/errors.md), as the error body says.
 */
export class ApiError extends Error {
  override readonly name = 'ApiError';

  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: ErrorDetail[] = [],
    /** Seconds the service asked to wait (`Retry-After`), when it said. */
    readonly retryAfter: number | null = null,
  ) {
    super(message);
  }

  /** The error an answer carries (its coded JSON body; a body that is not one keeps the status). */
  static async of(response: Response): Promise<ApiError> {
    const retryAfter = retryAfterOf(response);
    const body = (await response.json().catch(() => null)) as { code?: unknown; message?: unknown; details?: unknown } | null;
    const code = typeof body?.code === 'string' ? body.code : `HTTP_${response.status}`;
    const message = typeof body?.message === 'string' ? body.message : response.statusText || code;
    return new ApiError(response.status, code, message, Array.isArray(body?.details) ? (body.details as ErrorDetail[]) : [], retryAfter);
  }
}

/** The session is over: signed out here or elsewhere, the device revoked, or its refresh token reused. */
export class SignedOutError extends Error {
  override readonly name = 'SignedOutError';

  constructor(readonly reason: string) {
    super(`Signed out: ${reason}`);
  }
}

/** The service could not be reached (no network, a timeout) after every retry. */
export class OfflineError extends Error {
  override readonly name = 'OfflineError';

  constructor(readonly cause: unknown) {
    super(`The service could not be reached: ${cause instanceof Error ? cause.message : String(cause)}`);
  }
}

/** `Retry-After` in seconds (a number of seconds or an HTTP date), or null. */
export function retryAfterOf(response: Response): number | null {
  const header = response.headers.get('retry-after');
  if (!header) return null;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds);
  const at = Date.parse(header);
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}

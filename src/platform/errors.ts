/** Every failure a client may see: an HTTP status and a stable upper-snake code. */
export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown[],
    readonly headers?: Record<string, string>,
    cause?: unknown,
  ) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'AppError';
  }
}

/** Fields added to this error's ErrorResponse body (e.g. `error` of the speech-to-text answer). */
export function withBody<T extends AppError>(error: T, extra: Record<string, string>): T & { extra: Record<string, string> } {
  return Object.assign(error, { extra });
}

export const badRequest = (code: string, message: string, details?: unknown[]) => new AppError(400, code, message, details);

export const unauthorized = (code = 'UNAUTHORIZED', message = 'A valid access token is required') => new AppError(401, code, message);

export const forbidden = (code: string, message: string) => new AppError(403, code, message);

export const conflict = (code: string, message: string) => new AppError(409, code, message);

export const tooManyRequests = (code: string, message: string, retryAfterSeconds: number) =>
  new AppError(429, code, message, undefined, { 'retry-after': String(Math.max(1, Math.ceil(retryAfterSeconds))) });
